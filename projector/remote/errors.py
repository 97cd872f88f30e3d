"""The errors of the remote client. Each carries one stable kebab-case code, and its span names the URI it is about.

``RemoteError`` is a :class:`~projector.errors.ProjectorError`, so the CLI maps every one of them to exit 1. The codes:

- verification (:class:`VerificationError`): ``size-mismatch``, ``digest-mismatch``, ``frontmatter-mismatch`` (also
  saying when the file and the entry agree under the other YAML version, 1.1 or 1.2, naming both readings),
  ``frontmatter-ambiguous`` (also U+0085, U+2028 or U+2029 in the frontmatter block), ``bad-frontmatter``,
  ``unlisted-file``, ``bad-manifest-uri`` (also a URI over 2048 characters or 64 segments), ``bad-manifest``,
  ``bad-entry``, ``name-mismatch`` (the frontmatter ``name`` is not the last segment of the skill's URI),
  ``too-many-files``, ``too-large``, ``bad-content``, ``read-failed``
- policy: ``dynamic-declined``
- pins (:class:`LockError`): ``lock-mismatch`` (also a frontmatter reading asked for that is not the pin's),
  ``bad-lock`` (also a lock too deep, too large, with a huge integer, a ``version`` that is not exactly the integer
  2, a version 1 lock (it named servers by their local command line), a server's name that is not one, a file
  pinned twice, or a ``frontmatter_yaml`` that is neither "1.2" nor "1.1"), ``not-pinned``
- the server (:class:`ServerError`): ``server-error``, ``not-a-skills-server``, ``unknown-skill``, ``ambiguous-skill``,
  ``response-too-large`` (an answer past its limit, refused before it was buffered whole; the connection is closed),
  ``no-skills`` (``remote load --all`` from a server that lists no skill, unless ``--allow-empty``)
- a note, not an error: ``frontmatter-yaml-1.1``, a skill accepted only because ``--frontmatter-yaml 1.1`` read its
  frontmatter as YAML 1.1
- tools from a live server or a tools snapshot: ``unknown-tool``, and for a snapshot that is not one
  ``bad-snapshot`` (not bounded JSON, or a tool of the wrong shape) or ``io`` (unreadable), all raised as
  :class:`~projector.errors.LoadError` at ``file:line:col``
- output (:class:`OutputError`): ``bad-output-path`` (also a folder name that is not a skill name, or a dot-name),
  ``overlapping-skills``, ``output-conflict`` (a skill's folder is taken by something this tool did not write); and
  from :mod:`projector.disk`, which writes the folder for ``build`` too, ``io``
  (:class:`~projector.errors.DiskError`)

Each new kind of refusal has a hostile input under ``tests/bad_inputs/`` named after its code (``name-mismatch.entry.json``,
``response-too-large.server.py``, ``bad-lock.*.lock.json``, ``no-skills.server.py``,
``frontmatter-mismatch.yaml-1.1.SKILL.md``), driven by tests/remote/.
"""

from __future__ import annotations

from ..sep2640 import VerificationError, WireError

# A problem with a remote server or what it serves: ``code`` is the code of the first diagnostic. The wire's refusal
# (projector.sep2640) has exactly this shape, and verification is raised there: so it is one class, and a
# VerificationError is a RemoteError.
RemoteError = WireError


class DynamicDeclined(RemoteError):
    """A skill with ``resources: "dynamic"`` was refused because --allow-dynamic was not given."""


class LockError(RemoteError):
    """The served manifest disagrees with the lock file, or the lock file itself is bad."""


class ServerError(RemoteError):
    """The server could not be reached, broke the protocol, or does not serve what was asked for."""


class OutputError(RemoteError):
    """Verified bundles could not be written where asked."""


__all__ = ["DynamicDeclined", "LockError", "OutputError", "RemoteError", "ServerError", "VerificationError"]
