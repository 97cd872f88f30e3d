"""``project-skill COMMAND ...`` is parsed by a parser that holds only that command (:func:`projector.cli.parser`
with ``only``): it must give what the full parser gives, to the byte, for every command line that starts with a
command: the namespace, the help, every error and its exit status. And ``--no-cache`` (there is no cache) is still
parsed, hidden from the help.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from projector import cli

ROOT = Path(__file__).resolve().parent.parent

LINES = [
    ["build"], ["check"], ["build", "w", "--out", "o", "--jobs", "2", "--strict", "--format", "json"],
    ["check", "a", "b", "--uri-prefix", "x/y", "--skills-only", "--no-cache", "--tools-from", "t.json"],
    ["build", "--help"], ["check", "-h"], ["schema", "--help"], ["tools", "--help"], ["init", "--help"],
    ["check", "--bogus"], ["build", "--jobs", "many"], ["check", "--format", "xml"], ["check", "--version"],
    ["build", "--out"], ["check", "--", "--out"], ["check", "--no-c"], ["check", "--form", "json"],
    ["schema"], ["schema", "extra"], ["tools"], ["tools", "srv", "--out", "a", "--check", "b"],
    ["tools", "srv", "--check", "f.json"], ["init"], ["init", "n"], ["init", "n", "--tools-from", "t.json"],
    ["init", "n", "--tools-from", "t.json", "--tool", "a", "--tool", "b", "--out", "x.yaml"],
    ["build", "-h", "--bogus"], ["check", "ünïcode", "--out", "\u2028"], ["build", "check"], ["check", "build"],
]


def _parse(ap, argv: list[str]) -> tuple[object, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            ns = vars(ap.parse_args(argv))
            got: object = {k: (v.__name__ if callable(v) else v) for k, v in ns.items()}
        except SystemExit as exc:
            got = ("exit", exc.code)
    return got, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("argv", LINES, ids=[" ".join(a) for a in LINES])
def test_the_one_command_parser_parses_as_the_full_one(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    full = _parse(cli.parser(), argv)
    one = _parse(cli.parser(argv[0]), argv)
    assert one == full
    assert full[0] != {} and (full[1] or full[2] or isinstance(full[0], dict))


def test_every_command_has_its_one_command_parser() -> None:
    full = cli.parser()
    sub = next(a for a in full._actions if a.dest == "command")
    assert list(sub.choices) == [*cli.COMMANDS, *cli.LAZY_COMMANDS]
    for name in cli.COMMANDS:
        one = next(a for a in cli.parser(name)._actions if a.dest == "command")
        assert list(one.choices) == [name]
        assert one.choices[name].format_help() == sub.choices[name].format_help()


def test_main_uses_the_one_command_parser(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
                                          ) -> None:
    asked: list[str | None] = []
    real = cli.parser
    monkeypatch.setattr(cli, "parser", lambda only=None: asked.append(only) or real(only))
    assert cli.main(["check", "--bogus"]) == 2
    assert cli.main([]) == 2  # no command: the full parser prints its help, every command listed
    assert asked == ["check", None]
    out = capsys.readouterr().out
    assert all(name in out for name in [*cli.COMMANDS, *cli.LAZY_COMMANDS])


def test_no_cache_is_accepted_for_old_ci_lines_and_changes_nothing(cli, tmp_path: Path) -> None:
    """There is no build cache: --no-cache, which CI lines of earlier versions pass, still runs and changes nothing,
    and --help no longer offers it."""
    for command in ("build", "check"):
        shown = cli(command, "--help")
        assert shown.code == 0 and "--no-cache" not in shown.out and "cache" not in shown.out
    out = (tmp_path / "out").as_posix()
    plain, flagged = cli("build", "workflows", "--out", out, cwd=ROOT), cli("build", "workflows", "--out", out,
                                                                            "--no-cache", cwd=ROOT)
    assert (plain.code, flagged.code) == (0, 0) and flagged.out == plain.out.replace("wrote", "up to date:")
    assert cli("check", "workflows", "--out", out, "--no-cache", cwd=ROOT).out == cli("check", "workflows", "--out",
                                                                                      out, cwd=ROOT).out
