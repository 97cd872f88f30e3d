"""The official SEP-2640 client scenarios (``@modelcontextprotocol/conformance``), run against ``project-skill remote``
by ``scripts/conformance.py``. All four must pass. A missing Node or npm is a failure here, never a skip."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def _runner():
    spec = importlib.util.spec_from_file_location("conformance_script", ROOT / "scripts" / "conformance.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    runner = _runner()
    cache = runner.cache_dir().resolve()
    try:
        runner.install(cache, log=lambda *a: None)
        runner.check_node(cache)
    except runner.ConformanceError as exc:
        pytest.fail(f"the conformance suite could not be installed or run: {exc}")
    return runner.run_client_scenarios(cache, tmp_path_factory.mktemp("conformance"))


EXPECTED = {
    "sep-2640-client-no-prefetch": "sep-2640-host-no-prefetch",
    "sep-2640-client-verify-digest": "sep-2640-host-verify-digest",
    "sep-2640-client-verify-size": "sep-2640-host-size-mismatch-failure",
    "sep-2640-client-verify-frontmatter": "sep-2640-host-frontmatter-comparison",
}


def test_all_four_client_scenarios_ran(results):
    assert [r.scenario for r in results] == list(EXPECTED)


@pytest.mark.parametrize("scenario", list(EXPECTED))
def test_client_scenario_passes(results, scenario):
    (r,) = [r for r in results if r.scenario == scenario]
    assert r.green, f"{r.problems}\n{r.output}"
    assert r.counts["SUCCESS"] == 1
    assert [c["id"] for c in r.checks] == [EXPECTED[scenario]]
    assert all(c["status"] == "SUCCESS" for c in r.checks)
    if scenario != "sep-2640-client-no-prefetch":
        # the client read the tampered SKILL.md (so it really loaded the skill) and never the supporting file
        reads = r.checks[0]["details"]["reads"]
        assert "skill://pdf-processing/SKILL.md" in reads
        assert "skill://pdf-processing/references/FORMS.md" not in reads
