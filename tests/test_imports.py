"""``project-skill build`` and ``check`` start fast because they import only the core: never ``mcp``, and no
third-party package but PyYAML, Jinja2 and python-slugify (with what those three require themselves).

Each run happens in a fresh interpreter, so nothing a test imported earlier can hide an import.
"""

from __future__ import annotations

import importlib.metadata as metadata
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# orjson writes the JSON texts that json's pure-Python indenting encoder would write slowly (projector/render.py).
CORE_DISTRIBUTIONS = ("PyYAML", "Jinja2", "python-slugify", "orjson")

# Runs the CLI in-process and writes every module it imported (name -> file) to the path in argv[1].
PROBE = """
import json, sys
before = set(sys.modules)
from projector.cli import main
code = main(sys.argv[2:])
new = {name: getattr(mod, "__file__", None) for name, mod in list(sys.modules.items()) if name not in before}
with open(sys.argv[1], "w", encoding="utf-8") as fh:
    json.dump({"code": code, "modules": new}, fh)
"""


def _imports(tmp_path: Path, *argv: str) -> tuple[int, dict[str, str | None]]:
    report = tmp_path / "imports.json"
    proc = subprocess.run([sys.executable, "-c", PROBE, str(report), *argv], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert report.exists(), f"the probe did not finish: {proc.stderr}"
    data = json.loads(report.read_text("utf-8"))
    return data["code"], data["modules"]


def _requirement_closure(names: tuple[str, ...]) -> set[str]:
    """The distributions ``names`` need at run time, themselves included (extras are not followed)."""
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        key = name.lower().replace("_", "-")
        if key in seen:
            continue
        seen.add(key)
        for req in metadata.requires(name) or []:
            if "extra ==" in req:
                continue
            m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", req)
            if m:
                todo.append(m.group(1))
    return seen


def _third_party(modules: dict[str, str | None]) -> dict[str, set[str]]:
    """Top-level modules loaded from files outside the standard library and this project, with the
    distributions that provide them."""
    owners = metadata.packages_distributions()
    stdlib = set(sys.stdlib_module_names)
    out: dict[str, set[str]] = {}
    for name, file in modules.items():
        top = name.split(".")[0]
        if top in stdlib or top == "projector" or not file:
            continue  # stdlib, the project itself, or a file-less module (e.g. Cython's runtime registry)
        out[top] = {d.lower().replace("_", "-") for d in owners.get(top, ["<unknown>"])}
    return out


@pytest.mark.parametrize("command", ["build", "check"])
def test_build_and_check_never_import_mcp(tmp_path: Path, command: str) -> None:
    out = (tmp_path / "out").as_posix() if command == "build" else "generated_skills"
    code, modules = _imports(tmp_path, command, "workflows", "--out", out)
    assert code == 0
    assert "projector.output" in modules, "the probe did not run the compiler"
    heavy = sorted(m for m in modules if m.split(".")[0] in {"mcp", "mcp_types", "pydantic", "pydantic_core",
                                                             "anyio", "starlette", "uvicorn", "httpx", "httpx2",
                                                             "fastmcp"})
    assert heavy == [], f"project-skill {command} imported {heavy[:10]}"


@pytest.mark.slow
@pytest.mark.parametrize("command", ["build", "check"])
def test_only_yaml_jinja2_and_slugify_are_imported(tmp_path: Path, command: str) -> None:
    out = (tmp_path / "out").as_posix() if command == "build" else "generated_skills"
    code, modules = _imports(tmp_path, command, "workflows", "--out", out)
    assert code == 0
    third = _third_party(modules)
    assert {"yaml", "jinja2", "slugify"} <= set(third), third
    allowed = _requirement_closure(CORE_DISTRIBUTIONS)
    foreign = {top: dists for top, dists in third.items() if not dists <= allowed}
    assert foreign == {}, f"project-skill {command} imported third-party modules beyond {CORE_DISTRIBUTIONS}"


@pytest.mark.slow
def test_slugify_module_comes_from_python_slugify(tmp_path: Path) -> None:
    # Several distributions ship a module named `slugify` (python-slugify, awesome-slugify, slugify); names are
    # only stable with python-slugify.
    assert "python-slugify" in metadata.packages_distributions()["slugify"]
    import slugify

    files = {Path(str(f.locate())).resolve() for f in metadata.distribution("python-slugify").files or []}
    assert Path(slugify.__file__).resolve() in files, "the imported slugify module is not python-slugify's"
    # And it is the one the CLI process loads too.
    _code, modules = _imports(tmp_path, "check", "workflows", "--out", "generated_skills")
    assert Path(modules["slugify"]).resolve() == Path(slugify.__file__).resolve()


@pytest.mark.slow
def test_the_probe_sees_heavy_imports(tmp_path: Path) -> None:
    """The checks above could pass vacuously if the probe missed imports; show that it sees mcp when it is used."""
    report = tmp_path / "imports.json"
    probe = PROBE.replace("from projector.cli import main", "from projector.cli import main\nimport mcp")
    subprocess.run([sys.executable, "-c", probe, str(report), "check", "workflows", "--out", "generated_skills"],
                   cwd=ROOT, capture_output=True, text=True, timeout=120)
    modules = json.loads(report.read_text("utf-8"))["modules"]
    assert "mcp" in modules
    assert "mcp" in _third_party(modules)
    assert not _third_party(modules)["mcp"] <= _requirement_closure(CORE_DISTRIBUTIONS)


@pytest.mark.slow
def test_serving_on_mcp_never_imports_fastmcp() -> None:
    """FastMCP is an optional extra: the MCPServer path (attach, serve's default) must not import it."""
    probe = ("import sys\nfrom projector.server.demo import demo_server\nserver, _ = demo_server()\n"
             "print(type(server).__name__, 'fastmcp' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.stdout.split() == ["MCPServer", "False"], proc.stderr


# What a check of a few valid workflows never needs: worker processes (a run in one process, under PARALLEL_FROM
# files; multiprocessing is a tenth of its imports).
NOT_IN_A_COLD_CHECK = ("multiprocessing", "concurrent.futures")


def test_a_cold_check_imports_only_what_it_runs(tmp_path: Path) -> None:
    src = tmp_path / "workflows"
    src.mkdir()
    for f in (ROOT / "workflows").glob("*.yaml"):
        (src / f.name).write_bytes(f.read_bytes())
    code, modules = _imports(tmp_path, "check", str(src), "--out", "generated_skills")
    assert code == 0 and "projector.render" in modules and "jinja2" in modules
    assert [m for m in NOT_IN_A_COLD_CHECK if m in modules] == []


# ---------------------------------------------------------------------------------------- the core and the layers

LAYERS = ("projector.remote", "projector.server", "projector.matrix")  # the client, the server, the harness
SHELLS = ("projector.cli", "projector.builder")  # they reach a live server through the client, and only then


def _edges_into_layers() -> list:
    from test_house import import_edges

    return [e for e in import_edges(type_checking=True)
            if not e.source.startswith(LAYERS) and e.target.startswith(LAYERS)]


@pytest.mark.slow
def test_the_core_never_imports_the_client_the_server_or_the_harness() -> None:
    """Issue 31 item 5: no core module imports ``projector.remote``, ``projector.server`` or ``projector.matrix``:
    not at module level, not inside a function, not under ``TYPE_CHECKING`` (the import graph as
    tests/test_house.py reads it)."""
    found = [f"{e.source}:{e.line} imports {e.target}" for e in _edges_into_layers() if e.source not in SHELLS]
    assert found == []


@pytest.mark.slow
def test_the_cli_and_the_builder_import_the_client_only_when_a_server_is_asked() -> None:
    """The CLI and the builder import the client only inside the function that asks a live server: never at module
    level, nor for a type (``merge_tools`` and the snapshot are the core's, :mod:`projector.toolset`)."""
    found = [f"{e.source}:{e.line} imports {e.target}" for e in _edges_into_layers() if not e.lazy]
    assert found == []


BUILDER_PROBE = """
import json, sys
from pathlib import Path
from projector.builder import WorkflowBuilder, arg
path = Path(sys.argv[1])
path.write_text(json.dumps({"tools": [{"name": "greet", "description": "Greet someone.", "inputSchema": {
    "type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}]}))
for source in (path, {"tools": [{"name": "greet", "inputSchema": {"type": "object"}}]}):
    wf = (WorkflowBuilder("hello", "Say hello.").argument("who", "Who", required=True).tools_from(source)
          .step("greet", tool="greet", args={"name": arg("who")}).build())
    assert [t.name for t in wf.tools] == ["greet"]
print(" ".join(sorted(m for m in sys.modules if m.startswith(("projector.remote", "projector.server",
                                                              "projector.matrix", "mcp")))))
"""


def test_the_builder_fits_to_a_snapshot_or_a_listing_without_the_client(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", BUILDER_PROBE, str(tmp_path / "tools.json")], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == []
