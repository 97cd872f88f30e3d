"""The errors the server layer raises on purpose, under the project's one root error.

:class:`AttachError` is the server side's: what ``attach()`` and ``project-skill serve`` refuse to serve. The client
side's errors (a server that answers wrongly, a skill that fails verification) are :mod:`projector.remote.errors`.
"""

from __future__ import annotations

from ..errors import Diagnostic, ProjectorError, Span, error


class AttachError(ProjectorError):
    """The skills tree or the workflows cannot be served as they are (a bad tree, a missing tool, a bad schema)."""


def serve_error(where: str, code: str, message: str, hint: str | None = None) -> AttachError:
    """An :class:`AttachError` with one diagnostic at ``where``."""
    return AttachError(error(Span(where), code, message, hint))


__all__ = ["AttachError", "Diagnostic", "serve_error"]
