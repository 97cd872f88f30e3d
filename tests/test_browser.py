"""The docs site in a real browser: build it, serve it on loopback, open the decision matrix in headless Chromium.

The table must show the measured numbers (read from the committed data file), the page must log no console error
and fetch nothing from outside the loopback server, and a screenshot is saved under test-artifacts/. The test skips
only when no Chromium is installed."""

from __future__ import annotations

import functools
import http.server
import json
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "docs" / "data" / "matrix.json"
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _chromium() -> str | None:
    for candidate in ("/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser")):
        if candidate and Path(candidate).is_file():
            return candidate
    return None


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep the test output clean
        pass


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> str:
    """The built site, served on 127.0.0.1; yields its base URL."""
    out = tmp_path_factory.mktemp("site")
    mkdocs = Path(sys.executable).with_name("mkdocs")
    assert mkdocs.exists(), "mkdocs is not installed: pip install -e '.[docs]'"
    proc = subprocess.run([str(mkdocs), "build", "--strict", "--site-dir", str(out)], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, env={"PATH": "/usr/bin:/bin", "NO_MKDOCS_2_WARNING": "1",
                                                       "HOME": str(out)})
    assert proc.returncode == 0, proc.stderr
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(out)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def browser():
    chromium = _chromium()
    if chromium is None:
        pytest.skip("no Chromium installed (Debian: apt-get install chromium); the browser test needs one")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("Chromium is installed but Playwright is not: pip install -e '.[browser]'")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


def _open(browser, url: str):
    """Open ``url``; return the page and the problems seen: console errors, page errors, failed requests and any
    request that left the loopback server."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    problems: list[str] = []
    base = url.split("/", 3)[:3]
    origin = "/".join(base)
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url} ({r.failure})"))
    page.on("request", lambda r: None if r.url.startswith(origin) or r.url.startswith("data:")
            else problems.append(f"external request: {r.url}"))
    response = page.goto(url)
    assert response is not None and response.ok, url
    page.wait_for_load_state("networkidle")
    return page, problems


def _expected(run: dict, field: str) -> str:
    value = run.get(field)
    if field == "refund_issued":
        return "yes" if value else "no"
    return "n/a" if value is None else str(value)


def test_matrix_page_shows_the_measured_numbers(site, browser):
    data = json.loads(DATA.read_text())
    page, problems = _open(browser, f"{site}/matrix.html")
    try:
        checked = 0
        for task in data["tasks"]:
            table = page.locator(f"#matrix-{task['task']}")
            assert table.count() == 1, f"no table for {task['task']}"
            for run in task["runs"]:
                fields = ["round_trips", "model_turns", "server_model_turns", "context_bytes"]
                if "refund_issued" in run:
                    fields.append("refund_issued")
                for field in fields:
                    cell = table.locator(f'td[data-surface="{run["surface"]}"][data-scenario="{run["scenario"]}"]'
                                         f'[data-field="{field}"]')
                    assert cell.count() == 1
                    assert cell.inner_text().strip() == _expected(run, field), (task["task"], run["surface"],
                                                                                run["scenario"], field)
                    checked += 1
        assert checked >= 40
        # the gated workflow prompt's rows: it refunds the eligible order and not the ineligible one
        refunds = page.locator("#matrix-refunds")
        for scenario, refunded in (("eligible", "yes"), ("ineligible", "no")):
            cell = refunds.locator(f'td[data-surface="gated"][data-scenario="{scenario}"][data-field="refund_issued"]')
            assert cell.inner_text().strip() == refunded
        gated_row = refunds.locator("tr", has_text="B2. gated workflow prompt")
        assert gated_row.count() == 2
        article = page.inner_text("article")
        assert "What closes the blind spot, and what does not" in article
        assert "`eligibility.eligible` is `false`" not in article  # rendered as code, not backticks
        assert "eligibility.eligible is false, the step needs true" in article
        assert page.locator(".matrix-chart svg rect").count() == len(data["tasks"][0]["runs"])
        assert "Judgment is simulated by a deterministic policy" in page.inner_text("article")
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "matrix.png"), full_page=True)
        assert (ARTIFACTS / "matrix.png").stat().st_size > 10_000
        assert problems == []
    finally:
        page.close()


@pytest.mark.parametrize("name", ["index", "quickstart", "format", "warnings", "catalog", "skill-layout", "cli", "serving",
                                  "verifying", "performance"])
def test_other_pages_load_cleanly(site, browser, name):
    page, problems = _open(browser, f"{site}/{name}.html")
    try:
        assert page.locator("article h1").count() == 1
        assert problems == []
    finally:
        page.close()
