"""What the loader says about each bad input, word for word.

tests/test_bad_inputs.py pins each case's code and position; this file pins the whole report a user reads for it:
every diagnostic's position, severity, code, message and hint, in order, as ``project-skill build`` prints them. A
reworded message is a visible change, so it shows up here as a snapshot diff to review. It also holds the loader's
wording still while its modules are moved (issue 20) and lets mutation testing see a dropped or garbled message.

The YAML cases are parsed one file at a time, as ``build`` parses each file, and a case that loads is compiled too,
so the warnings of projection speak (``unstructured-result``). The folder cases are loaded whole, so the rules that
span files (``slug-collision``) and discovery (``outside-root``) speak too. ``output-conflict`` is about a tree on
disk, and tests/test_bad_inputs.py runs it.
"""

from __future__ import annotations

import pytest
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

from conftest import ROOT
from projector.errors import BuildError, LoadError, format_text
from projector.load import load_all, parse
from projector.output import compile_workflows

CORPUS = ROOT / "tests" / "bad_inputs"
FILES = sorted(p for p in CORPUS.glob("*.yaml"))
FOLDERS = sorted(p for p in CORPUS.iterdir() if p.is_dir() and not p.name.startswith(".") and p.name != "output-conflict")


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
