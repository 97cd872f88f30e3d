"""Reading workflow files (projector/load.py): which files a folder holds, what a link may reach, and that the
caller's ``tools_from_server`` reaches the rules at every entry point.

The links are made in a temporary folder by each test (tests/bad_inputs/outside-root is a link in the repository,
which a copy of the tree does not always keep).
"""

from __future__ import annotations

import os

import pytest

from projector.errors import LoadError, format_text
from projector.load import discover, load_all, load_data, load_file

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
        ("wf/b.yaml: error[outside-root]: the file is a link to a file outside every folder being compiled; it was not "
         "read\n  hint: name the file on the command line to compile it anyway, or copy it into the folder")]
    # Named on the command line, the same link is read: the user chose it.
    assert [wf.name for wf in load_all(["wf/b.yaml"])] == ["secret"]
    assert load_file(tmp_path / "wf" / "b.yaml").name == "secret"


def test_tools_from_server_reaches_the_rules_from_every_entry_point(tmp_path, monkeypatch):
    (tmp_path / "wf").mkdir()
    (tmp_path / "wf" / "served.yaml").write_bytes(SERVER_TOOL)
    monkeypatch.chdir(tmp_path)
    unknown = ["wf/served.yaml:3:9: error[unknown-tool]: step 'a' calls the tool 't', which is not listed under tools"]
    for call in (lambda **kw: load_all(["wf"], **kw), lambda **kw: load_file("wf/served.yaml", **kw),
                 lambda **kw: load_data(SERVER_TOOL, "wf/served.yaml", **kw)):
        with pytest.raises(LoadError) as raised:
            call()
        assert [line.split("\n")[0] for line in _report(raised.value)] == unknown
        loaded = call(tools_from_server=True)
        assert [wf.name for wf in (loaded if isinstance(loaded, list) else [loaded])] == ["served"]
