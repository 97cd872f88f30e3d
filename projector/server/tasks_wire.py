"""The Tasks extension (SEP-2663) on the wire, for both frameworks: the three methods and the ``tools/call`` rule.

mcp's MCPServer and FastMCP both serve an extension as a set of new request methods, each handed mcp's low-level
``ServerRequestContext``, plus one ``tools/call`` interceptor; only the classes differ. What the methods and the
interceptor do is here, once, over :class:`projector.server.tasks.Tasks`; each adapter wraps it in its framework's
extension class.

Each of them also reads who is asking (:func:`owner`): the authenticated principal that mcp's auth middleware put on
the HTTP request (both frameworks use it), as mcp itself names it for a session's owner and for ``requestState``
(:func:`mcp.server.auth.provider.principal_components`: the token's client, issuer and subject), kept as a digest.
A task made by one principal is unknown to every other. Without authentication there is no principal, and a task is
its id's bearer's.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from mcp_types import RequestParams
from pydantic import BaseModel, ConfigDict, Field

from .tasks import Tasks, check_name_header, declared, missing_capability


class TaskParams(RequestParams):
    """``tasks/get``, ``tasks/cancel``: the task id (checked by :class:`Tasks`, -32602 when unknown)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)
    task_id: Any = Field(default=None, alias="taskId")


class UpdateParams(TaskParams):
    """``tasks/update``: the task id and the answers by input request id."""

    input_responses: dict[str, Any] | None = Field(default=None, alias="inputResponses")


class WireResult(BaseModel):
    """A result as the Tasks extension shapes it (already wire JSON), which a framework serializes as it is."""

    model_config = ConfigDict(extra="allow")


def _meta(ctx: Any) -> Mapping[str, Any] | None:
    params = getattr(ctx, "params", None)
    meta = params.get("_meta") if isinstance(params, Mapping) else None
    return meta if isinstance(meta, Mapping) else None


def _capabilities(ctx: Any) -> Any:
    session = getattr(ctx, "session", None)
    return getattr(session, "client_capabilities", None)


def _headers(ctx: Any) -> Mapping[str, str] | None:
    headers = getattr(getattr(ctx, "request", None), "headers", None)
    return headers if isinstance(headers, Mapping) else None


OWNER_LABEL = b"projector/task-owner:"  # a digest of this purpose only, never equal to another use of the same JSON


def _access_token(ctx: Any) -> Any:
    """The access token the request was authenticated with: from the HTTP request (where mcp's and FastMCP's auth
    middleware put the user), else from mcp's auth context of this request; None without authentication."""
    from mcp.server.auth.middleware.auth_context import get_access_token
    from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser

    scope = getattr(getattr(ctx, "request", None), "scope", None)
    user = scope.get("user") if isinstance(scope, Mapping) else None
    if isinstance(user, AuthenticatedUser):
        return user.access_token
    return get_access_token()


def owner(ctx: Any) -> str | None:
    """The digest of the authenticated principal making the request (mcp's: client, issuer, subject), or None when
    the request carries none. Only the digest is kept with a task, never the token."""
    from mcp.server.auth.provider import principal_components

    token = _access_token(ctx)
    if token is None:
        return None
    principal = json.dumps(principal_components(token), separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(OWNER_LABEL + principal.encode("utf-8", "surrogatepass")).hexdigest()


def client_declared(ctx: Any) -> bool:
    """Whether the request's client declared the Tasks extension (for the session or for this request)."""
    return declared(_meta(ctx), _capabilities(ctx))


def method_handlers(tasks: Tasks) -> list[tuple[str, type[BaseModel], Callable[[Any, Any], Awaitable[Any]]]]:
    """``tasks/get``, ``tasks/update`` and ``tasks/cancel``: gated on the extension (-32021), the ``Mcp-Name``
    header checked against the task id over HTTP (-32020), a task of another principal unknown (-32602)."""

    def gate(ctx: Any, params: TaskParams) -> None:
        if not client_declared(ctx):
            raise missing_capability()
        check_name_header(_headers(ctx), str(params.task_id))

    async def get(ctx: Any, params: TaskParams) -> WireResult:
        gate(ctx, params)
        return WireResult(**await tasks.get(params.task_id, owner(ctx)))

    async def update(ctx: Any, params: UpdateParams) -> WireResult:
        gate(ctx, params)
        return WireResult(**await tasks.update(params.task_id, params.input_responses, owner(ctx)))

    async def cancel(ctx: Any, params: TaskParams) -> WireResult:
        gate(ctx, params)
        return WireResult(**await tasks.cancel(params.task_id, owner(ctx)))

    return [
        ("tasks/get", TaskParams, get),
        ("tasks/update", UpdateParams, update),
        ("tasks/cancel", TaskParams, cancel),
    ]


async def intercept(
    tasks: Tasks,
    ctx: Any,
    name: str,
    arguments: Mapping[str, Any] | None,
    input_responses: Mapping[str, Any] | None,
    call_next: Callable[[], Awaitable[Any]],
) -> Any:
    """A ``tools/call``: a task for a tool that supports one when the client declared the extension; the plain call
    otherwise, or -32021 for a tool that runs only as a task. A legacy ``task`` param changes nothing."""
    support = tasks.supports.get(name)
    if support is None:
        return await call_next()
    if not client_declared(ctx):
        if support.required:
            raise missing_capability()
        return await call_next()
    answers = {str(k): _plain(v) for k, v in (input_responses or {}).items()}
    if support.gather is not None:
        asked = support.gather(dict(arguments or {}), answers)
        if asked is not None:
            return WireResult(**asked)
    return WireResult(**await tasks.start(name, arguments, answers, owner(ctx)))


def _plain(value: Any) -> Any:
    return value.model_dump(by_alias=True, exclude_none=True, mode="json") if isinstance(value, BaseModel) else value
