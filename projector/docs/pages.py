"""The generated pages, each one pure function from files in the tree to Markdown bytes, and the table of them
(:func:`pages`). The pieces every page module shares (the header, bounded reads, :class:`DocsError`) are in
:mod:`projector.docs.common`, below all of them."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Callable

from ..bounded import loads
from ..sep2640 import INDEX_FILE, MAX_BYTES, SCHEME, digest
from ..render import fenced
from .codes import warnings_page
from .common import DocsError, cell, page, read_bytes, read_text
from .matrix_page import matrix_page
from .schema_ref import workflow_format

SETUP_OPEN, SETUP_CLOSE = "<!-- setup -->", "<!-- /setup -->"


# --- quick start -----------------------------------------------------------------------------------------------


def setup_block(readme: str) -> str:
    """The text between the README's ``<!-- setup -->`` and ``<!-- /setup -->`` markers."""
    start, end = readme.find(SETUP_OPEN), readme.find(SETUP_CLOSE)
    if start < 0 or end < 0 or end < start:
        raise DocsError(
            f"README.md has no {SETUP_OPEN} ... {SETUP_CLOSE} block; the quick start quotes the "
            "set-up commands from between those markers"
        )
    block = readme[start + len(SETUP_OPEN) : end].strip("\n")
    if not block.strip():
        raise DocsError(f"README.md: the {SETUP_OPEN} block is empty")
    return block


# What each extra of pyproject.toml is for. An extra that is not here is still listed, with the packages it installs.
EXTRA_USES = {
    "dev": (
        "the test suite's tools: pytest with pytest-xdist, syrupy, hypothesis, ruff, skills-ref, and a third-party MCP"
        " server"
    ),
    "docs": "mkdocs and its Material theme, to build this site",
    "browser": "Playwright, for the browser test of this site (it drives a Chromium installed apart)",
    "fastmcp": "FastMCP, to serve on it: `serve --framework fastmcp`, or `attach` on a `FastMCP` server",
    "agent": "pydantic-ai, for the agent adapter `projector.remote.agent_pydantic`",
    "evals": "Inspect AI, to run the derived eval cases on a model: `project-skill evals run --surface inspect` "
    "([Evals](evals.md))",
    "mutation": "mutmut, for the mutation tests (`scripts/mutation`)",
    "durable": "DBOS, for durable workflow tasks: `serve --workflow-tools --state DIR`, or `attach(..., state=DIR)`",
}
TEST_SCRIPT = "scripts/test"


def _pyproject(root: Path) -> dict:
    try:
        return tomllib.loads(read_text(root, "pyproject.toml", "the quick start lists its extras"))
    except tomllib.TOMLDecodeError as exc:
        raise DocsError(f"pyproject.toml is not TOML ({exc})") from None


def _extras(root: Path, project: dict) -> str:
    """One line per extra of pyproject.toml: its name, what it is for, and whether ``scripts/test`` installs it."""
    extras = project.get("project", {}).get("optional-dependencies", {})
    script = read_text(root, TEST_SCRIPT, "the quick start says which extras the test command installs")
    found = re.search(r"\.\[([A-Za-z0-9_,-]+)\]", script)
    if not extras or found is None:
        missing = "pyproject.toml declares none" if not extras else f"{TEST_SCRIPT} installs none"
        raise DocsError(
            f"the quick start lists the extras of pyproject.toml and marks those that {TEST_SCRIPT} "
            f"installs (pip install -e '.[a,b]'); {missing}"
        )
    tested = set(found.group(1).split(","))
    own = re.escape(project.get("project", {}).get("name", ""))
    for name in sorted(tested & set(extras)):  # an extra that installs another of its own project's: one level
        for requirement in extras[name]:
            tested.update(*(m.split(",") for m in re.findall(rf"^{own}\[([A-Za-z0-9_,-]+)\]", requirement)))
    lines = ["| extra | what it is for | the test command installs it |", "| --- | --- | --- |"]
    for name, requirements in extras.items():
        use = EXTRA_USES.get(name) or "installs " + ", ".join(f"`{r}`" for r in requirements)
        lines.append(f"| `{cell(name)}` | {cell(use)} | {'yes' if name in tested else 'no'} |")
    return "\n".join(lines)


def _slow_marker(project: dict) -> str:
    markers = project.get("tool", {}).get("pytest", {}).get("ini_options", {}).get("markers", [])
    return next((m.split(":", 1)[1].strip() for m in markers if m.split(":", 1)[0].strip() == "slow"), "")


def quickstart(root: Path) -> str:
    block = setup_block(read_text(root, "README.md", "the quick start quotes its set-up block"))
    project = _pyproject(root)
    slow = _slow_marker(project)
    slow_note = " pyproject.toml registers the marker." if slow else ""
    return f"""# Quick start

This page is for working on this repository. To add the tool to your own project (the distribution is
`project-skill`, as the command: `pip install /path/to/checkout` until a release, then `pip install project-skill`),
see [Your own server](own-server.md).

You need Python 3.11 or newer. These are the README's two set-up commands, quoted from it verbatim:

{block}

The first makes a virtual environment, installs the project into it and compiles the example workflows under
`workflows/` into `generated_skills/`. The second installs what the tests need and runs the whole suite, as CI does
(`.ci/run`): the extras marked below; when you are root, with `apt-get` and each only when it is missing, Debian's
Chromium (the browser test), PostgreSQL (the durable tasks' Postgres test) and hyperfine (the bench's smoke test);
and Node 22 with the official MCP conformance suite, the TypeScript SDKs and the MCP Inspector, into `.cache/`, for
the conformance and cross-SDK tests. The first run spends extra time installing them.

## The extras

`pip install -e '.[NAME,...]'` adds these, as pyproject.toml declares them. The test command installs those that
some test needs.

{_extras(root, project)}

## The inner loop

The whole suite starts real servers, browsers and peers. While you work, run the fast part:

```sh
.venv/bin/python -m pytest -m "not slow"
```

Tests marked `slow` are left out.{slow_note} CI runs everything, with `./scripts/test`, on two workers.
[Working on projector](contributing.md) has the rest: conformance, mutation testing and the layout of the tree.

## What you get

`generated_skills/` holds one folder per workflow, each a SEP-2640 skill bundle: a `SKILL.md` and a
`references/tools.md`, plus `skills.json`, the `skills` array that `skills/list` serves. The
[skill catalog](catalog.md) shows them, and [the SKILL.md layout](skill-layout.md) walks through one. Beside it,
`generated_evals/` holds each skill's derived eval cases ([Evals](evals.md)), out of the skills' folders, so that no
skills server pointed at `generated_skills/` hands an agent the answers it is graded on.

The build prints one line per skill, and any warnings. The refunds example gets one on purpose:
`gate-on-side-effect`, because its refund step is guarded only by prose. [Warnings](warnings.md) explains it.

What in the output folder is the build's: the bundle folders it can prove it wrote, never what `skills.json` merely
lists (anyone can edit it). A folder that `skills.json` lists is the build's when it holds a `SKILL.md` and a file as
`skills.json` records it (size and SHA-256), or, if every file was edited, a `SKILL.md` whose frontmatter is the
recorded one. Such a folder is replaced whole, and a hand edit in it is repaired. Everything else in the folder is
yours and is carried over untouched; a new bundle that would land on it is refused (`output-conflict`, naming the
folder and why it is not the build's) and nothing is written. Folders the build made on the way to a bundle (a
`--uri-prefix`) go when they are left empty.

## Next

- `project-skill check` exits 1 with a diff when `generated_skills/` is stale. Run it in CI: see
  [Building and checking](building.md).
- `project-skill serve` serves the skills, the workflow prompts and the demo tools over MCP: see [Serving](serving.md).
- `project-skill matrix` measures the three surfaces on the refunds task: see [the decision matrix](matrix.md).
- `project-skill docs` regenerates the generated pages of this site; `project-skill docs --check` exits 1 when one is
  stale.
"""


# --- performance ------------------------------------------------------------------------------------------------


def performance(root: Path) -> str:
    path = root / "bench" / "results.md"
    if path.is_file():
        text = read_text(root, "bench/results.md", "")
        if not text.lstrip().startswith("#"):
            text = "# Performance\n\n" + text
        return text
    return """# Performance

No results yet: `bench/results.md` does not exist. The benchmarks under `bench/` write it; `project-skill docs`
then copies it here.
"""


# --- skill catalog ----------------------------------------------------------------------------------------------


def _skill_files(root: Path) -> list[tuple[dict, list[tuple[dict, str, bytes]]]]:
    """Each skills.json entry with its files (entry, posix path under generated_skills, bytes), every byte verified
    against the listed size and digest."""
    text = read_text(root, f"generated_skills/{INDEX_FILE}", "run: project-skill build")
    try:
        skills = loads(text)["skills"]  # bounded: depth, digits, no duplicate key
    except (ValueError, KeyError, TypeError) as exc:
        raise DocsError(
            f"generated_skills/{INDEX_FILE} is not a skills index ({exc}); run: project-skill build"
        ) from None
    out = []
    for entry in skills:
        files = []
        for res in entry["resources"]:
            rel = res["uri"].removeprefix(SCHEME)
            if rel.startswith("/") or any(part in ("", ".", "..") for part in rel.split("/")):
                raise DocsError(
                    f"{INDEX_FILE} lists {res['uri']!r}, which is not a path inside the tree; run: project-skill build"
                )
            data = read_bytes(
                root, f"generated_skills/{rel}", f"it is listed in {INDEX_FILE}; run: project-skill build", MAX_BYTES
            )
            if len(data) != res["size"] or digest(data) != res["digest"]:
                raise DocsError(
                    f"generated_skills/{rel} does not match its size or digest in {INDEX_FILE}; "
                    "run: project-skill build"
                )
            files.append((res, rel, data))
        out.append((entry, files))
    return out


def catalog(root: Path) -> str:
    skills = _skill_files(root)
    parts = [
        f"""# Skill catalog

The skills this project builds from `workflows/`, as `skills/list` serves them (from
`generated_skills/{INDEX_FILE}`). Every file below was checked against its listed size and digest when this page was
generated.

| skill | description | files | bytes |
| --- | --- | --- | --- |
"""
    ]
    for entry, files in skills:
        name = entry["frontmatter"]["name"]
        parts.append(
            f"| [`{cell(name)}`](#{name}) | {cell(entry['frontmatter'].get('description', ''))} | "
            f"{len(files)} | {sum(r['size'] for r, _, _ in files)} |\n"
        )
    for entry, files in skills:
        fm = entry["frontmatter"]
        workflow = (fm.get("metadata") or {}).get("workflow")
        parts.append(f"\n## {fm['name']}\n\n{fm.get('description', '')}\n\n- URI: `{entry['uri']}`\n")
        if workflow:
            parts.append(f"- Workflow prompt: `{workflow}`\n")
        parts.append("\n| file | size | digest |\n| --- | --- | --- |\n")
        for res, _, _ in files:
            # a digest is no word: it may break anywhere (docs/stylesheets/matrix.css), where a name in code may not
            parts.append(f'| `{cell(res["uri"])}` | {res["size"]} | <code class="digest">{res["digest"]}</code> |\n')
        for res, rel, data in files:
            parts.append(
                f"\n### {rel.split('/', 1)[1]}\n\n{fenced(data.decode('utf-8').rstrip(chr(10)), 'markdown')}\n"
            )
    return "".join(parts)


# --- the SKILL.md layout, on the refunds example -----------------------------------------------------------------

LAYOUT_SKILL = "refund-flow"

# Prose per part of a generated SKILL.md. Keys are the part's heading (or a pseudo-heading); a part this table does
# not explain stops the generator, so the page cannot silently fall behind the template.
LAYOUT_PROSE: dict[str, str] = {
    "frontmatter": (
        "The YAML frontmatter: `name` is the skill's name (the workflow name, slugged: `refund_flow` becomes "
        "`refund-flow`), and it is also the last segment of the skill's path, as SEP-2640 requires. `description` is "
        "the workflow's description. `metadata.workflow` names the MCP prompt that runs the same steps on the server, and "
        "`metadata.workflow-digest` is the bundle's version stamp, the SHA-256 of the workflow's canonical JSON: it "
        "changes exactly when the workflow does, so a host or a pin can tell what changed. `metadata.tools` names the "
        "tools the steps call, sorted and separated by spaces (empty for a skill that only reads resources): a server "
        "that serves the skill and has one of them hides it from a caller that cannot see that one (a tool the "
        "server does not have is served elsewhere, and hides nothing). A workflow's own "
        "`license`, `compatibility` and `metadata` would come after the description, in that order. "
        "The frontmatter is dumped by a YAML library with a fixed key order, and `skills.json` carries it parsed back "
        "from these bytes, so a client can compare the two."
    ),
    "title": (
        "The title comes from the workflow name, and the description repeats. Then one sentence tells the reader what "
        "kind of text this is: a complete procedure that it runs itself, one tool call at a time, applying each step's "
        "judgment."
    ),
    "Context": (
        "The workflow's `instructions`, in order, each with its role. They come before the procedure so the reader "
        "has them when it starts."
    ),
    "Inputs": (
        "The prompt's arguments: name, type, whether it is required, and what it means. The reader is told to ask for "
        "a missing required input and never to guess it. An optional input that a step uses says so where it is "
        "used."
    ),
    "Procedure": (
        "The steps follow in order. The pointer to `references/tools.md` keeps the tools' schemas out of the body: "
        "a host already has them from `tools/list`, and the reader can load the file when it wants them."
    ),
    "step": (
        "A tool step names its tool, says whether the tool is read-only or changes data (from the tool's MCP "
        "annotations), and describes each argument's source in words: a prompt input, a whole earlier result, one "
        "field of it, or a constant. `Save the result as` gives the name later steps use."
    ),
    "judgment step": (
        "A step with `guidance` shows it as **Judgment**. When that guidance reads like a condition on a tool that "
        "changes data, the step also tells the reader to decide before it calls the tool, and not to call it when "
        "the condition fails. This is where the skill surface keeps its judgment: the host's model applies it."
    ),
    "resource step": (
        "A resource-only step reads a resource. Its URI's `{placeholders}` are filled from earlier results or "
        "inputs, each described like an argument."
    ),
    "Server-accelerated alternative": (
        "The last section names the workflow prompt and says what it cannot do. The server runs every step "
        "unconditionally, so each step whose judgment it cannot apply is listed, with the guidance it will ignore. "
        "Only the skill surface applies that judgment: see [the decision matrix](matrix.md)."
    ),
}


def _skill_parts(text: str) -> list[tuple[str, str]]:
    """Split a generated SKILL.md into (kind, text) parts: frontmatter, title, each ``##`` section and each step."""
    if not text.startswith("---\n"):
        raise DocsError(f"generated_skills/{LAYOUT_SKILL}/SKILL.md has no frontmatter")
    end = text.index("\n---\n", 4) + 5
    parts = [("frontmatter", text[:end])]
    chunks = re.split(r"(?m)^(?=#{2,3} )", text[end:])
    parts.append(("title", chunks[0]))
    for chunk in chunks[1:]:
        heading = chunk.split("\n", 1)[0]
        if heading.startswith("### "):
            kind = (
                "judgment step"
                if "**Judgment:**" in chunk
                else "step"
                if "Call the tool" in chunk
                else "resource step"
                if "Read the resource" in chunk
                else heading[4:]
            )
        else:
            kind = heading[3:].strip()
        parts.append((kind, chunk))
    return parts


def skill_layout(root: Path) -> str:
    by_name = {e["frontmatter"]["name"]: files for e, files in _skill_files(root)}
    if LAYOUT_SKILL not in by_name:
        raise DocsError(f"generated_skills has no '{LAYOUT_SKILL}' skill; the layout page explains it")
    files = {rel.split("/", 1)[1]: data.decode("utf-8") for _, rel, data in by_name[LAYOUT_SKILL]}
    parts = _skill_parts(files["SKILL.md"])
    unexplained = sorted({kind for kind, _ in parts if kind not in LAYOUT_PROSE})
    if unexplained:
        raise DocsError(
            "the SKILL.md layout page has no prose for these parts of "
            f"generated_skills/{LAYOUT_SKILL}/SKILL.md: {', '.join(unexplained)}; "
            "add it to LAYOUT_PROSE in projector/docs/pages.py"
        )
    out = [
        f"""# The SKILL.md layout

Every skill that `project-skill build` writes has the same shape. This page walks through the refunds example,
`generated_skills/{LAYOUT_SKILL}/`, compiled from `workflows/refunds.yaml`: each part of its `SKILL.md` as it is
written, then what that part is for. The bundle is a folder:

```text
{LAYOUT_SKILL}/
"""
        + "".join(f"  {rel}\n" for rel in files)
        + "```\n"
    ]
    explained: set[str] = set()
    titles = {"frontmatter": "Frontmatter", "title": "Title and introduction"}
    for kind, chunk in parts:
        first = chunk.split("\n", 1)[0]
        heading = (
            f"### {first[4:]}"
            if first.startswith("### ")
            else f"## {first[3:]}"
            if first.startswith("## ")
            else f"## {titles[kind]}"
        )
        out.append(f"\n{heading}\n\n{fenced(chunk.strip(chr(10)), 'markdown')}\n")
        if kind in explained and kind.endswith("step"):
            out.append("\nAnother step of the same kind.\n")
        else:
            out.append(f"\n{LAYOUT_PROSE[kind]}\n")
        explained.add(kind)
    if "references/tools.md" in files:
        out.append(
            """
## references/tools.md

The tools the steps call, as the server declares them: each tool's description, the steps that use it, its
annotations and its input schema, as JSON with sorted keys. It is a supporting file: SEP-2640 clients read it only
when the model asks for it.

"""
            + fenced(files["references/tools.md"].rstrip("\n"), "markdown")
            + "\n"
        )
    out.append("""
## Determinism

The bytes are a pure function of the workflow: the same file gives the same bundle on any machine, so
`project-skill check` can fail a pull request whose `generated_skills/` is stale, and `skills.json` pins every file
by size and SHA-256 digest.
""")
    return "".join(out)


# --- the command-line reference ---------------------------------------------------------------------------------

# (title, module, main's name argument or None for the top-level parser, argv). Each is run with --help.
CLI_COMMANDS: tuple[tuple[str, str, str | None, tuple[str, ...]], ...] = (
    ("project-skill", "projector.cli", None, ()),
    ("project-skill build", "projector.cli", None, ("build",)),
    ("project-skill check", "projector.cli", None, ("check",)),
    ("project-skill schema", "projector.cli", None, ("schema",)),
    ("project-skill tools", "projector.cli", None, ("tools",)),
    ("project-skill init", "projector.cli", None, ("init",)),
    ("project-skill evals", "projector.cli", None, ("evals",)),
    ("project-skill evals run", "projector.cli", None, ("evals", "run")),
    ("project-skill serve", "projector.server.cli", "serve", ()),
    ("project-skill remote list", "projector.remote.cli", "remote", ("list",)),
    ("project-skill remote load", "projector.remote.cli", "remote", ("load",)),
    ("project-skill pin", "projector.remote.cli", "pin", ()),
    ("project-skill compose", "projector.remote.compose_cli", "compose", ()),
    ("project-skill matrix", "projector.matrix.cli", "matrix", ()),
    ("project-skill docs", "projector.docs", "docs", ()),
)
HELP_COLUMNS = "100"


def help_text(module: str, name: str | None, argv: tuple[str, ...]) -> str:
    """What ``--help`` prints, at a fixed width so the page does not depend on the terminal."""
    import contextlib
    import importlib
    import io
    import os

    main = importlib.import_module(module).main
    buf = io.StringIO()
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_COLUMNS
    try:
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
            try:
                main([*argv, "--help"]) if name is None else main(name, [*argv, "--help"])
            except SystemExit:
                pass
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old
    text = buf.getvalue().strip("\n")
    if not text.startswith("usage:"):
        raise DocsError(f"{module}: --help printed no usage")
    return text


def cli_reference(root: Path) -> str:
    out = [
        """# Command-line reference

Every `project-skill` command, as its own `--help` prints it. Exit codes are the same everywhere: `0` ok, `1`
findings (errors, a refused skill, a stale tree or page), `2` usage.
"""
    ]
    for title, module, name, argv in CLI_COMMANDS:
        out.append(f"\n## {title}\n\n{fenced(help_text(module, name, argv), 'text')}\n")
    out.append(config_reference())
    return "".join(out)


def config_reference() -> str:
    """The configuration file's section of the CLI page: its keys, read from :mod:`projector.config` itself."""
    import json

    from .. import config

    rows = []
    for key in config.KEYS:
        flag = "`PATH ...`" if key == "workflows" else f"`--{key}`"
        default = config.DEFAULTS[key]
        shown = "none" if default is None else f"`{json.dumps(default).lower()}`"
        if key == "evals-out":
            shown = "beside `out`: `generated_evals` for `generated_skills`, `NAME-evals` for another `NAME`"
        rows.append(f"| `{key}` | {flag} | {cell(config.expects(key))} | {shown} |")
    example = "\n".join(
        [
            "[tool.project-skill]",
            'workflows = ["workflows"]',
            'out = "generated_skills"',
            'tools-from = "tools.json"',
            "strict = true",
        ]
    )
    return f"""
## The configuration file

`build` and `check` take the defaults of their flags from the `[tool.project-skill]` table of `pyproject.toml`, as
ruff, mypy and pytest keep theirs, so that a project, its CI and its pre-commit hook run them with no arguments. A
flag on the command line overrides the file (`--no-strict`, `--no-skills-only` and `--no-workflow-tools` turn off
what the file turns on). `init` takes its `--tools-from` from there too, and writes into the first folder of
`workflows`. `serve` serves what `build` wrote: its `--skills` defaults to `out`, its `--workflows` to `workflows`
and its `--workflow-tools` to `workflow-tools` (`--no-workflow-tools` turns it off).

{fenced(example, "toml")}

| key | flag | value | default |
|---|---|---|---|
{chr(10).join(rows)}

- **Which file.** The first `pyproject.toml` found from the current folder upwards, the way ruff looks for its
  own, so the commands work from any folder of the project. Unlike ruff, the search stops at that first file even
  when it has no `[tool.project-skill]` table: a project nested in another never inherits its parent's settings,
  and which file counts is plain to see. A `pyproject.toml` without the table changes nothing. `--config FILE` reads another file (it must have the table);
  `--no-config` reads none.
- **Paths are relative to the file's folder**, not to the current folder: `workflows`, `out`, a `tools-from` that is
  a snapshot (a `.json` path), and the default `workflows` and `generated_skills` when the table is there. A
  `tools-from` URL is used as written.
- **Paths stay inside the project.** A path in the file that is absolute (`out = "/anywhere"`), leaves the file's
  folder once its `..` are resolved (`out = "../../x"`), or leads out of it through a link once resolved (`out =
  "gen"` with a committed link `gen -> /elsewhere`) is refused (`outside-project`), and so is a default path that
  a link leads out (`generated_skills -> /elsewhere`, with the table there). The file comes with the repository,
  and so do its links, so a clone must not decide where `build` writes, nor what it reads elsewhere on your
  machine. A link that stays inside the project is followed. The command line is yours: `--out`, `--tools-from`
  and the workflow paths given there may name any path, and so may a file it names with `--config FILE`.
- **No commands.** `tools-from` in the file is a snapshot or an `http(s)://` URL, never a command line: the file
  comes with the repository (a clone, a pull request, and the hooks run on it), so a command in it would start a
  program for whoever builds. A server to start is given on the command line, `--tools-from COMMAND`.
- **What the run says.** The summary line of `build` and `check` ends with the file it read, as in
  `generated_skills is up to date: 3 skills; 0 warnings, 0 notes (configuration: pyproject.toml)`.
- **Mistakes.** An unknown key, a value of the wrong type, or a file that is not TOML (or not UTF-8) is an error at
  `pyproject.toml:LINE:COL` with its code (`unknown-key`, `wrong-type`, `outside-project`, `malformed-toml`,
  `encoding`), every problem at once, and the run exits 2 having written nothing. A file over
  {config.MAX_BYTES >> 20} MiB is not read (`io`).
"""


def pages(root: Path) -> dict[str, Callable[[Path], str]]:
    return {
        "catalog.md": catalog,
        "cli.md": cli_reference,
        "matrix.md": matrix_page,
        "performance.md": performance,
        "quickstart.md": quickstart,
        "skill-layout.md": skill_layout,
        "warnings.md": warnings_page,
        "format.md": workflow_format,
    }


def generate(root: Path) -> dict[str, bytes]:
    """Every generated page: POSIX path under ``docs/`` -> bytes, sorted by path."""
    return {rel: page(fn(root)) for rel, fn in sorted(pages(root).items())}
