"""The errors the server layer raises on purpose, under the project's one root error."""

from __future__ import annotations

from ..errors import Diagnostic, ProjectorError, Span, error


class ServeError(ProjectorError):
    """The skills tree or the workflows cannot be served as they are (a bad tree, a missing tool, a bad schema)."""


def serve_error(where: str, code: str, message: str, hint: str | None = None) -> ServeError:
    return ServeError(error(Span(where), code, message, hint))


__all__ = ["Diagnostic", "ServeError", "serve_error"]
