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
        self.schema = ";\n\n".join(row[0] for row in self.conn.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'table' ORDER BY name")) + ";\n"
        self.conn.set_authorizer(self._authorize)

    @staticmethod
    def _authorize(action: int, *_: Any) -> int:
        return sqlite3.SQLITE_OK if action in _ALLOWED else sqlite3.SQLITE_DENY

    def query(self, sql: str) -> dict[str, Any]:
        steps = 0

        def budget() -> int:
            nonlocal steps
            steps += 1
            return 1 if steps > MAX_STEPS // 1000 else 0

        self.conn.set_progress_handler(budget, 1000)
        try:
            cur = self.conn.execute(sql)
            rows = cur.fetchmany(MAX_ROWS + 1)
        except sqlite3.DatabaseError as exc:
            msg = str(exc)
            if "not authorized" in msg:
                msg = "only a single read-only SELECT statement is allowed (not authorized)"
            elif "interrupted" in msg:
                msg = "the query ran too long and was stopped"
            raise DemoError(f"query failed: {msg}") from None
        except (sqlite3.Warning, ValueError) as exc:  # e.g. more than one statement
            raise DemoError(f"query failed: {exc}") from None
        finally:
            self.conn.set_progress_handler(None, 0)
        columns = [d[0] for d in cur.description or ()]
        return {"columns": columns, "rows": [list(r) for r in rows[:MAX_ROWS]], "row_count": min(len(rows), MAX_ROWS),
                "truncated": len(rows) > MAX_ROWS}


# ---------------------------------------------------------------------------------------------------- the server

def add_demo_tools(server: MCPServer, store: RefundStore | None = None,
                   db: DemoDatabase | None = None) -> tuple[RefundStore, DemoDatabase]:
    """Register the demo tools and resources on ``server``; returns the store and database they use."""
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
    server.add_tool(get_order, name="get_order", description="Look up an order by id.", annotations=read_only)
    server.add_tool(check_eligibility, name="check_eligibility",
                    description="Decide whether an order can be refunded under the policy.", annotations=read_only)
    server.add_tool(issue_refund, name="issue_refund", description="Refund an order to the original payment method.",
                    annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True))
    server.add_tool(list_refunds, name="list_refunds", description="List the refunds issued so far, oldest first.",
                    annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True))
    server.add_tool(greet, name="greet", description="Return a friendly greeting for a name.",
                    annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True))
    server.add_tool(query, name="query",
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


def demo_server(skills: str | Path | None = "generated_skills", workflows: str | Path | None = "workflows", *,
                page_size: int = DEFAULT_PAGE_SIZE, cache: CacheHint = DEFAULT_CACHE,
                name: str = "projector-demo") -> tuple[MCPServer, RefundStore]:
    """The server ``project-skill serve`` runs: demo tools, then :func:`projector.server.attach`."""
    server: MCPServer = MCPServer(name, version=__version__,
                                  instructions="Demo server for projector: the shipped example skills (SEP-2640), "
                                               "their workflows as prompts, and real demo tools.")
    store, _ = add_demo_tools(server)
    attach(server, skills, workflows, page_size=page_size, cache=cache)
    return server, store
