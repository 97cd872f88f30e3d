"""Reading workflow files (projector/load.py): which files a folder holds, what a link may reach, and that the
caller's ``tools_from_server`` reaches the rules at every entry point.

The links are made in a temporary folder by each test (tests/bad_inputs/outside-root is a link in the repository,
which a copy of the tree does not always keep).
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys

import pytest
import yaml
from conftest import ROOT, snapshot_tree
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from projector import model, naming
from projector.errors import BuildError, ProjectorError, Span
from projector.texts import invisible_problem
from projector.yaml12 import reads_differently

from projector.builder import WorkflowBuilder, arg, const
from projector.errors import LoadError, format_text, printable
from projector.load import OutsideRoot, discover, load_all, load_data, load_file, parse
from projector.naming import parse_prefix
from projector.output import compile_files, compile_workflows
from projector.positioned import MAX_DEPTH

# A step that calls a tool the file does not declare: an error, unless the tools come from a server.
SERVER_TOOL = b"name: served\ndescription: d\nsteps: [{name: a, tool: t}]\n"
OK = b"name: %s\ndescription: d\ntools: [{name: t, annotations: {readOnlyHint: true}}]\nsteps: [{name: a, tool: t}]\n"


def _report(exc: LoadError) -> list[str]:
    return [format_text(d) for d in exc.diagnostics]


def test_a_folder_skips_dot_files_and_dot_folders_and_does_not_enter_linked_folders(tmp_path, monkeypatch):
    (tmp_path / "wf").mkdir()
    (tmp_path / "wf" / "a.yaml").write_bytes(OK % b"a")
    (tmp_path / "wf" / "b.yml").write_bytes(OK % b"b")
    (tmp_path / "wf" / "notes.txt").write_bytes(b"not a workflow")
    (tmp_path / "wf" / ".hidden.yaml").write_bytes(b"not: [read")
    (tmp_path / "wf" / ".cache").mkdir()
    (tmp_path / "wf" / ".cache" / "c.yaml").write_bytes(b"not: [read")
    (tmp_path / "wf" / "sub").mkdir()
    (tmp_path / "wf" / "sub" / "d.yaml").write_bytes(OK % b"d")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "e.yaml").write_bytes(OK % b"e")
    os.symlink(tmp_path / "elsewhere", tmp_path / "wf" / "linked")
    monkeypatch.chdir(tmp_path)
    assert [display for _, display in discover(["wf"])] == ["wf/a.yaml", "wf/b.yml", "wf/sub/d.yaml"]
    assert [wf.name for wf in load_all(["wf"])] == ["a", "b", "d"]


def test_a_path_that_does_not_exist_is_an_io_error(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(LoadError) as raised:
        load_all(["missing.yaml"])
    assert _report(raised.value) == ["missing.yaml: error[io]: no such file or folder"]


def test_a_link_in_a_folder_to_a_file_beyond_every_folder_scanned_is_refused_unread(tmp_path, monkeypatch):
    (tmp_path / "wf").mkdir()
    (tmp_path / "wf" / "a.yaml").write_bytes(OK % b"a")
    (tmp_path / "secret.yaml").write_bytes(OK % b"secret")
    os.symlink(tmp_path / "secret.yaml", tmp_path / "wf" / "b.yaml")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(LoadError) as raised:
        load_all(["wf"])
    assert _report(raised.value) == [
        (
            "wf/b.yaml: error[outside-root]: the file is a link to a file outside every folder being compiled; it was not "
            "read\n  hint: name the file on the command line to compile it anyway, or copy it into the folder"
        )
    ]
    # Named on the command line, the same link is read: the user chose it.
    assert [wf.name for wf in load_all(["wf/b.yaml"])] == ["secret"]
    assert load_file(tmp_path / "wf" / "b.yaml").name == "secret"


def test_tools_from_server_reaches_the_rules_from_every_entry_point(tmp_path, monkeypatch):
    (tmp_path / "wf").mkdir()
    (tmp_path / "wf" / "served.yaml").write_bytes(SERVER_TOOL)
    monkeypatch.chdir(tmp_path)
    unknown = ["wf/served.yaml:3:25: error[unknown-tool]: step 'a' calls the tool 't', which is not listed under tools"]
    for call in (
        lambda **kw: load_all(["wf"], **kw),
        lambda **kw: load_file("wf/served.yaml", **kw),
        lambda **kw: load_data(SERVER_TOOL, "wf/served.yaml", **kw),
    ):
        with pytest.raises(LoadError) as raised:
            call()
        assert [line.split("\n")[0] for line in _report(raised.value)] == unknown
        loaded = call(tools_from_server=True)
        assert [wf.name for wf in (loaded if isinstance(loaded, list) else [loaded])] == ["served"]


# Hostile workflow inputs (issue 10, items 5-12): every one is a positioned diagnostic and exit 1, never a
# traceback, a hang or bad output; and no text of a workflow can put a control character into the output or a raw
# escape sequence onto the terminal.


STEP = "steps: [{name: a, tool: t, args: {x: {const: VALUE}}}]\n"
BASE = "name: w\ndescription: d\ntools: [{name: t, annotations: {readOnlyHint: true}}]\n" + STEP


def diags(text: str) -> list[tuple[str, int, int]]:
    _, found = parse(text, "f.yaml")
    return [(d.code, d.span.line, d.span.col) for d in found]


def with_value(value: str) -> list[tuple[str, int, int]]:
    return diags(BASE.replace("VALUE", value))


# ------------------------------------------------------------------------------------------------------ 5, 6: tags


@pytest.mark.parametrize(
    "value",
    [
        "!!bool maybe",
        "!!int abc",
        "!!float abc",
        "!!timestamp x",
        "!!binary x",
        "!!timestamp 2024-13-45x",
        "!evil x",
        "!evil {}",
        "!evil []",
        "!!set {a}",
        "!!omap [{a: 1}]",
        "!!str [a]",
        "!!seq {}",
    ],
)
def test_tags_that_do_not_make_a_json_value_are_refused_at_the_value(value):
    assert with_value(value) == [("yaml-tag", 4, 46)]


@pytest.mark.parametrize(
    "value, expected",
    [
        ("!!str 12", "12"),
        ("!!int 12", 12),
        ("!!float 1", 1.0),
        ("!!bool true", True),
        ("!!null ~", None),
        ("!!map {a: 1}", {"a": 1}),
        ("!!seq [1]", [1]),
    ],
)
def test_tags_that_change_nothing_or_only_quote_are_allowed(value, expected):
    wf, found = parse(BASE.replace("VALUE", value), "f.yaml")
    assert found == [] and wf.steps[0].args[0][1].value == expected


@pytest.mark.parametrize("key", ["!!int abc", "!foo k", "!!binary aGk=", "!!float x"])
def test_a_tag_on_a_key_is_refused(key):
    codes = diags(f"{key}: x\n" + BASE)
    assert ("yaml-tag", 1, 1) in codes


# ------------------------------------------------------------------------------------------------------ 5, 9: numbers


@pytest.mark.parametrize("value", [".nan", ".NaN", ".inf", "-.inf", "+.Inf", "1.0e+400", "-1.5e+999"])
def test_numbers_must_be_finite(value):
    assert with_value(value) == [("bad-number", 4, 46)]


def test_an_integer_over_the_digit_limit_is_a_diagnostic():
    assert with_value("1" * 5000) == [("bad-number", 4, 46)]
    assert diags("1" * 5000 + ": x\n" + BASE)[0][0] in ("bad-number", "yaml-syntax")  # a plain key over 1,024
    assert with_value("1" * 4300) == []  # the limit itself is fine


def test_non_finite_numbers_from_the_builder_are_refused():
    for value in (float("nan"), float("inf"), {"a": [float("-inf")]}):
        with pytest.raises(LoadError) as info:
            (
                WorkflowBuilder("w", "d")
                .tool("t", annotations={"readOnlyHint": True})
                .step("s", tool="t", args={"x": const(value)})
                .build()
            )
        assert [d.code for d in info.value.diagnostics] == ["bad-number"]
    with pytest.raises(LoadError) as info:
        WorkflowBuilder("w", "d").tool("t", input_schema={"maximum": float("inf")}).step("s", tool="t").build()
    assert [d.code for d in info.value.diagnostics] == ["bad-number"]


# ------------------------------------------------------------------------------------------------------ 5: nesting


@pytest.mark.slow
@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 300, 999, 1000, 5000])
def test_deep_nesting_has_its_own_code(levels):
    found = with_value("[" * levels + "]" * levels)
    # the first bracket over the limit: the document (mapping, steps, step, args, source) holds it at depth 6
    assert found == [("too-deep", 4, 46 + MAX_DEPTH - 5)]


def test_deep_block_nesting_and_unclosed_nesting():
    block = "".join("  " * i + f"k{i}:\n" for i in range(300)) + "  " * 300 + "x: 1\n"
    assert diags(block)[0] == ("too-deep", MAX_DEPTH + 1, 2 * MAX_DEPTH + 1)
    assert with_value("[" * 3000)[0][0] == "too-deep"
    ok = MAX_DEPTH - 5  # the document's own levels (mapping, steps, step, args, source) count too
    assert with_value("[" * ok + "]" * ok) == []
    assert with_value("[" * (ok + 1) + "]" * (ok + 1)) != []


def test_deep_values_from_the_builder_are_refused():
    deep: list = []
    for _ in range(2000):
        deep = [deep]
    with pytest.raises(LoadError) as info:
        (
            WorkflowBuilder("w", "d")
            .tool("t", annotations={"readOnlyHint": True})
            .step("s", tool="t", args={"x": const(deep)})
            .build()
        )
    assert [d.code for d in info.value.diagnostics] == ["too-deep"]


@pytest.mark.slow
def test_pure_python_yaml_gives_the_same_diagnostics(monkeypatch):
    import yaml

    from projector import positioned

    cases = [
        BASE.replace("VALUE", v)
        for v in ("[" * 400 + "]" * 400, "[" * 1200 + "]" * 1200, "!!bool maybe", "!evil {}", ".nan", "1" * 5000)
    ]
    fast = [diags(c) for c in cases]
    monkeypatch.setattr(positioned, "_Loader", positioned.loader_class(yaml.SafeLoader))
    assert [diags(c) for c in cases] == fast


# ------------------------------------------------------------------------------------------------------ the CLI

HOSTILE = {
    "tag-bool": BASE.replace("VALUE", "!!bool maybe"),
    "tag-int": BASE.replace("VALUE", "!!int abc"),
    "tag-float": BASE.replace("VALUE", "!!float abc"),
    "tag-timestamp": BASE.replace("VALUE", "!!timestamp x"),
    "tag-key": "!foo k: 1\n" + BASE,
    "tag-int-key": "!!int abc: 1\n" + BASE,
    "tag-collection": BASE.replace("VALUE", "!evil {}"),
    "big-int": BASE.replace("VALUE", "9" * 4301),
    "deep": BASE.replace("VALUE", "[" * 400 + "]" * 400),
    "nan": BASE.replace("VALUE", ".nan"),
    "inf-schema": BASE.replace("annotations:", "input_schema: {maximum: .inf}, annotations:"),
    "esc-step-name": BASE.replace("name: a,", 'name: "a\\e[2J\\a",'),
    "newline-step-name": BASE.replace("name: a,", 'name: "a\\n## Procedure",'),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_every_hostile_file_is_a_positioned_error_and_no_traceback(case, cli, tmp_path):
    f = tmp_path / f"{case}.yaml"
    f.write_text(HOSTILE[case], encoding="utf-8")
    out = tmp_path / "out"
    run = cli("build", str(f), "--out", str(out))
    assert run.code == 1, run.err
    assert f"{f.as_posix()}:" in run.err and ": error[" in run.err
    assert "Traceback" not in run.err + run.out
    assert "\x1b" not in run.err + run.out and "\x07" not in run.err + run.out
    assert not out.exists()


# ------------------------------------------------------------------------------------------------------ 7: files


def test_only_regular_files_are_read(cli, tmp_path):
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    run = cli("build", str(fifo), "/dev/zero", "--out", str(tmp_path / "out"))  # neither may hang nor fill memory
    assert run.code == 1
    assert f"{fifo.as_posix()}: error[io]: cannot read the file: it is a FIFO, not a regular file" in run.err
    assert "/dev/zero: error[io]: cannot read the file: it is a character device" in run.err
    assert not (tmp_path / "out").exists()


def test_a_fifo_in_a_scanned_folder_is_skipped(cli, tmp_path):
    (tmp_path / "wf").mkdir()
    os.mkfifo(tmp_path / "wf" / "fifo.yaml")
    (tmp_path / "wf" / "ok.yaml").write_bytes((ROOT / "workflows" / "hello-world.yaml").read_bytes())
    assert cli("build", str(tmp_path / "wf"), "--out", str(tmp_path / "out")).code == 0


# ------------------------------------------------------------------------------------------------------ 12: roots


def test_a_link_out_of_the_scanned_folder_is_refused_unread(cli, tmp_path):
    secret = tmp_path / "secret.yaml"
    secret.write_text("name: w\nTOKEN=hunter2\n", encoding="utf-8")
    wf = tmp_path / "wf"
    wf.mkdir()
    (wf / "ok.yaml").write_bytes((ROOT / "workflows" / "hello-world.yaml").read_bytes())
    (wf / "leak.yaml").symlink_to(secret)
    out = tmp_path / "out"
    run = cli("build", str(wf), "--out", str(out))
    assert run.code == 1
    assert f"{(wf / 'leak.yaml').as_posix()}: error[outside-root]" in run.err
    assert "hunter2" not in run.err + run.out and "TOKEN" not in run.err + run.out
    assert not out.exists()
    # named on the command line, the same file is read (and here refused for what it holds)
    run = cli("build", str(wf / "leak.yaml"), "--out", str(out))
    assert "outside-root" not in run.err and "error[" in run.err


def test_links_inside_any_scanned_root_are_followed(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (b / "real.yaml").write_text("x", encoding="utf-8")
    (a / "inside.yaml").symlink_to(a / "target.yml")
    (a / "target.yml").write_text("x", encoding="utf-8")
    (a / "to-b.yaml").symlink_to(b / "real.yaml")
    found = [d for _, d in discover([str(a), str(b)])]
    assert found == sorted(
        [
            f"{a.as_posix()}/inside.yaml",
            f"{a.as_posix()}/target.yml",
            f"{a.as_posix()}/to-b.yaml",
            f"{b.as_posix()}/real.yaml",
        ]
    )
    with pytest.raises(LoadError) as info:
        load_all([str(a)])
    assert [(d.code, d.span.file) for d in info.value.diagnostics if d.code == "outside-root"] == [
        ("outside-root", f"{a.as_posix()}/to-b.yaml")
    ]
    named = dict((d, p) for p, d in discover([str(a), str(a / "to-b.yaml")]))
    assert not isinstance(named[f"{a.as_posix()}/to-b.yaml"], OutsideRoot)


@pytest.mark.parametrize("jobs", [1, 2])
def test_outside_root_is_reported_with_every_other_problem(jobs, tmp_path):
    wf = tmp_path / "wf"
    wf.mkdir()
    (tmp_path / "secret.yaml").write_text("x", encoding="utf-8")
    (wf / "a-leak.yaml").symlink_to(tmp_path / "secret.yaml")
    (wf / "b-bad.yaml").write_text("name: [", encoding="utf-8")
    with pytest.raises(LoadError) as info:
        compile_files(discover([str(wf)]), (), jobs)
    assert sorted(d.code for d in info.value.diagnostics) == ["outside-root", "yaml-syntax"]


# ------------------------------------------------------------------------------------------------------ 8: prefix


@pytest.mark.parametrize("prefix", ["a\n", "a/b\n", "a\n/b", "\na"])
def test_uri_prefix_is_matched_in_full(prefix, cli, tmp_path):
    with pytest.raises(ValueError):
        parse_prefix(prefix)
    run = cli("build", str(ROOT / "workflows"), "--uri-prefix", prefix, "--out", str(tmp_path / "o"))
    assert run.code == 2 and not (tmp_path / "o").exists()


# ------------------------------------------------------------------------------------------------------ 10: controls


def _builder(**texts: str) -> WorkflowBuilder:
    b = WorkflowBuilder(texts.get("name", "w"), texts.get("description", "d"))
    b.argument(texts.get("arg", "who"), texts.get("arg_description", "someone"))
    if "instruction" in texts:
        b.instruction("system", texts["instruction"])
    b.tool(
        texts.get("tool", "t"),
        texts.get("tool_description", "a tool"),
        input_schema={
            "type": "object",
            "properties": {texts.get("schema_key", "x"): {"type": "string"}},
            "additionalProperties": True,
        },  # any argument key fits: only the texts are under test
        annotations={"readOnlyHint": True},
    )
    b.step(
        texts.get("step", "s"),
        tool=texts.get("tool", "t"),
        args={texts.get("arg_key", "x"): arg(texts.get("arg", "who"))},
        bind=texts.get("bind", "r"),
        guidance=texts.get("guidance"),
    )
    b.step("s2", tool=texts.get("tool", "t"), args={"x": const(texts.get("const", "c"))})
    b.step("s3", resources=[texts.get("resource", "docs://x")])
    return b


TEXTS = [
    "name",
    "description",
    "arg",
    "arg_description",
    "instruction",
    "tool",
    "tool_description",
    "schema_key",
    "step",
    "arg_key",
    "bind",
    "guidance",
    "const",
    "resource",
]
ONE_LINE = {"name", "arg", "tool", "step", "arg_key", "bind", "resource"}


@pytest.mark.parametrize("field", TEXTS)
@pytest.mark.parametrize("char", ["\x1b", "\x07", "\r", "\x00", "\x7f", "\x85", "\x9b", "\x0b", "\x0c"])
def test_control_characters_are_refused_in_every_text(field, char):
    with pytest.raises(LoadError) as info:
        _builder(**{field: f"a{char}b"}).build()
    assert "control-character" in [d.code for d in info.value.diagnostics]
    assert all(char not in d.message for d in info.value.diagnostics)


@pytest.mark.parametrize("field", TEXTS)
def test_tab_and_newline_are_fine_where_text_may_span_lines(field):
    if field in ONE_LINE:
        with pytest.raises(LoadError) as info:
            _builder(**{field: "a\nb"}).build()
        assert {d.code for d in info.value.diagnostics} == {"line-break"}
        _builder(**{field: "a\tb"}).build()
    else:
        _builder(**{field: "a\tb\nc"}).build()


def test_control_characters_in_yaml_are_refused_at_their_place():
    text = BASE.replace("name: a,", 'name: "a\\e[31m",').replace("description: d", 'description: "x\\a"')
    assert sorted(diags(text)) == [("control-character", 2, 14), ("control-character", 4, 9)]


def test_diagnostics_escape_what_they_quote(cli, tmp_path):
    f = tmp_path / "w.yaml"
    f.write_text('"\\e[2J\\e]0;pwned\\a\\nfake: line": 1\n' + BASE, encoding="utf-8")
    for fmt in ("text", "json", "github"):
        run = cli("build", str(f), "--format", fmt, "--out", str(tmp_path / "o"))
        assert run.code == 1
        printed = run.err + run.out
        assert "unknown key" in printed
        assert all(c not in printed for c in "\x1b\x07"), fmt
    assert "'\\x1b[2J\\x1b]0;pwned\\x07\\nfake: line'" in cli("build", str(f), "--out", str(tmp_path / "o")).err


def test_printable_escapes_controls_separators_and_bidi():
    assert (
        printable("a\x1b[0m\x07\n\t\r\x7f\x85\u2028\u202e\u2066z")
        == "a\\x1b[0m\\x07\\n\\t\\r\\x7f\\x85\\u2028\\u202e\\u2066z"
    )
    assert printable("plain ünïcödé ✓") == "plain ünïcödé ✓"


def test_every_printed_part_of_a_diagnostic_is_escaped():
    """Whatever a diagnostic carries (a remote server's error text, a file name, a hint quoting a file), the text
    and GitHub formats print no control character raw (the diagnostic escapes them when it is made), and a file
    name cannot end a GitHub property early and set another ("a,line=1" or a ':')."""
    from projector.errors import Diagnostic, Span, format_text
    from projector.exits import _github

    d = Diagnostic(
        Span("a\x1b[31m,b:c.yaml", 3, 4),
        "warning",
        "x-code",
        "said \x1b]0;t\x07\nfake: line 100%",
        "do \x9b this\u202e",
        acknowledged="ok\r\x07",
    )
    assert format_text(d) == (
        "a\\x1b[31m,b:c.yaml:3:4: warning[x-code]: said \\x1b]0;t\\x07\\nfake: line 100% "
        "(acknowledged: ok\\r\\x07)\n  hint: do \\x9b this\\u202e"
    )
    assert _github(d) == (
        "::notice file=a\\x1b[31m%2Cb%3Ac.yaml,line=3,col=4,title=x-code::said \\x1b]0;t\\x07"
        "\\nfake: line 100%25 (acknowledged: ok\\r\\x07) Hint: do \\x9b this\\u202e"
    )


def test_file_names_are_escaped_in_diagnostics(cli, tmp_path):
    f = tmp_path / "a\x1b[31m.yaml"
    f.write_text("name: [", encoding="utf-8")
    run = cli("build", str(f), "--out", str(tmp_path / "o"))
    assert run.code == 1 and "\x1b" not in run.err and "a\\x1b[31m.yaml:" in run.err


@pytest.mark.slow
def test_no_hang_on_a_fifo_in_a_real_process(tmp_path):
    fifo = tmp_path / "w.yaml"
    os.mkfifo(fifo)
    proc = subprocess.run(
        [sys.executable, "-m", "projector.cli", "check", str(fifo)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1 and "FIFO" in proc.stderr and "Traceback" not in proc.stderr


def test_refused_inputs_leave_the_tree_alone(cli, tmp_path):
    out = tmp_path / "out"
    assert cli("build", str(ROOT / "workflows"), "--out", str(out)).code == 0
    before = snapshot_tree(out)
    for case, text in HOSTILE.items():
        f = tmp_path / f"{case}.yaml"
        f.write_text(text, encoding="utf-8")
        assert cli("build", str(f), "--out", str(out)).code == 1
    assert snapshot_tree(out) == before


# The lazy names of projector.load and projector.sep2640: an unknown name is the usual AttributeError.


@pytest.mark.parametrize("module", ["projector.load", "projector.sep2640"])
def test_an_unknown_name_is_the_usual_attribute_error(module):
    mod = importlib.import_module(module)
    with pytest.raises(AttributeError) as caught:
        mod.no_such_name  # noqa: B018 - the look-up is the test
    assert str(caught.value) == f"module {module!r} has no attribute 'no_such_name'"
    assert not hasattr(mod, "no_such_name")


# ---------------------------------------------------------------------- properties: random valid workflows, any bytes, both parsers, and the same bytes in every process

IDENT = st.from_regex(r"[a-z][a-z0-9_]{0,11}", fullmatch=True)
# No control, format or invisible character: the validator refuses those (control-character, issue 17 item 13).
# No text that YAML 1.2 reads as another value: PyYAML (YAML 1.1) writes '0E0' or '1_000' plain, and the loader
# rightly refuses such a plain scalar (ambiguous-scalar) where it reaches a gate; a valid workflow quotes it.
TEXT = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Cf")), min_size=1, max_size=60).filter(
    lambda s: (
        s.strip() != "" and invisible_problem(Span("t", 1, 1), "t", s, False) is None and not reads_differently(s, s)[0]
    )
)


@st.composite
def workflows(draw) -> dict:
    """A random *valid* workflow as plain data: every source kind, guidance, resources and templates."""
    args = draw(st.lists(IDENT, min_size=1, max_size=3, unique=True))
    tools = draw(st.lists(IDENT, min_size=1, max_size=3, unique=True))
    wf = {
        "name": draw(st.from_regex(r"[A-Za-z][A-Za-z0-9._-]{0,30}[A-Za-z0-9]", fullmatch=True)),  # a prompt name
        "description": draw(TEXT),
        "arguments": [
            {
                "name": a,
                "description": draw(TEXT),
                "required": draw(st.booleans()),
                "type": draw(st.sampled_from(["string", "number", "integer", "boolean"])),
            }
            for a in args
        ],
        "instructions": [{"role": draw(st.sampled_from(["system", "user", "assistant"])), "text": draw(TEXT)}],
        "tools": [
            {
                "name": t,
                "description": draw(TEXT),
                "input_schema": {
                    "type": "object",
                    "properties": {"x": {"type": "string"}},
                    "additionalProperties": True,
                },
                "annotations": draw(
                    st.sampled_from([{"readOnlyHint": True}, {"destructiveHint": True}, {"readOnlyHint": False}])
                ),
            }
            for t in tools
        ],
        "steps": [],
    }
    binds: list[str] = []
    for i in range(draw(st.integers(1, 6))):

        def source():
            kinds = ["arg", "const"] + (["step", "field"] if binds else [])
            kind = draw(st.sampled_from(kinds))
            if kind == "arg":
                return {"arg": draw(st.sampled_from(args))}
            if kind == "const":
                return {
                    "const": draw(
                        st.one_of(st.integers(), TEXT.map(lambda s: s.replace("{", "(")), st.just("{" + args[0] + "}"))
                    )
                }
            if kind == "step":
                return {"step": draw(st.sampled_from(binds))}
            return {
                "step": draw(st.sampled_from(binds)),
                "field": draw(st.from_regex(r"[a-z]+(\.[0-9a-z]+){0,2}", fullmatch=True)),
            }

        if draw(st.booleans()) or not tools:
            step = {
                "name": f"s{i}",
                "tool": draw(st.sampled_from(tools)),
                "args": {f"p{j}": source() for j in range(draw(st.integers(0, 3)))},
            }
            if draw(st.booleans()):
                step["guidance"] = draw(st.sampled_from(["Only if eligible.", "Be polite.", "Verify first."]))
            if draw(st.booleans()):  # conditions over an argument or an earlier result, with any operator
                subject = (
                    {"step": draw(st.sampled_from(binds)), "field": "ok"}
                    if binds and draw(st.booleans())
                    else {"arg": draw(st.sampled_from(args))}
                )
                op = draw(st.sampled_from(["equals", "not_equals", "in", "not_in", "exists"]))
                value = (
                    draw(st.booleans())
                    if op == "exists"
                    else draw(st.lists(st.one_of(st.integers(), TEXT), max_size=3))
                    if op in ("in", "not_in")
                    else draw(st.one_of(st.integers(), st.booleans(), TEXT, st.none()))
                )
                step["when"] = [{**subject, op: value}]
                step["on_fail"] = draw(st.sampled_from(["stop", "skip"]))
            if draw(st.booleans()):
                step["bind"] = f"b{i}"
                binds.append(f"b{i}")
        else:
            step = {"name": f"s{i}", "resources": ["docs://thing/{v}"], "template": {"v": source()}}
        wf["steps"].append(step)
    return wf


SCRIPT = """
import json, sys
from projector.load import parse
from projector.output import compile_workflows
docs = json.load(sys.stdin)
wfs = []
for i, d in enumerate(docs):
    wf, diags = parse(d.encode(), f"w{i}.yaml")
    assert wf is not None and not [x for x in diags if x.severity == "error"], diags
    wfs.append(wf)
build = compile_workflows(wfs)
out = {k: v.hex() for k, v in build.files.items()}
out["__diagnostics__"] = [x.to_json() for x in build.diagnostics]
print(json.dumps(out, sort_keys=True))
"""


def _run(docs: list[str], seed: str, extra_env: dict[str, str]) -> str:
    env = {**os.environ, "PYTHONHASHSEED": seed, **extra_env}
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        input=json.dumps(docs),
        capture_output=True,
        text=True,
        env=env,
        cwd="/",
        check=True,
    )
    return proc.stdout


@pytest.mark.slow
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(workflows(), min_size=1, max_size=4))
def test_random_workflows_project_to_identical_bytes_across_processes(wfs):
    names = [naming.skill_name(w["name"]) for w in wfs]
    for i, w in enumerate(wfs):  # make names unique so the set compiles
        w["name"] = f"{w['name']}_{i}" if names.count(names[i]) > 1 else w["name"]
    docs = [yaml.safe_dump(w, sort_keys=False, allow_unicode=True) for w in wfs]
    a = _run(docs, "1", {"TZ": "UTC", "LC_ALL": "C.UTF-8"})
    b = _run(docs, "4242", {"TZ": "Asia/Kathmandu", "LC_ALL": "C"})
    assert a == b
    assert json.loads(a)["skills.json"]


yaml_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20)),
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=20,
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.binary(max_size=200), st.text(max_size=200), yaml_values.map(lambda v: yaml.safe_dump(v, allow_unicode=True))
    )
)
def test_loader_never_raises_anything_but_its_own_error(data):
    try:
        wf, diags = parse(data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass"), "fuzz.yaml")
    except ProjectorError:
        return
    errors = [d for d in diags if d.severity == "error"]
    if wf is None:
        assert errors
    for d in errors:
        assert d.span.file == "fuzz.yaml" and d.span.line >= 1 and d.span.col >= 1, d


def test_the_text_strategy_leaves_out_what_yaml_1_2_reads_as_another_value():
    assert all(reads_differently(s, s)[0] for s in ("0E0", "1e3", "0o17"))  # PyYAML writes these plain
    assert not reads_differently("refund", "refund")[0]


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(workflows())
def test_random_valid_workflows_load_cleanly_with_both_parsers(wf):
    from projector import positioned

    text = yaml.safe_dump(wf, sort_keys=False, allow_unicode=True).encode()
    fast, fast_diags = parse(text, "w.yaml")
    assert fast is not None and not [d for d in fast_diags if d.severity == "error"], fast_diags
    if positioned.HAVE_LIBYAML:
        saved = positioned._Loader
        try:
            positioned._Loader = positioned.loader_class(yaml.SafeLoader)
            slow, slow_diags = parse(text, "w.yaml")
        finally:
            positioned._Loader = saved
        assert slow == fast and slow_diags == fast_diags


@pytest.mark.slow
def test_examples_load_identically_with_both_parsers():
    from projector import positioned

    assert positioned.HAVE_LIBYAML, "PyYAML was built without libyaml here; the C path is untested"
    for path in sorted((ROOT / "workflows").glob("*.yaml")) + sorted((ROOT / "tests" / "bad_inputs").rglob("*.yaml")):
        data = path.read_bytes()
        fast = parse(data, path.name)
        saved = positioned._Loader
        try:
            positioned._Loader = positioned.loader_class(yaml.SafeLoader)
            slow = parse(data, path.name)
        finally:
            positioned._Loader = saved
        assert fast[0] == slow[0], path
        assert [(d.code, d.span) for d in fast[1]] == [(d.code, d.span) for d in slow[1]], path


# ---------------------------------------------------------------------- what the loader says about each bad input, word for word

# What the loader says about each bad input, word for word.
#
# tests/test_cli.py pins each case's code and position; this file pins the whole report a user reads for it:
# every diagnostic's position, severity, code, message and hint, in order, as ``project-skill build`` prints them. A
# reworded message is a visible change, so it shows up here as a snapshot diff to review. It also holds the loader's
# wording still while its modules are moved (issue 20) and lets mutation testing see a dropped or garbled message.
#
# The YAML cases are parsed one file at a time, as ``build`` parses each file, and a case that loads is compiled too,
# so the warnings of projection speak (``unstructured-result``). The folder cases are loaded whole, so the rules that
# span files (``slug-collision``) and discovery (``outside-root``) speak too. ``output-conflict`` is about a tree on
# disk, and tests/test_cli.py runs it.

CORPUS = ROOT / "tests" / "bad_inputs"
FILES = sorted(p for p in CORPUS.glob("*.yaml"))
FOLDERS = sorted(
    p for p in CORPUS.iterdir() if p.is_dir() and not p.name.startswith(".") and p.name != "output-conflict"
)


class Text(SingleFileSnapshotExtension):
    _write_mode = WriteMode.TEXT
    file_extension = "txt"


@pytest.fixture
def snap(snapshot):
    return snapshot.use_extension(Text)


def report(diags) -> str:
    return "".join(format_text(d) + "\n" for d in diags)


@pytest.mark.parametrize("case", FILES, ids=lambda p: p.name)
def test_what_the_loader_says_about_each_bad_file(case, snap):
    wf, diags = parse(case.read_bytes(), case.name)
    if wf is not None and not any(d.severity == "error" for d in diags):
        try:
            diags = diags + compile_workflows([wf]).diagnostics
        except BuildError as exc:
            diags = diags + exc.diagnostics
    assert diags or case.read_bytes().startswith(b"# expect: ok"), f"{case.name} gave no diagnostic at all"
    assert report(diags) == snap(name=case.stem)


@pytest.mark.parametrize("case", FOLDERS, ids=lambda p: p.name)
def test_what_the_loader_says_about_each_bad_folder(case, snap, monkeypatch):
    monkeypatch.chdir(CORPUS)
    with pytest.raises(LoadError) as raised:
        load_all([case.name])
    assert report(raised.value.diagnostics) == snap(name=case.name)


# Small hostile inputs, one for each thing the loader says that no corpus file makes it say: merge keys, tags on
# keys, keys that are not strings, anchors, nesting, a hint for each kind of YAML syntax error, line endings and a
# byte-order mark, NUL bytes and control characters at a position past the first line. Each is a whole workflow
# where the mistake allows, so that the report holds what the mistake makes the loader say and nothing else.
_TOOLS = "tools: [{name: t, annotations: {readOnlyHint: true}}]\n"
_STEPS = "steps: [{name: a, tool: t}]\n"
_REST = _TOOLS + _STEPS
_DEEP = "[" * 120 + "]" * 120

SNIPPETS: dict[str, str | bytes] = {
    # What YAML allows and a workflow refuses, at the position of what is refused.
    "merge-key": "name: m\n<<: {description: d}\ndescription: d\n" + _REST,
    "anchor": "name: &n x\ndescription: d\n" + _REST,
    "alias-without-anchor": "name: x\ndescription: *d\n" + _REST,
    "tagged-key": "name: x\ndescription: d\n!thing title: T\n" + _REST,
    "tagged-value": "name: x\ndescription: d\ntitle: !thing T\n" + _REST,
    "tagged-list": "name: x\ndescription: d\n"
    + _TOOLS
    + "steps: [{name: a, tool: t, args: {x: {const: !!str [1]}}}]\n",
    "timestamp-tag-on-a-date": "name: x\ndescription: !!timestamp 2001-12-14\n" + _REST,
    "integer-key": "name: x\ndescription: d\n1: one\n" + _REST,
    "list-key": "name: x\ndescription: d\n? [a, b]\n: ab\n" + _REST,
    "mapping-key": "name: x\ndescription: d\n? {a: b}\n: ab\n" + _REST,
    "yaml-1.1-value-type": "name: x\ndescription: d\ntitle: =\n" + _REST,
    "yaml-1.1-value-type-as-a-key": "name: x\ndescription: d\n=: x\n" + _REST,
    "empty-string-key-in-a-constant": "name: x\ndescription: d\n"
    + _TOOLS
    + "steps: [{name: a, tool: t, args: {x: {const: {'': 1}}}}]\n",
    "empty": "",
    "only-a-comment": "# name: x\n",
    # Nesting: one too-deep per file, the value's (a refused key is not looked into), and past libyaml's limit.
    "two-deep-values": "name: x\ndescription: d\n"
    + _TOOLS
    + f"steps: [{{name: a, tool: t, args: {{x: {{const: {_DEEP}}}, y: {{const: {_DEEP}}}}}}}]\n",
    "deep-key-and-deep-value": f"name: x\ndescription: d\n? {_DEEP}\n: 1\n"
    + _TOOLS
    + f"steps: [{{name: a, tool: t, args: {{x: {{const: {_DEEP}}}}}}}]\n",
    "deep-past-the-parser-limit-after-a-closed-list": "name: x\ndescription: d\nx: [[[]], " + "[" * 1001 + "\n",
    # Bytes and characters, past the first line.
    "nul-first-byte": b"\x00name: x\n",
    "two-nul-bytes": b"name: x\ndescription: d\x00\nsteps: \x00\n",
    "control-character-on-line-4": "name: x\ndescription: d\n" + _TOOLS + "steps: [{name: a\x07, tool: t}]\n",
    "byte-order-mark": "\ufeffname: x\ndescription: d\n" + _REST,
    "lone-cr-line-ends": "name: x\rdescription: d\r" + _TOOLS.replace("\n", "\r") + "steps:\r  - name: a\r   tool: t\r",
    # A hint for each kind of YAML syntax error.
    # YAML breaks lines at U+2028 too, and so do the positions and the hints (the quote is named).
    "line-separator-before-an-unclosed-quote": _REST + "name: x\ndescription: d\u2028title: 'T\n",
    "quote-unclosed-before-a-document-end": "name: x\ndescription: 'd\n---\n" + _REST,
    "directive-without-document-start": "%YAML 1.1\nname: x\ndescription: d\n" + _REST,
    "colon-in-a-flow-mapping": "name: x\ndescription: d\n" + _TOOLS + "steps: [{name: a: b, tool: t}]\n",
    "flow-mapping-closed-with-a-bracket": "name: x\ndescription: d\n" + _TOOLS + "steps: [{name: a, tool: t]]\n",
    "flow-list-never-closed": "name: x\ndescription: d\n" + _TOOLS + "steps: [{name: a, tool: t}\n",
    "colon-in-a-list-item": "name: x\ndescription: d\n" + _TOOLS + "steps:\n  - name: fetch: all\n    tool: t\n",
    "colon-in-an-item-after-spaces": "name: x\ndescription: d\n" + _TOOLS + "steps:\n  - name: a\n    tool: t\n"
    "    args:\n      headers:\n        const:\n          -   X-Api-Key: Bearer: k\n",
    "colon-after-a-quoted-key-with-a-colon": 'name: x\n"description: long": Note: it is\n' + _REST,
    "key-indented-more-than-the-line-above": "name: x\ndescription: d\n  tools: [t]\n" + _STEPS,
    "colon-after-the-key-repeated": "name: x\ndescription: description: what it does\n" + _REST,
    "colon-before-two-comments": "name: x\ndescription: Note: it is # one # two\n" + _REST,
    "colon-in-a-value-of-100-characters": "name: x\ndescription: Note: " + "x" * 94 + "\n" + _REST,
    "colon-in-a-value-of-101-characters": "name: x\ndescription: Note: " + "x" * 95 + "\n" + _REST,
    "colon-in-a-non-ascii-value": "name: x\ndescription: Café: open late\n" + _REST,
    "backtick-at-a-line-start": "name: x\n`description`: d\n" + _REST,
    "text-after-a-double-quote": 'name: x\ndescription: "d" and more\n' + _REST,
    "text-after-a-single-quote": "name: x\ndescription: 'd'  and more\n" + _REST,
    "key-in-the-column-of-a-list": "name: x\ndescription: d\n" + _TOOLS + "steps:\n  - {name: a, tool: t}\n  bind: b\n",
    "key-in-the-column-of-a-list-after-a-comment": "name: x\ndescription: d\n"
    + _TOOLS
    + "steps:\n  - {name: a, tool: t}\n      # the step\n  bind: b\n",
}


@pytest.mark.slow
@pytest.mark.parametrize("name", SNIPPETS)
def test_what_the_loader_says_about_each_hostile_snippet(name, snap):
    text = SNIPPETS[name]
    data = text if isinstance(text, bytes) else text.encode("utf-8")
    wf, diags = parse(data, f"{name}.yaml")
    if wf is not None and not any(d.severity == "error" for d in diags):
        diags = diags + compile_workflows([wf]).diagnostics
    assert report(diags) == snap(name=name)


# ---------------------------------------------------------------------- confirm: on a step and ask: on an argument (issue 22)

APPROVED = ROOT / "workflows" / "refunds-approved.yaml"


def test_confirm_and_ask_load_into_the_model():
    wf = load_file(APPROVED)
    refund = next(s for s in wf.steps if s.name == "issue_refund")
    assert refund.confirm is not None
    assert refund.confirm.message == "Issue this refund? It cannot be undone."
    assert refund.confirm.show == (
        model.FromStep("order", "id"),
        model.FromStep("order", "total"),
        model.FromArg("reason"),
    )
    assert wf.argument("reason").ask is True and wf.argument("order_id").ask is False


def test_on_fail_skip_goes_with_confirm_alone():
    src = b"""name: w
description: d
tools: [{name: t, annotations: {destructiveHint: true}}]
steps:
  - name: s
    tool: t
    confirm: {message: Go?}
    on_fail: skip
"""
    wf, diags = parse(src, "w.yaml")
    assert wf is not None and not [d for d in diags if d.severity == "error"], diags


def test_confirm_show_field_is_fitted_to_the_output_schema():
    src = b"""name: w
description: d
tools:
  - {name: get, annotations: {readOnlyHint: true}, output_schema: {type: object, properties: {total: {type: number}}, additionalProperties: false}}
  - {name: pay, annotations: {destructiveHint: true}}
steps:
  - {name: a, tool: get, bind: order}
  - name: b
    tool: pay
    confirm: {message: Pay?, show: [{step: order, field: totl}]}
"""
    _wf, diags = parse(src, "w.yaml")
    found = [d for d in diags if d.severity == "error"]
    assert found and "confirm.show" in found[0].message, diags
