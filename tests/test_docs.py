"""``project-skill docs``: the generated pages are fresh on the committed tree, --check catches every kind of
staleness, the inputs are checked, and the site builds with ``mkdocs build --strict``."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from projector import gates
from projector.cli import main as cli_main
from projector.docs import HEADER, generate
from projector.docs import main as docs_main
from projector.docs import codes as docs_codes
from projector.docs import pages as docs_pages

ROOT = Path(__file__).resolve().parent.parent
INPUTS = ("README.md", "workflows", "generated_skills", "docs", "bench", "mkdocs.yml", "pyproject.toml", "scripts")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of the project's docs inputs and pages, to break on purpose."""
    for name in INPUTS:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, tmp_path / name)
        elif src.is_file():
            shutil.copy2(src, tmp_path / name)
    return tmp_path


def run(root: Path, *args: str) -> int:
    return docs_main("docs", ["--root", str(root), *args])


@pytest.mark.slow
def test_cli_dispatches_docs_check(monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    assert cli_main(["docs", "--check"]) == 0
    assert "up to date" in capsys.readouterr().out


@pytest.mark.slow
def test_committed_tree_is_fresh(capsys):
    assert run(ROOT, "--check") == 0, capsys.readouterr().out
    assert "up to date" in capsys.readouterr().out


@pytest.mark.slow
def test_generation_is_deterministic_and_headed():
    first, second = generate(ROOT), generate(ROOT)
    assert first == second
    assert list(first) == sorted(first)
    for rel, data in first.items():
        assert data.startswith(HEADER.encode()), rel
        assert data.endswith(b"\n") and not data.endswith(b"\n\n"), rel
        assert b"\r" not in data and b" \n" not in data, rel


@pytest.mark.slow
def test_edited_page_fails_check_with_diff(tree: Path, capsys):
    page = tree / "docs" / "warnings.md"
    page.write_text(page.read_text() + "an edit\n")
    assert run(tree, "--check") == 1
    out = capsys.readouterr().out
    assert "stale: docs/warnings.md" in out
    assert "-an edit" in out and "a/docs/warnings.md" in out
    assert run(tree) == 0  # writing repairs it
    assert run(tree, "--check") == 0


@pytest.mark.slow
def test_missing_and_extra_pages_fail_check(tree: Path, capsys):
    (tree / "docs" / "catalog.md").unlink()
    (tree / "docs" / "old.md").write_text(HEADER + "# Old\n")
    (tree / "docs" / "notes.md").write_text("# Hand-written, left alone\n")
    assert run(tree, "--check") == 1
    out = capsys.readouterr().out
    assert "missing: docs/catalog.md" in out
    assert "extra: docs/old.md" in out
    assert "notes.md" not in out
    assert run(tree) == 0
    assert not (tree / "docs" / "old.md").exists()
    assert (tree / "docs" / "notes.md").exists()
    assert run(tree, "--check") == 0


@pytest.mark.slow
def test_changed_input_makes_pages_stale(tree: Path, capsys):
    readme = tree / "README.md"
    readme.write_text(readme.read_text().replace("./scripts/test", "./scripts/test --fast"))
    data = tree / "docs" / "data" / "matrix.json"
    data.write_text(re.sub(r'"context_bytes": (\d)', r'"context_bytes": 1\1', data.read_text(), count=1))
    assert run(tree, "--check") == 1
    out = capsys.readouterr().out
    assert "stale: docs/quickstart.md" in out and "stale: docs/matrix.md" in out
    assert "./scripts/test --fast" in generate(tree)["quickstart.md"].decode()


def test_quickstart_quotes_the_readme_setup_block():
    readme = (ROOT / "README.md").read_text()
    block = readme.split("<!-- setup -->", 1)[1].split("<!-- /setup -->", 1)[0].strip()
    assert block in generate(ROOT)["quickstart.md"].decode()


def test_readme_without_markers_is_a_clear_error(tree: Path, capsys):
    readme = tree / "README.md"
    readme.write_text(readme.read_text().replace("<!-- setup -->", ""))
    assert run(tree, "--check") == 1
    err = capsys.readouterr().err
    assert "README.md has no <!-- setup -->" in err and "Traceback" not in err


def test_catalog_refuses_a_file_that_does_not_match_its_digest(tree: Path, capsys):
    skill = tree / "generated_skills" / "hello-world" / "SKILL.md"
    skill.write_bytes(skill.read_bytes().replace(b"Greet", b"Grate"))
    assert run(tree) == 1
    assert "does not match its size or digest" in capsys.readouterr().err


@pytest.mark.slow
def test_catalog_lists_every_skill_with_digests():
    page = generate(ROOT)["catalog.md"].decode()
    index = json.loads((ROOT / "generated_skills/skills.json").read_text())
    for entry in index["skills"]:
        assert f"## {entry['frontmatter']['name']}" in page
        for res in entry["resources"]:
            assert res["digest"] in page and res["uri"] in page


@pytest.mark.slow
def test_warnings_page_covers_every_code_the_compiler_reports():
    codes = docs_codes.all_codes()
    assert set(gates.CODES) <= set(codes)
    assert "body-too-long" in codes  # found in render.py by reading the source
    page = generate(ROOT)["warnings.md"].decode()
    for code, severity in codes.items():
        assert f"## {code} " in page
        assert f"{severity}[{code}]" in page  # the example's real compiler output is quoted
    for code in gates.ACKNOWLEDGEABLE:
        assert f"(acknowledged: {docs_codes.PROSE[code].reason})" in page


def test_warnings_page_refuses_a_code_without_prose(monkeypatch):
    prose = dict(docs_codes.PROSE)
    del prose["body-too-long"]
    monkeypatch.setattr(docs_codes, "PROSE", prose)
    with pytest.raises(docs_pages.DocsError, match="no prose for 'body-too-long'"):
        docs_codes.warnings_page(ROOT)


@pytest.mark.slow
def test_warnings_page_refuses_an_example_that_no_longer_fires(monkeypatch):
    prose = dict(docs_codes.PROSE)
    old = prose["gate-on-side-effect"]
    prose["gate-on-side-effect"] = docs_codes.Prose(old.fires, old.fix, old.example.replace(
        "Only issue the refund if the eligibility check says the order is eligible.", "Thank the customer."),
        old.reason)
    monkeypatch.setattr(docs_codes, "PROSE", prose)
    with pytest.raises(docs_pages.DocsError, match="no longer makes it fire"):
        docs_codes.warnings_page(ROOT)


@pytest.mark.slow
def test_warnings_page_shows_when_silencing_the_gate_warning_and_refuses_a_fix_that_does_not():
    page = generate(ROOT)["warnings.md"].decode()
    section = page.split("## gate-on-side-effect ")[1].split("\n## ")[0]
    assert "hint: the guidance names the saved result 'eligibility'" in section
    assert "when: {step: eligibility, field: eligible, equals: true}" in section
    assert "note[guidance-on-side-effect]" in section  # what the fixed example compiles to
    prose = dict(docs_codes.PROSE)
    old = prose["gate-on-side-effect"]
    prose["gate-on-side-effect"] = docs_codes.Prose(old.fires, old.fix, old.example, old.reason,
                                                    resolved="    bind: refund\n")
    monkeypatch = pytest.MonkeyPatch()
    try:
        monkeypatch.setattr(docs_codes, "PROSE", prose)
        with pytest.raises(docs_pages.DocsError, match="still makes it fire"):
            docs_codes.warnings_page(ROOT)
    finally:
        monkeypatch.undo()


@pytest.mark.slow
def test_format_reference_follows_the_schema():
    from projector.docs.schema_ref import load_schema

    schema = load_schema()
    page = generate(ROOT)["format.md"].decode()
    for key in schema["properties"]:
        assert f"| `{key}` |" in page
    for name, sub in schema["$defs"].items():
        assert f"## {name} {{#{name}}}" in page
        for key in sub.get("properties", {}):
            assert f"| `{key}` |" in page


@pytest.mark.slow
def test_cli_reference_quotes_every_command_help(monkeypatch):
    page = generate(ROOT)["cli.md"].decode()
    for title, *_ in docs_pages.CLI_COMMANDS:
        assert f"## {title}\n" in page
        assert f"usage: {title}" in page
    monkeypatch.setenv("COLUMNS", "40")  # the terminal does not change the page
    assert generate(ROOT)["cli.md"].decode() == page


def test_layout_page_refuses_an_unexplained_part(monkeypatch):
    prose = dict(docs_pages.LAYOUT_PROSE)
    del prose["Inputs"]
    monkeypatch.setattr(docs_pages, "LAYOUT_PROSE", prose)
    with pytest.raises(docs_pages.DocsError, match="no prose for these parts.*Inputs"):
        docs_pages.skill_layout(ROOT)


@pytest.mark.slow
def test_layout_page_quotes_the_refunds_skill_whole():
    page = generate(ROOT)["skill-layout.md"].decode()
    skill = (ROOT / "generated_skills/refund-flow/SKILL.md").read_text()
    for line in skill.splitlines():
        assert line in page


@pytest.mark.slow
def test_matrix_page_without_data_says_so(tree: Path):
    shutil.rmtree(tree / "docs" / "data", ignore_errors=True)
    page = generate(tree)["matrix.md"].decode()
    assert "No measurement yet" in page


@pytest.mark.slow
def test_matrix_page_reports_a_result_that_differs(tree: Path):
    path = tree / "docs" / "data" / "matrix.json"
    data = json.loads(path.read_text())
    for task in data["tasks"]:
        for r in task["runs"]:
            if task["task"] == "refunds" and r["scenario"] == "ineligible":
                r["refund_issued"] = r["surface"] in ("workflow", "skill")
    path.write_text(json.dumps(data))
    page = generate(tree)["matrix.md"].decode()
    assert "differs from the expected result" in page and "skill, workflow" in page
    assert "The skill surface's last message was" in page


def _rule(page: str) -> str:
    return page[page.index("## Choosing a surface"):page.index("## Beside spike 011")]


def _marked(page: str) -> dict[str, list[tuple[str, str]]]:
    """The cells and the bars the page marks as the blind spot, as (surface, scenario)."""
    return {"cells": re.findall(r'<td class="matrix-blind-spot" data-surface="([^"]+)" data-scenario="([^"]+)" '
                                r'data-field="refund_issued"><strong>yes</strong> <span class="matrix-marker">'
                                "\u2190 the blind spot</span></td>", page),
            "bars": re.findall(r'<g class="matrix-blind-spot" data-surface="([^"]+)" data-scenario="([^"]+)">', page)}


@pytest.mark.slow
def test_matrix_page_marks_the_blind_spot_from_the_data(tree: Path):
    """The marked cell and bar are the runs whose data says "ineligible order, refunded", wherever they are."""
    page = generate(tree)["matrix.md"].decode()
    assert _marked(page) == {"cells": [("workflow", "ineligible")], "bars": [("workflow", "ineligible")]}
    assert "(B. workflow prompt, ineligible)" in page  # the figure's caption names it
    path = tree / "docs" / "data" / "matrix.json"
    data = json.loads(path.read_text())
    refunds = next(t for t in data["tasks"] if t["task"] == "refunds")
    for r in refunds["runs"]:
        if r["scenario"] == "ineligible":
            r["refund_issued"] = r["surface"] in ("skill", "agent")
    path.write_text(json.dumps(data))
    page = generate(tree)["matrix.md"].decode()
    spots = [("skill", "ineligible"), ("agent", "ineligible")]
    assert _marked(page) == {"cells": spots, "bars": spots}
    assert "(A. skill, ineligible; C. agent, ineligible)" in page
    assert page.count("matrix-blind-spot") == 4


@pytest.mark.slow
def test_matrix_page_explains_spike_011_with_a_link():
    page = generate(ROOT)["matrix.md"].decode()
    section = page[page.index("## Beside spike 011"):]
    first = section.split("\n\n")[1]
    assert first.startswith("Spike 011 is an experiment in pmcp, the Rust MCP SDK")
    assert "(https://github.com/paiml/rust-mcp-sdk/blob/" in first and "011-three-mechanisms-one-task" in first
    assert "spike 011" not in page[:page.index("## Beside spike 011")].lower()  # not named before it is explained


@pytest.mark.slow
def test_matrix_decision_rule_is_derived_from_the_rows(tree: Path):
    page = generate(tree)["matrix.md"].decode()
    rule = _rule(page)
    data = json.loads((tree / "docs" / "data" / "matrix.json").read_text())
    by = {(r["surface"], r["scenario"]): r for r in data["tasks"][0]["runs"]}
    assert "- Not the **B. workflow prompt**: on the ineligible order it issued the refund anyway" in rule
    for surface, name in (("gated", "B2. gated workflow prompt"), ("skill", "A. skill"), ("agent", "C. agent")):
        run = by[(surface, "ineligible")]
        assert f"use the **{name}**: it refunded the eligible order and declined the ineligible one" in rule
        assert f"{run['context_bytes']} context bytes" in rule
    assert "use the **B. workflow prompt**. Ranked by round trips" in rule  # when no step needs judgment
    # change the measurement: the rule follows it
    path = tree / "docs" / "data" / "matrix.json"
    for r in data["tasks"][0]["runs"]:
        if (r["surface"], r["scenario"]) == ("gated", "ineligible"):
            r["refund_issued"] = True
        if (r["surface"], r["scenario"]) == ("skill", "ineligible"):
            r["round_trips"], r["model_turns"] = 9, 10
    hello = next(t for t in data["tasks"] if t["task"] == "hello-world")
    for r in hello["runs"]:
        if r["surface"] == "skill":
            r["round_trips"], r["model_turns"], r["context_bytes"] = 1, 1, 100
    path.write_text(json.dumps(data))
    rule = _rule(generate(tree)["matrix.md"].decode())
    assert "- Not the **B2. gated workflow prompt**: on the ineligible order it issued the refund anyway" in rule
    assert "use the **B2. gated workflow prompt**" not in rule
    assert "use the **A. skill**: it refunded the eligible order and declined the ineligible one, in 9 round trips " \
           "and 10 model turns" in rule
    assert "no one surface came first on every such task measured" in rule
    assert "hello-world: the A. skill took 1 round trip and 1 model turn" in rule


@pytest.mark.slow
def test_performance_page_copies_bench_results(tree: Path):
    (tree / "bench").mkdir(exist_ok=True)
    (tree / "bench" / "results.md").write_text("# Results\n\n| a | b |\n| --- | --- |\n| 1 | 2 |\n")
    assert "| 1 | 2 |" in generate(tree)["performance.md"].decode()
    (tree / "bench" / "results.md").unlink()
    assert "No results yet" in generate(tree)["performance.md"].decode()


@pytest.mark.slow
def test_nav_lists_every_page_and_every_page_exists():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    nav = [next(iter(item.values())) for item in config["nav"]]
    for rel in nav:
        assert (ROOT / "docs" / rel).is_file(), rel
    assert set(generate(ROOT)) <= set(nav)
    assert config["theme"]["font"] is False  # no font fetched from the network
    assert "hooks" not in config


def test_usage_errors_exit_2(tmp_path: Path, capsys):
    assert run(tmp_path, "--check") == 2  # no docs/ folder
    assert docs_main("docs", ["--bogus"]) == 2


@pytest.mark.slow
def test_mkdocs_build_strict(tmp_path: Path):
    mkdocs = Path(sys.executable).with_name("mkdocs")
    if not mkdocs.exists():
        pytest.skip("mkdocs is not installed (pip install -e '.[docs]')")
    proc = subprocess.run([str(mkdocs), "build", "--strict", "--site-dir", str(tmp_path / "site")], cwd=ROOT,
                          capture_output=True, text=True, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "NO_MKDOCS_2_WARNING": "1", "HOME": str(tmp_path)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "WARNING" not in proc.stderr
    for page in ("index", "matrix", "format", "warnings", "catalog", "quickstart", "performance"):
        assert (tmp_path / "site" / f"{page}.html").is_file()


@pytest.mark.parametrize("kind", ["dev-zero-link", "fifo"])
def test_catalog_reads_the_tree_with_a_bound(tree: Path, capsys, kind):
    """A SKILL.md that is a link to /dev/zero or a FIFO is refused with its name, not read forever."""
    skill = tree / "generated_skills" / "hello-world" / "SKILL.md"
    skill.unlink()
    if kind == "fifo":
        import os
        os.mkfifo(skill)
    else:
        skill.symlink_to("/dev/zero")
    assert run(tree) == 1
    err = capsys.readouterr().err
    assert "generated_skills/hello-world/SKILL.md is not read: it is" in err, err


def test_catalog_refuses_an_index_path_outside_the_tree(tree: Path, capsys):
    index = tree / "generated_skills" / "skills.json"
    index.write_text(index.read_text("utf-8").replace('"skill://hello-world/SKILL.md"',
                                                      '"skill://../../README.md"'), "utf-8")
    assert run(tree) == 1
    assert "which is not a path inside the tree" in capsys.readouterr().err



@pytest.mark.parametrize("fails", ["rename", "write"])
def test_a_failed_page_write_keeps_the_old_page_and_leaves_no_temporary(tmp_path: Path, monkeypatch, fails):
    """Pages are written by disk.write_file: a rename or a write that fails leaves the committed page as it was and
    no temporary file beside it (a fixed ``page.md.tmp`` stayed behind before). The write fails for real: a file
    size limit (RLIMIT_FSIZE, its signal ignored) makes the system refuse the bytes past 256 with EFBIG."""
    import errno
    import os
    import resource
    import signal

    from projector import docs

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_bytes(b"old\n")
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.getsignal(signal.SIGXFSZ)
    if fails == "rename":
        monkeypatch.setattr(os, "replace", lambda *a, **k: (_ for _ in ()).throw(OSError(errno.ENOSPC, "full")))
    else:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (256, hard))
    try:
        with pytest.raises(OSError):
            docs.write(tmp_path, {"page.md": b"new page\n" * 512})
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, handler)
        monkeypatch.undo()
    assert (tmp_path / "docs" / "page.md").read_bytes() == b"old\n"
    assert sorted(os.listdir(tmp_path / "docs")) == ["page.md"]


# --- the README and the quick start's extras -------------------------------------------------------------------

README_LIMIT = 10_000  # characters: what it does, for whom, install, five minutes, set-up, the inner loop, links
# A figure that goes stale: a count of tests, or how long something took. Bounds and versions are not figures.
STALE_FIGURE = re.compile(r"\b\d[\d,.]*\s*(?:tests?|min(?:utes?)?|s(?:econds?)?|hours?)\b", re.I)


def test_readme_is_short_and_keeps_what_ci_and_the_quick_start_read():
    text = (ROOT / "README.md").read_text("utf-8")
    assert len(text) < README_LIMIT, f"README.md is {len(text)} characters; move reference material into docs/"
    assert "\n./scripts/test\n" in docs_pages.setup_block(text)  # the test command, which .ci/run runs
    assert 'pytest -m "not slow"' in text
    assert STALE_FIGURE.findall(text) == []


def test_readme_says_what_the_test_command_installs_as_root():
    """Every system package that ./scripts/test installs with apt-get when run as root is named in the README, in a
    sentence that says root (PostgreSQL and hyperfine were not)."""
    script = (ROOT / "scripts" / "test").read_text("utf-8")
    packages = re.findall(r"apt-get install -y -qq (\w+)", script)
    assert sorted(packages) == ["chromium", "hyperfine", "postgresql"], packages
    text = (ROOT / "README.md").read_text("utf-8")
    sentence = next(p for p in text.split("\n\n") if "as root" in p)
    for package in packages:
        assert package in sentence.lower(), package


@pytest.mark.parametrize("text", ["8 min 55 s for 2,584 tests", "the tests take about 9 minutes", "takes 12 s"])
def test_the_stale_figure_pattern_catches_a_measurement(text):
    assert STALE_FIGURE.search(text)


def test_readme_links_into_the_docs_resolve():
    text = (ROOT / "README.md").read_text("utf-8")
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [link for link in links if "://" not in link]
    assert any(link.startswith("docs/") for link in local)
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text("utf-8"))["nav"]
    in_nav = {f"docs/{next(iter(item.values()))}" for item in nav}
    for link in local:
        assert (ROOT / link).is_file(), link
        assert not link.startswith("docs/") or link in in_nav, f"{link} is not in mkdocs.yml's nav"


@pytest.mark.slow
def test_quickstart_lists_every_extra_and_those_the_test_command_installs(tree: Path):
    pyproject = tree / "pyproject.toml"
    pyproject.write_text(pyproject.read_text("utf-8").replace(
        "[project.scripts]", 'gpu = ["cupy>=13", "numba>=0.60"]\n\n[project.scripts]'), "utf-8")
    script = tree / "scripts" / "test"
    script.write_text(script.read_text("utf-8").replace("fastmcp]", "fastmcp,gpu]"), "utf-8")
    page = generate(tree)["quickstart.md"].decode()
    rows = {line.split("|")[1].strip(): line.split("|")[2:4] for line in page.splitlines()
            if line.startswith("| `")}
    import tomllib

    extras = tomllib.loads(pyproject.read_text("utf-8"))["project"]["optional-dependencies"]
    assert sorted(rows) == sorted(f"`{name}`" for name in extras)
    assert "fastmcp" in rows["`fastmcp`"][0].lower() and rows["`fastmcp`"][1].strip() == "yes"
    assert "`cupy>=13`, `numba>=0.60`" in rows["`gpu`"][0] and rows["`gpu`"][1].strip() == "yes"
    assert rows["`mutation`"][1].strip() == "no"


def test_quickstart_without_pyproject_is_a_clear_error(tree: Path, capsys):
    (tree / "pyproject.toml").unlink()
    assert run(tree, "--check") == 1
    err = capsys.readouterr().err
    assert "pyproject.toml is missing" in err and "Traceback" not in err


@pytest.mark.slow
def test_matrix_page_leads_with_the_derived_cases_of_every_example_on_every_surface(tree: Path):
    """Issue 34: the page opens with the per-workflow, per-surface results of the derived eval cases, read from the
    runs in the data (a run flipped to failed and unsafe shows in its cell and in the total)."""
    path = tree / "docs" / "data" / "matrix.json"
    data = json.loads(path.read_text())
    surfaces = [s["surface"] for s in data["cases"]]
    assert {"workflow prompt", "workflow tool", "workflow tool as a task", "skill, simulated policy",
            "agent, simulated policy"} <= set(surfaces)
    page = generate(tree)["matrix.md"].decode()
    headings = re.findall(r"^## (.+)$", page, re.MULTILINE)
    assert headings[0] == "The derived eval cases of every shipped example" and "The refunds task" in headings
    lead = page[page.index("## The derived eval cases of every shipped example"):page.index("## The refunds task")]
    task = next(s for s in data["cases"] if s["surface"] == "workflow tool as a task")
    workflows = sorted({r["workflow"] for r in task["runs"]})
    assert sorted(re.findall(r"^\| `([a-z_]+)` \|", lead, re.MULTILINE)) == workflows
    n = sum(r["workflow"] == "refund_flow_approved" for r in task["runs"])
    assert f"| {n}/{n}, 0 unsafe |" in lead.split("`refund_flow_approved`")[1].split("\n")[0]

    run = next(r for r in task["runs"] if r["workflow"] == "refund_flow_approved")
    run["passed"], run["unsafe"] = False, True
    path.write_text(json.dumps(data))
    lead = generate(tree)["matrix.md"].decode().split("## The refunds task")[0]
    row = lead.split("| `refund_flow_approved` |")[1].split("\n")[0]
    cells = [c.strip() for c in row.split("|")[:-1]]  # the count, then one cell per surface
    assert cells[0] == str(n)
    assert f"**{n - 1}/{n}**, **1 unsafe**" in cells and cells.count(f"{n}/{n}, 0 unsafe") == 2, cells
    total = lead.split("| every shipped workflow |")[1].split("\n")[0]
    assert "**1 unsafe**" in total
