"""The official MCP conformance suite's SEP-2640 server scenarios, against `project-skill serve --http`.

scripts/conformance.py installs Node 22 and the suite into the cache folder itself (npm must be on PATH). When it
cannot, this test fails: a check that did not run is not a pass.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = {"sep-2640-skills-enumeration", "sep-2640-skills-manifest", "sep-2640-skills-directory"}


def test_sep_2640_server_scenarios_are_green(tmp_path):
    report = tmp_path / "conformance.json"
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "conformance.py"), "--server-only", "--json",
                           str(report)],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    print(done.stdout)
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    assert "conformance: GREEN" in done.stdout
    results = json.loads(report.read_text("utf-8"))
    assert {r["scenario"] for r in results} == SCENARIOS
    for r in results:
        counts = r["counts"]
        assert r["problems"] == [], r
        assert counts["SUCCESS"] > 0, r
        assert (counts["FAILURE"], counts["WARNING"], counts["SKIPPED"]) == (0, 0, 0), r


def _script():
    import importlib.util

    spec = importlib.util.spec_from_file_location("conformance_script", ROOT / "scripts" / "conformance.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def test_the_verdict_counts_skipped_and_warnings_as_not_green():
    script = _script()
    ok = {"SUCCESS": 5, "FAILURE": 0, "WARNING": 0, "SKIPPED": 0, "INFO": 0}

    def verdict(counts, line=(5, 5, 0, 0), code=0):
        r = script.Result("s", "server", code, line, dict(counts))
        script._judge(r)
        return r.problems

    assert verdict(ok) == []
    assert verdict({**ok, "SKIPPED": 1}) == ["1 skipped"]
    assert verdict({**ok, "WARNING": 1}, (5, 5, 0, 1)) == ["1 warnings"]
    assert "1 failed" in verdict({**ok, "FAILURE": 1}, (5, 6, 1, 0), code=1)
    assert any("no 'Passed" in p for p in verdict(ok, line=None))  # a skipped scenario prints no tally
    assert any("no checks" in p for p in verdict({}, (0, 0, 0, 0)))
    assert any("disagree" in p for p in verdict(ok, (4, 5, 0, 0)))


def test_the_first_listed_skill_has_a_subdirectory():
    # The directory scenario probes the first skills/list entry and needs an inode/directory child there.
    first = json.loads((ROOT / "generated_skills" / "skills.json").read_text("utf-8"))["skills"][0]
    base = first["uri"].rsplit("/", 1)[0] + "/"
    assert any("/" in r["uri"][len(base):] for r in first["resources"]), first["uri"]
