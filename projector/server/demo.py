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

For other tests and tools: ``server, store = demo_server()`` gives a ready server (mcp's MCPServer unless
``framework=`` names another of :mod:`projector.server.adapters`) and its store;
``store.ledger()`` is the list of refunds issued so far.
"""

from __future__ import annotations

import copy
import json
import math
import os
import signal
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from importlib import resources
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from mcp.server.caching import CacheHint
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp_types import ToolAnnotations

from .. import __version__
from . import adapters
from .attaching import attach
from .replay import ReplayGuard
from .demo_printf import printf_sizes
from .skills import DEFAULT_CACHE, DEFAULT_PAGE_SIZE

# ------------------------------------------------------------------------------------------------------ refunds

TODAY = date(2025, 6, 30)  # the store's fixed "today": the policy must not depend on the clock
REFUND_WINDOW_DAYS = 30
POLICY_CEILING = 1000.0

ORDERS: dict[str, dict[str, Any]] = {
    "A1001": {
        "id": "A1001",
        "customer": "Ada Lovelace",
        "placed_on": "2025-06-20",
        "status": "delivered",
        "region": "eu",
        "final_sale": False,
        "total": 129.0,
        "items": [
            {"sku": "KB-01", "name": "Mechanical keyboard", "quantity": 1, "price": 89.0},
            {"sku": "CB-USB", "name": "USB-C cable", "quantity": 2, "price": 20.0},
        ],
    },
    "A1002": {
        "id": "A1002",
        "customer": "Grace Hopper",
        "placed_on": "2025-06-25",
        "status": "delivered",
        "region": "us",
        "final_sale": True,
        "total": 59.0,
        "items": [{"sku": "HS-05", "name": "Headset (clearance)", "quantity": 1, "price": 59.0}],
    },
    "A1003": {
        "id": "A1003",
        "customer": "Alan Turing",
        "placed_on": "2025-04-02",
        "status": "delivered",
        "region": "uk",
        "final_sale": False,
        "total": 249.0,
        "items": [{"sku": "MN-27", "name": "27-inch monitor", "quantity": 1, "price": 249.0}],
    },
    "A1004": {
        "id": "A1004",
        "customer": "Hedy Lamarr",
        "placed_on": "2025-06-10",
        "status": "refunded",
        "region": "eu",
        "final_sale": False,
        "total": 35.5,
        "items": [{"sku": "MS-02", "name": "Wireless mouse", "quantity": 1, "price": 35.5}],
    },
    "A1005": {
        "id": "A1005",
        "customer": "Katherine Johnson",
        "placed_on": "2025-06-28",
        "status": "delivered",
        "region": "us",
        "final_sale": False,
        "total": 1899.0,
        "items": [{"sku": "WS-99", "name": "Workstation", "quantity": 1, "price": 1899.0}],
    },
}

POLICIES: dict[str, str] = {
    "eu": (
        "# Refund policy: European Union\n\n"
        "- Delivered orders can be refunded within 30 days of purchase (EU 14-day withdrawal right included).\n"
        "- Final-sale items cannot be refunded.\n"
        f"- Refunds above {POLICY_CEILING:.2f} need a supervisor's approval.\n"
        "- Refunds go to the original payment method within 14 days.\n"
    ),
    "uk": (
        "# Refund policy: United Kingdom\n\n"
        "- Delivered orders can be refunded within 30 days of purchase.\n"
        "- Final-sale items cannot be refunded.\n"
        f"- Refunds above {POLICY_CEILING:.2f} need a supervisor's approval.\n"
    ),
    "us": (
        "# Refund policy: United States\n\n"
        "- Delivered orders can be refunded within 30 days of purchase.\n"
        "- Final-sale (clearance) items cannot be refunded.\n"
        f"- Refunds above {POLICY_CEILING:.2f} need a supervisor's approval.\n"
    ),
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
    path: Path | None = None  # where the orders and the ledger are kept across restarts (serve --state DIR)

    def __post_init__(self) -> None:
        self._load()

    def _load(self) -> None:
        """The orders and the ledger as kept, read again before each use: another process may have changed them."""
        if self.path is not None and self.path.exists():
            kept = json.loads(self.path.read_text("utf-8"))
            self.orders, self.refunds = kept["orders"], kept["refunds"]

    def _keep(self) -> None:
        if self.path is not None:
            part = self.path.with_name(self.path.name + ".part")
            part.write_text(json.dumps({"orders": self.orders, "refunds": self.refunds}, sort_keys=True), "utf-8")
            os.replace(part, self.path)

    def get_order(self, id: str) -> dict[str, Any]:
        self._load()
        if id not in self.orders:
            raise DemoError(f"no order with id {id!r}")
        return copy.deepcopy(self.orders[id])

    def check_eligibility(self, order: dict[str, Any]) -> dict[str, Any]:
        """The policy: delivered, not final sale, not refunded, placed within the window; the store's own record of
        the order wins over what the caller passed."""
        self._load()
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
        self._load()
        record = self.orders.get(order_id)
        if record is None:
            raise DemoError(f"no order with id {order_id!r}")
        if record["status"] == "refunded":
            raise DemoError(f"order {order_id} was already refunded")
        if not 0 < amount <= record["total"]:
            raise DemoError(f"the amount {amount} must be more than 0 and at most the order total {record['total']}")
        record["status"] = "refunded"
        refund = {
            "refund_id": f"R{len(self.refunds) + 1:04d}",
            "order_id": order_id,
            "amount": amount,
            "status": "issued",
        }
        self.refunds.append(refund)
        self._keep()
        return copy.deepcopy(refund)

    def ledger(self) -> list[dict[str, Any]]:
        """Every refund issued so far, oldest first."""
        self._load()
        return copy.deepcopy(self.refunds)


# ------------------------------------------------------------------------------------------------------ the database

MAX_ROWS = 200
MAX_BYTES = 256 * 1024  # of the rows, as JSON: the most one answer carries
MAX_VALUE_BYTES = 64 * 1024  # SQLite refuses to make a longer string or blob, so no query builds a huge one
MAX_COLUMNS = 100  # with MAX_VALUE_BYTES, bounds what one row can hold in memory before it is measured
MAX_STEPS = 2_000_000  # SQLite VM instructions per query, so a runaway query cannot hang the server
MAX_SECONDS = 5.0  # and a deadline, for steps that each take long
_CHECK_EVERY = 1000  # VM instructions between two checks of the budget and the deadline

_ALLOWED = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE}
_TOO_BIG = f"a value would be longer than {MAX_VALUE_BYTES} bytes"


class _Refused(Exception):
    """Raised inside a SQL function; the query fails with ``reason``."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class DemoDatabase:
    """The demo shop, in memory, readable only: a SQLite authorizer refuses everything but reads, and
    ``PRAGMA query_only`` is on as a second lock.

    What one query may cost is bounded: :data:`MAX_STEPS` VM instructions and :data:`MAX_SECONDS` (by ``clock``),
    checked every thousand instructions; no value longer than :data:`MAX_VALUE_BYTES`; rows as in :meth:`query`.
    The VM checks nothing while one function call runs, so the one built-in function whose single call can run for
    long, ``printf`` (alias ``format``: ``printf('%.*c', 2147483647, 'x')`` appends one character two billion times,
    each refused by the length limit), is replaced by one that refuses any width or precision above
    :data:`MAX_VALUE_BYTES` (no field can be longer than a value) and then calls the built-in. Queries run one at a
    time (the connection is shared); the server runs them off its event loop (see :func:`add_demo_tools`)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        sql = resources.files("projector.server").joinpath("demo.sql").read_text("utf-8")
        self.clock = clock
        self.lock = threading.Lock()
        self.conn = _connect()
        self.conn.executescript(sql)
        self.conn.execute("PRAGMA query_only = ON")
        self.schema = (
            ";\n\n".join(
                row[0] for row in self.conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' ORDER BY name")
            )
            + ";\n"
        )
        self._builtin = _connect()  # no tables: where the checked printf calls the built-in one
        self._refusal: str | None = None
        for name in ("printf", "format"):
            self.conn.create_function(name, -1, self._printf, deterministic=True)
        self.conn.set_authorizer(self._authorize)

    @staticmethod
    def _authorize(action: int, *_: Any) -> int:
        return sqlite3.SQLITE_OK if action in _ALLOWED else sqlite3.SQLITE_DENY

    def _as_int(self, value: Any) -> int:
        """``value`` as SQLite reads an integer argument (``sqlite3_value_int64``); a non-finite float counts as
        too big."""
        if value is None:
            return 0
        if isinstance(value, int):
            return value
        if isinstance(value, float):
            return int(value) if math.isfinite(value) else MAX_VALUE_BYTES + 1
        return int(self._builtin.execute("SELECT CAST(? AS INTEGER)", (value,)).fetchone()[0] or 0)

    def _printf(self, fmt: Any, *args: Any) -> Any:
        try:
            text = fmt.decode("utf-8", "replace") if isinstance(fmt, bytes) else fmt
            if isinstance(text, str):
                for size in printf_sizes(text, args, self._as_int):
                    if size > MAX_VALUE_BYTES:
                        raise _Refused(f"{_TOO_BIG} (a printf width or precision of {size})")
            marks = ", ".join("?" * (1 + len(args)))
            value = self._builtin.execute(f"SELECT printf({marks})", (fmt, *args)).fetchone()[0]
            if value is None and fmt is not None:  # the built-in gives NULL when the result would be too long
                raise _Refused(f"{_TOO_BIG} (string or blob too big)")
            return value
        except _Refused as exc:
            self._refusal = exc.reason
            raise
        except sqlite3.Error as exc:
            self._refusal = str(exc)
            raise

    def query(self, sql: str) -> dict[str, Any]:
        """The rows of one SELECT: at most :data:`MAX_ROWS` rows and :data:`MAX_BYTES` bytes of them (as JSON).
        When it stops early, ``truncated`` is true and ``note`` says which limit stopped it."""
        with self.lock:
            return self._query(sql)

    def _query(self, sql: str) -> dict[str, Any]:
        checks = 0
        deadline = self.clock() + MAX_SECONDS
        stopped: list[str] = []

        def budget() -> int:
            nonlocal checks
            checks += 1
            if checks > MAX_STEPS // _CHECK_EVERY:
                stopped.append(f"more than {MAX_STEPS} steps")
            elif self.clock() > deadline:
                stopped.append(f"more than {MAX_SECONDS:g} s")
            return 1 if stopped else 0

        self._refusal = None
        self.conn.set_progress_handler(budget, _CHECK_EVERY)
        try:
            cur = self.conn.execute(sql)
            columns = [d[0] for d in cur.description or ()]
            rows, note = _take_rows(cur)
        except sqlite3.DatabaseError as exc:
            msg = str(exc)
            if self._refusal is not None:
                msg = self._refusal
            elif "not authorized" in msg:
                msg = "only a single read-only SELECT statement is allowed (not authorized)"
            elif "interrupted" in msg:
                msg = f"the query ran too long and was stopped ({stopped[0] if stopped else 'interrupted'})"
            elif "too big" in msg:
                msg = f"{_TOO_BIG} (string or blob too big)"
            elif "too many columns" in msg:
                msg = f"more than {MAX_COLUMNS} columns (too many columns)"
            raise DemoError(f"query failed: {msg}") from None
        except (sqlite3.Warning, ValueError) as exc:  # e.g. more than one statement
            raise DemoError(f"query failed: {exc}") from None
        finally:
            self.conn.set_progress_handler(None, 0)
            self._refusal = None
        out: dict[str, Any] = {"columns": columns, "rows": rows, "row_count": len(rows), "truncated": note is not None}
        if note is not None:
            out["note"] = note
        return out


def _connect() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
    conn.setlimit(sqlite3.SQLITE_LIMIT_COLUMN, MAX_COLUMNS)
    return conn


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
            return rows, (
                f"truncated: the rows would take more than {MAX_BYTES} bytes; only the first {len(rows)} are shown"
            )
        rows.append(row)
    return rows, None


# ---------------------------------------------------------------------------------------------------- the server

CRASH_ENV = "PROJECT_SKILL_DEMO_CRASH"  # a test hook: the process kills itself (SIGKILL) at this point
CALLS_ENV = "PROJECT_SKILL_DEMO_CALLS"  # a test hook: a file where each point reached is appended, one a line
SHOP_ENV = "PROJECT_SKILL_DEMO_SHOP"  # with a Postgres --state: the file the demo shop is kept in (else memory)


async def _crash_test(point: str, subject: Any) -> None:
    """The crash test of durable tasks (``tests/server/test_durable.py``): ``$PROJECT_SKILL_DEMO_CRASH`` names a
    point (``before:issue_refund``, ``after:issue_refund``, ...), for any call or for one order id or region
    (``before:get_order/A1001``), where the demo server dies as a killed one would; ``$PROJECT_SKILL_DEMO_CALLS``
    names a file where every point reached is written (``before:get_order/A1001``), across restarts."""
    journal = os.environ.get(CALLS_ENV)
    if journal:
        with open(journal, "a", encoding="utf-8") as out:
            out.write(f"{point}/{subject}\n")
    if os.environ.get(CRASH_ENV) in (point, f"{point}/{subject}"):
        await anyio.sleep(1)  # the answers already under way go out first (the task's id, to its client)
        os.kill(os.getpid(), signal.SIGKILL)


def add_demo_tools(
    server: Any, store: RefundStore | None = None, db: DemoDatabase | None = None
) -> tuple[RefundStore, DemoDatabase]:
    """Register the demo tools and resources on ``server`` (an MCPServer, a FastMCP: any framework of
    :mod:`projector.server.adapters`); returns the store and database they use."""
    store = store or RefundStore()
    db = db or DemoDatabase()

    async def get_order(id: str) -> dict[str, Any]:
        await _crash_test("before:get_order", id)
        return store.get_order(id)

    async def check_eligibility(order: dict[str, Any]) -> dict[str, Any]:
        await _crash_test("before:check_eligibility", order.get("id"))
        return store.check_eligibility(order)

    async def issue_refund(order_id: str, amount: float) -> dict[str, Any]:
        await _crash_test("before:issue_refund", order_id)
        refund = store.issue_refund(order_id, amount)
        await _crash_test("after:issue_refund", order_id)
        return refund

    async def list_refunds() -> list[dict[str, Any]]:
        return store.ledger()

    async def greet(name: str) -> str:
        return f"Hello, {name}!"

    sql_worker: list[Any] = []

    async def query(sql: str) -> dict[str, Any]:
        # off the event loop, so a slow query holds up only the queries queued behind it (one at a time, through
        # a limiter of its own, so that no other work waits for a thread)
        if not sql_worker:
            sql_worker.append(anyio.CapacityLimiter(1))
        return await anyio.to_thread.run_sync(db.query, sql, limiter=sql_worker[0])

    read_only = ToolAnnotations(read_only_hint=True)
    adapter = adapters.for_server(server)

    def add(fn: Callable[..., Any], **kwargs: Any) -> None:
        adapter.add_tool(server, fn, **kwargs)

    add(get_order, name="get_order", description="Look up an order by id.", annotations=read_only)
    add(
        check_eligibility,
        name="check_eligibility",
        description="Decide whether an order can be refunded under the policy.",
        annotations=read_only,
    )
    add(
        issue_refund,
        name="issue_refund",
        description="Refund an order to the original payment method.",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True),
    )
    add(
        list_refunds,
        name="list_refunds",
        description="List the refunds issued so far, oldest first.",
        annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True),
    )
    add(
        greet,
        name="greet",
        description="Return a friendly greeting for a name.",
        annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True),
    )
    add(
        query,
        name="query",
        description="Run one read-only SQL SELECT statement against the embedded SQLite demo database "
        "and return the rows.",
        annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False),
    )

    def schema() -> str:
        return db.schema

    async def refund_policy(region: str) -> str:
        await _crash_test("before:refund_policy", region)
        if region not in POLICIES:
            raise ResourceNotFoundError(
                f"no refund policy for region {region!r}; regions: {', '.join(sorted(POLICIES))}"
            )
        return POLICIES[region]

    adapter.add_resource(
        server,
        "sqlite://demo/schema",
        schema,
        name="demo-schema",
        mime_type="application/sql",
        description="The demo shop database's schema (CREATE TABLE statements).",
    )
    adapter.add_resource(
        server,
        "docs://refund-policy/{region}",
        refund_policy,
        name="refund-policy",
        mime_type="text/markdown",
        description="The refund policy of a region (eu, uk, us).",
    )
    return store, db


INSTRUCTIONS = (
    "Demo server for projector: the shipped example skills (SEP-2640), their workflows as prompts, and real demo tools."
)


def demo_server(
    skills: str | Path | None = "generated_skills",
    workflows: str | Path | None = "workflows",
    *,
    page_size: int = DEFAULT_PAGE_SIZE,
    cache: CacheHint = DEFAULT_CACHE,
    name: str = "projector-demo",
    framework: str = adapters.DEFAULT,
    skill_tools: bool = False,
    workflow_tools: bool = False,
    replay: ReplayGuard | None = None,
    state: str | Path | None = None,
    tasks: Any = None,
) -> tuple[Any, RefundStore]:
    """The server ``project-skill serve`` runs: demo tools, then :func:`projector.server.attach`.

    ``framework`` names one of :func:`projector.server.adapters.names`: ``"fastmcp"`` builds the same demo on a
    ``fastmcp.FastMCP`` (the ``project-skill[fastmcp]`` extra), with ``page_size`` as the server's
    ``list_page_size``. ``skill_tools``, ``workflow_tools``, ``replay``, ``state`` and ``tasks`` are
    :func:`projector.server.attach`'s; with ``state``, the shop's orders and ledger are kept in that folder too
    (``demo-shop.json``), so that they outlive the process as the tasks do; with a Postgres URL, in the file
    ``$PROJECT_SKILL_DEMO_SHOP`` names (several processes share it), else in memory.
    """
    if framework not in adapters.REGISTRY:
        raise ValueError(f"unknown framework {framework!r}; choose one of {', '.join(adapters.names())}")
    server = adapters.get(framework).make_server(
        name, version=__version__, instructions=INSTRUCTIONS, page_size=page_size
    )
    shop = None
    if state is not None:
        from .durable import _state_dir
        from .durable_pg import looks_like_url

        kept = os.environ.get(SHOP_ENV) if looks_like_url(str(state)) else str(_state_dir(state) / "demo-shop.json")
        shop = RefundStore(path=Path(kept)) if kept else None
    store, _ = add_demo_tools(server, shop)
    attach(
        server,
        skills,
        workflows,
        page_size=page_size,
        cache=cache,
        skill_tools=skill_tools,
        workflow_tools=workflow_tools,
        replay=replay,
        state=state,
        tasks=tasks,
    )
    return server, store
