"""Real demo tools for the shipped examples, so ``project-skill serve`` runs every workflow end to end.

- refunds (``workflows/refunds.yaml``): an in-memory :class:`RefundStore` with orders, an eligibility policy and a
  refunds ledger; tools ``get_order``, ``check_eligibility``, ``issue_refund`` (plus the read-only ``list_refunds``),
  and the resource template ``docs://refund-policy/{region}``.
- hello-world (``workflows/hello-world.yaml``): ``greet``.
- code-mode (``workflows/code-mode.yaml``): ``query``, read-only SQL over an in-memory SQLite database made from the
  packaged ``demo.sql``, and the resource ``sqlite://demo/schema``.

Tool names, descriptions and annotations are the ones the workflow files declare (a test compares them).

``issue_refund`` deliberately does not apply the eligibility policy: that is ``check_eligibility``'s job, and the
refund workflow's step 3 guidance asks the caller to act on it. A server-side run of the workflow cannot (see
:mod:`projector.server.workflow`), so it refunds an ineligible order, and the ledger shows it.
``workflows/refunds-gated.yaml`` (the prompt ``refund_flow_gated``) states the check as a ``when:`` condition, which
the server-side run enforces: it stops before ``issue_refund`` on an ineligible order.

For other tests and tools: ``server, store = demo_server()`` gives a ready MCPServer and its store;
``store.ledger()`` is the list of refunds issued so far.
"""

from __future__ import annotations

import copy
import json
import math
import sqlite3
from dataclasses import dataclass, field
from datetime import date
from importlib import resources
from pathlib import Path
from typing import Any

from mcp.server.caching import CacheHint
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp_types import ToolAnnotations

from .. import __version__
from . import attach
from .skills import DEFAULT_CACHE, DEFAULT_PAGE_SIZE

# ------------------------------------------------------------------------------------------------------ refunds

TODAY = date(2025, 6, 30)  # the store's fixed "today": the policy must not depend on the clock
REFUND_WINDOW_DAYS = 30
POLICY_CEILING = 1000.0

ORDERS: dict[str, dict[str, Any]] = {
    "A1001": {"id": "A1001", "customer": "Ada Lovelace", "placed_on": "2025-06-20", "status": "delivered",
              "region": "eu", "final_sale": False, "total": 129.0,
              "items": [{"sku": "KB-01", "name": "Mechanical keyboard", "quantity": 1, "price": 89.0},
                        {"sku": "CB-USB", "name": "USB-C cable", "quantity": 2, "price": 20.0}]},
    "A1002": {"id": "A1002", "customer": "Grace Hopper", "placed_on": "2025-06-25", "status": "delivered",
              "region": "us", "final_sale": True, "total": 59.0,
              "items": [{"sku": "HS-05", "name": "Headset (clearance)", "quantity": 1, "price": 59.0}]},
    "A1003": {"id": "A1003", "customer": "Alan Turing", "placed_on": "2025-04-02", "status": "delivered",
              "region": "uk", "final_sale": False, "total": 249.0,
              "items": [{"sku": "MN-27", "name": "27-inch monitor", "quantity": 1, "price": 249.0}]},
    "A1004": {"id": "A1004", "customer": "Hedy Lamarr", "placed_on": "2025-06-10", "status": "refunded",
              "region": "eu", "final_sale": False, "total": 35.5,
              "items": [{"sku": "MS-02", "name": "Wireless mouse", "quantity": 1, "price": 35.5}]},
    "A1005": {"id": "A1005", "customer": "Katherine Johnson", "placed_on": "2025-06-28", "status": "delivered",
              "region": "us", "final_sale": False, "total": 1899.0,
              "items": [{"sku": "WS-99", "name": "Workstation", "quantity": 1, "price": 1899.0}]},
}

POLICIES: dict[str, str] = {
    "eu": ("# Refund policy: European Union\n\n"
           "- Delivered orders can be refunded within 30 days of purchase (EU 14-day withdrawal right included).\n"
           "- Final-sale items cannot be refunded.\n"
           f"- Refunds above {POLICY_CEILING:.2f} need a supervisor's approval.\n"
           "- Refunds go to the original payment method within 14 days.\n"),
    "uk": ("# Refund policy: United Kingdom\n\n"
           "- Delivered orders can be refunded within 30 days of purchase.\n"
           "- Final-sale items cannot be refunded.\n"
           f"- Refunds above {POLICY_CEILING:.2f} need a supervisor's approval.\n"),
    "us": ("# Refund policy: United States\n\n"
           "- Delivered orders can be refunded within 30 days of purchase.\n"
           "- Final-sale (clearance) items cannot be refunded.\n"
           f"- Refunds above {POLICY_CEILING:.2f} need a supervisor's approval.\n"),
}


class DemoError(ToolError, ValueError):
    """A demo tool refused its input; the tool call fails with this message (a ToolError keeps it)."""


@dataclass
class RefundStore:
    """Orders, the eligibility policy and the refunds ledger, in memory. Every instance starts from ``ORDERS``."""

    today: date = TODAY
    window_days: int = REFUND_WINDOW_DAYS
    orders: dict[str, dict[str, Any]] = field(default_factory=lambda: copy.deepcopy(ORDERS))
    refunds: list[dict[str, Any]] = field(default_factory=list)

    def get_order(self, id: str) -> dict[str, Any]:
        if id not in self.orders:
            raise DemoError(f"no order with id {id!r}")
        return copy.deepcopy(self.orders[id])

    def check_eligibility(self, order: dict[str, Any]) -> dict[str, Any]:
        """The policy: delivered, not final sale, not refunded, placed within the window; the store's own record of
        the order wins over what the caller passed."""
        oid = order.get("id")
        record = self.orders.get(oid) if isinstance(oid, str) else None
        if record is None:
            raise DemoError(f"no order with id {oid!r}")
        reasons = []
        if record["status"] == "refunded":
            reasons.append("the order was already refunded")
        elif record["status"] != "delivered":
            reasons.append(f"the order is {record['status']}, not delivered")
        if record["final_sale"]:
            reasons.append("final-sale items cannot be refunded")
        age = (self.today - date.fromisoformat(record["placed_on"])).days
        if age > self.window_days:
            reasons.append(f"the order was placed {age} days ago; the refund window is {self.window_days} days")
        result: dict[str, Any] = {"order_id": oid, "eligible": not reasons, "reasons": reasons}
        if not reasons and record["total"] > POLICY_CEILING:
            result["needs_approval"] = True
            result["reasons"] = [f"the total is above the {POLICY_CEILING:.2f} ceiling; a supervisor must approve"]
        return result

    def issue_refund(self, order_id: str, amount: float) -> dict[str, Any]:
        """Refunds money. It checks only that the refund is possible at all, not the policy."""
        record = self.orders.get(order_id)
        if record is None:
            raise DemoError(f"no order with id {order_id!r}")
        if record["status"] == "refunded":
            raise DemoError(f"order {order_id} was already refunded")
        if not 0 < amount <= record["total"]:
            raise DemoError(f"the amount {amount} must be more than 0 and at most the order total {record['total']}")
        record["status"] = "refunded"
        refund = {"refund_id": f"R{len(self.refunds) + 1:04d}", "order_id": order_id, "amount": amount,
                  "status": "issued"}
        self.refunds.append(refund)
        return copy.deepcopy(refund)

    def ledger(self) -> list[dict[str, Any]]:
        """Every refund issued so far, oldest first."""
        return copy.deepcopy(self.refunds)


# ------------------------------------------------------------------------------------------------------ the database

MAX_ROWS = 200
MAX_BYTES = 256 * 1024  # of the rows, as JSON: the most one answer carries
MAX_VALUE_BYTES = 64 * 1024  # SQLite refuses to make a longer string or blob, so no query builds a huge one
MAX_COLUMNS = 100  # with MAX_VALUE_BYTES, bounds what one row can hold in memory before it is measured
MAX_STEPS = 2_000_000  # SQLite VM instructions per query, so a runaway query cannot hang the server

_ALLOWED = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE}


class DemoDatabase:
    """The demo shop, in memory, readable only: a SQLite authorizer refuses everything but reads, and
    ``PRAGMA query_only`` is on as a second lock."""

    def __init__(self) -> None:
        sql = resources.files("projector.server").joinpath("demo.sql").read_text("utf-8")
        self.conn = sqlite3.connect(":memory:", check_same_thread=False)
        self.conn.executescript(sql)
        self.conn.execute("PRAGMA query_only = ON")
        self.conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
        self.conn.setlimit(sqlite3.SQLITE_LIMIT_COLUMN, MAX_COLUMNS)
        self.schema = ";\n\n".join(row[0] for row in self.conn.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'table' ORDER BY name")) + ";\n"
        self.conn.set_authorizer(self._authorize)

    @staticmethod
    def _authorize(action: int, *_: Any) -> int:
        return sqlite3.SQLITE_OK if action in _ALLOWED else sqlite3.SQLITE_DENY

    def query(self, sql: str) -> dict[str, Any]:
        """The rows of one SELECT: at most :data:`MAX_ROWS` rows and :data:`MAX_BYTES` bytes of them (as JSON).
        When it stops early, ``truncated`` is true and ``note`` says which limit stopped it."""
        steps = 0

        def budget() -> int:
            nonlocal steps
            steps += 1
            return 1 if steps > MAX_STEPS // 1000 else 0

        self.conn.set_progress_handler(budget, 1000)
        try:
            cur = self.conn.execute(sql)
            columns = [d[0] for d in cur.description or ()]
            rows, note = _take_rows(cur)
        except sqlite3.DatabaseError as exc:
            msg = str(exc)
            if "not authorized" in msg:
                msg = "only a single read-only SELECT statement is allowed (not authorized)"
            elif "interrupted" in msg:
                msg = "the query ran too long and was stopped"
            elif "too big" in msg:
                msg = f"a value would be longer than {MAX_VALUE_BYTES} bytes (string or blob too big)"
            elif "too many columns" in msg:
                msg = f"more than {MAX_COLUMNS} columns (too many columns)"
            raise DemoError(f"query failed: {msg}") from None
        except (sqlite3.Warning, ValueError) as exc:  # e.g. more than one statement
            raise DemoError(f"query failed: {exc}") from None
        finally:
            self.conn.set_progress_handler(None, 0)
        out: dict[str, Any] = {"columns": columns, "rows": rows, "row_count": len(rows), "truncated": note is not None}
        if note is not None:
            out["note"] = note
        return out


def _cell(value: Any) -> Any:
    """A SQLite value as JSON: a blob as its SQL hex literal, a non-finite float as text."""
    if isinstance(value, bytes):
        return f"X'{value.hex().upper()}'"
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def _take_rows(cur: sqlite3.Cursor) -> tuple[list[list[Any]], str | None]:
    """Rows from ``cur`` one at a time, until :data:`MAX_ROWS` rows or :data:`MAX_BYTES` bytes; and why it
    stopped early (None when every row fit)."""
    rows: list[list[Any]] = []
    size = 2  # the brackets of the list
    for raw in iter(cur.fetchone, None):
        if len(rows) == MAX_ROWS:
            return rows, f"truncated: more than {MAX_ROWS} rows; only the first {MAX_ROWS} are shown"
        row = [_cell(v) for v in raw]
        size += len(json.dumps(row, ensure_ascii=False).encode("utf-8")) + 1
        if size > MAX_BYTES:
            return rows, (f"truncated: the rows would take more than {MAX_BYTES} bytes; only the first "
                          f"{len(rows)} are shown")
        rows.append(row)
    return rows, None


# ---------------------------------------------------------------------------------------------------- the server

def add_demo_tools(server: Any, store: RefundStore | None = None,
                   db: DemoDatabase | None = None) -> tuple[RefundStore, DemoDatabase]:
    """Register the demo tools and resources on ``server`` (an MCPServer or a FastMCP); returns the store and
    database they use."""
    store = store or RefundStore()
    db = db or DemoDatabase()

    async def get_order(id: str) -> dict[str, Any]:
        return store.get_order(id)

    async def check_eligibility(order: dict[str, Any]) -> dict[str, Any]:
        return store.check_eligibility(order)

    async def issue_refund(order_id: str, amount: float) -> dict[str, Any]:
        return store.issue_refund(order_id, amount)

    async def list_refunds() -> list[dict[str, Any]]:
        return store.ledger()

    async def greet(name: str) -> str:
        return f"Hello, {name}!"

    async def query(sql: str) -> dict[str, Any]:
        return db.query(sql)

    read_only = ToolAnnotations(read_only_hint=True)
    # MCPServer.add_tool(fn, name=...) and FastMCP.tool(fn, name=...) take the same keywords
    add = server.add_tool if isinstance(server, MCPServer) else server.tool
    add(get_order, name="get_order", description="Look up an order by id.", annotations=read_only)
    add(check_eligibility, name="check_eligibility",
        description="Decide whether an order can be refunded under the policy.", annotations=read_only)
    add(issue_refund, name="issue_refund", description="Refund an order to the original payment method.",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True))
    add(list_refunds, name="list_refunds", description="List the refunds issued so far, oldest first.",
        annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True))
    add(greet, name="greet", description="Return a friendly greeting for a name.",
        annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True))
    add(query, name="query",
        description="Run one read-only SQL SELECT statement against the embedded SQLite demo database "
                    "and return the rows.",
        annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False))

    def schema() -> str:
        return db.schema

    def refund_policy(region: str) -> str:
        if region not in POLICIES:
            raise ResourceNotFoundError(f"no refund policy for region {region!r}; regions: "
                                        f"{', '.join(sorted(POLICIES))}")
        return POLICIES[region]

    server.resource("sqlite://demo/schema", name="demo-schema", mime_type="application/sql",
                    description="The demo shop database's schema (CREATE TABLE statements).")(schema)
    server.resource("docs://refund-policy/{region}", name="refund-policy", mime_type="text/markdown",
                    description="The refund policy of a region (eu, uk, us).")(refund_policy)
    return store, db


FRAMEWORKS = ("mcp", "fastmcp")
INSTRUCTIONS = ("Demo server for projector: the shipped example skills (SEP-2640), their workflows as prompts, and "
                "real demo tools.")


def demo_server(skills: str | Path | None = "generated_skills", workflows: str | Path | None = "workflows", *,
                page_size: int = DEFAULT_PAGE_SIZE, cache: CacheHint = DEFAULT_CACHE,
                name: str = "projector-demo", framework: str = "mcp") -> tuple[Any, RefundStore]:
    """The server ``project-skill serve`` runs: demo tools, then :func:`projector.server.attach`.

    ``framework="fastmcp"`` builds the same demo on a ``fastmcp.FastMCP`` (the ``project-skill[fastmcp]`` extra), with
    ``page_size`` as the server's ``list_page_size``.
    """
    if framework == "fastmcp":
        from fastmcp import FastMCP

        fserver: Any = FastMCP(name, instructions=INSTRUCTIONS, version=__version__, list_page_size=page_size)
        store, _ = add_demo_tools(fserver)
        attach(fserver, skills, workflows, page_size=page_size, cache=cache)
        return fserver, store
    if framework != "mcp":
        raise ValueError(f"unknown framework {framework!r}; choose one of {', '.join(FRAMEWORKS)}")
    server: MCPServer = MCPServer(name, version=__version__, instructions=INSTRUCTIONS)
    store, _ = add_demo_tools(server)
    attach(server, skills, workflows, page_size=page_size, cache=cache)
    return server, store
