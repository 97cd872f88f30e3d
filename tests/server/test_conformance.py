"""The official MCP conformance suite's SEP-2640 server scenarios, against `project-skill serve --http`.

scripts/conformance.py installs Node 22 and the suite into the cache folder itself (npm must be on PATH). When it
cannot, this test fails: a check that did not run is not a pass.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = {"sep-2640-skills-enumeration", "sep-2640-skills-manifest", "sep-2640-skills-directory"}


def test_sep_2640_server_scenarios_are_green(tmp_path):
    report = tmp_path / "conformance.json"
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "conformance.py"), "--json", str(report)],
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
