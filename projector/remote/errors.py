"""The errors of the remote client. Each carries one stable kebab-case code, and its span names the URI it is about.

``RemoteError`` is a :class:`~projector.errors.ProjectorError`, so the CLI maps every one of them to exit 1. The codes:

- verification (:class:`VerificationError`): ``size-mismatch``, ``digest-mismatch``, ``frontmatter-mismatch``,
  ``frontmatter-ambiguous``, ``bad-frontmatter``, ``unlisted-file``, ``bad-manifest-uri``, ``bad-manifest``, ``bad-entry``, ``too-many-files``,
  ``too-large``, ``bad-content``, ``read-failed``
- policy: ``dynamic-declined``
- pins (:class:`LockError`): ``lock-mismatch``, ``bad-lock``, ``not-pinned``
- the server (:class:`ServerError`): ``server-error``, ``not-a-skills-server``, ``unknown-skill``, ``ambiguous-skill``
- tools from a live server or a tools snapshot: ``unknown-tool``, and for a snapshot that is not one
  ``bad-snapshot`` (not bounded JSON, or a tool of the wrong shape) or ``io`` (unreadable), all raised as
  :class:`~projector.errors.LoadError` at ``file:line:col``
- output: ``bad-output-path``, ``overlapping-skills``; and from :mod:`projector.disk`, which writes the folder for
  ``build`` too, ``io`` and ``output-conflict`` (:class:`~projector.errors.DiskError`)
"""

from __future__ import annotations

from ..errors import Diagnostic, ProjectorError, Span


class RemoteError(ProjectorError):
    """A problem with a remote server or what it serves. ``code`` is the code of the first diagnostic."""

    def __init__(self, code: str, where: str, message: str, hint: str | None = None):
        super().__init__(Diagnostic(Span(where or "<server>"), "error", code, message, hint))
        self.code = code
        self.where = where
        self.message = message
        self.hint = hint

    def with_hint(self, hint: str) -> "RemoteError":
        joined = f"{self.hint}; {hint}" if self.hint else hint
        return type(self)(self.code, self.where, self.message, joined)


class VerificationError(RemoteError):
    """Served bytes or a served manifest failed verification. Nothing from them was used."""


class DynamicDeclined(RemoteError):
    """A skill with ``resources: "dynamic"`` was refused because --allow-dynamic was not given."""


class LockError(RemoteError):
    """The served manifest disagrees with the lock file, or the lock file itself is bad."""


class ServerError(RemoteError):
    """The server could not be reached, broke the protocol, or does not serve what was asked for."""


class OutputError(RemoteError):
    """Verified bundles could not be written where asked."""
