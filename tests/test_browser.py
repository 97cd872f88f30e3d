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

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "docs" / "data" / "matrix.json"
ARTIFACTS = ROOT / "test-artifacts"
MARKER = "\u2190 the blind spot"  # the note beside the marked cell and bar
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
                    expected = _expected(run, field)
                    if task["task"] == "refunds" and field == "refund_issued" and _blind_spot(run):
                        expected += " " + MARKER
                    assert cell.inner_text().strip() == expected, (task["task"], run["surface"], run["scenario"],
                                                                   field)
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


def _blind_spot(run: dict) -> bool:
    """The run that carries the page's message: an ineligible order that was refunded anyway."""
    return run["scenario"] == "ineligible" and bool(run.get("refund_issued"))


def test_matrix_page_captions_the_chart_and_marks_the_blind_spot(site, browser):
    """The chart has a visible caption and axis labels; the one refunds cell whose data says "ineligible order,
    refunded" is marked (class, bold, a visible note) in the table and in the chart, and no other cell is."""
    data = json.loads(DATA.read_text())
    refunds = next(t for t in data["tasks"] if t["task"] == "refunds")
    spots = [r for r in refunds["runs"] if _blind_spot(r)]
    assert len(spots) == 1, "the committed data should have exactly one blind spot"
    spot = spots[0]
    page, problems = _open(browser, f"{site}/matrix.html")
    try:
        caption = page.locator("figure.matrix-chart > figcaption")
        assert caption.count() == 1
        assert caption.is_visible()
        assert "Bytes that entered the client's context" in caption.inner_text()
        box = caption.bounding_box()
        assert box is not None and box["height"] > 5 and box["width"] > 100
        svg = page.locator("figure.matrix-chart svg")
        for cls, text in (("matrix-axis-x", "context bytes"), ("matrix-axis-y", "surface, scenario")):
            label = svg.locator(f"text.{cls}")
            assert label.count() == 1, cls
            assert label.is_visible(), cls
            assert text in label.text_content(), cls
        # the table: exactly one marked cell, and it is the one the data says
        marked = page.locator("#matrix-refunds td.matrix-blind-spot")
        assert marked.count() == 1
        assert marked.get_attribute("data-surface") == spot["surface"]
        assert marked.get_attribute("data-scenario") == spot["scenario"] == "ineligible"
        assert marked.get_attribute("data-field") == "refund_issued"
        assert marked.inner_text().strip() == "yes " + MARKER
        assert marked.is_visible()
        weight = marked.locator("strong").evaluate("e => getComputedStyle(e).fontWeight")
        assert int(weight) >= 600
        plain = page.locator('#matrix-refunds td[data-field="refund_issued"]:not(.matrix-blind-spot)')
        assert plain.count() == len(refunds["runs"]) - 1
        background = marked.evaluate("e => getComputedStyle(e).backgroundColor")
        assert background not in ("rgba(0, 0, 0, 0)", "transparent"), background
        assert background != plain.first.evaluate("e => getComputedStyle(e).backgroundColor")
        # the chart: the same run's bar is marked, with the note beside it
        bars = svg.locator("g.matrix-blind-spot")
        assert bars.count() == 1
        assert bars.get_attribute("data-surface") == spot["surface"]
        assert bars.get_attribute("data-scenario") == spot["scenario"]
        assert MARKER in bars.text_content()
        assert bars.locator("text", has_text=MARKER).is_visible()
        # the rule for choosing a surface, and spike 011 explained with a link
        article = page.inner_text("article")
        assert "Choosing a surface" in article
        link = page.locator('article a[href*="011-three-mechanisms-one-task"]')
        assert link.count() >= 1 and link.first.is_visible()
        ARTIFACTS.mkdir(exist_ok=True)
        figure = page.locator("figure.matrix-chart")
        figure.scroll_into_view_if_needed()
        figure.screenshot(path=str(ARTIFACTS / "matrix-chart.png"))
        assert problems == []
    finally:
        page.close()


# Every text of the chart, as the browser lays it out: its box in the SVG's own units (getBBox) and on the screen.
_CHART_TEXTS = """svg => {
  const view = svg.viewBox.baseVal, frame = svg.getBoundingClientRect();
  return {view: [view.x, view.y, view.width, view.height], frame: [frame.left, frame.top, frame.right, frame.bottom],
          texts: [...svg.querySelectorAll("text")].map(t => {
            const b = t.getBBox(), r = t.getBoundingClientRect();
            return {text: t.textContent, box: [b.x, b.y, b.x + b.width, b.y + b.height],
                    screen: [r.left, r.top, r.right, r.bottom]};
          })};
}"""


def test_matrix_chart_labels_lie_inside_the_chart(site, browser):
    """No label of the chart is clipped: each text's box lies inside the SVG's viewBox, and on the screen inside
    the drawn SVG. The longest bar labels (B3, the workflow prompt with confirmation) were cut off on the left."""
    data = json.loads(DATA.read_text())
    page, problems = _open(browser, f"{site}/matrix.html")
    try:
        svg = page.locator("figure.matrix-chart svg")
        svg.scroll_into_view_if_needed()
        got = svg.evaluate(_CHART_TEXTS)
        x, y, w, h = got["view"]
        names = [t["text"] for t in got["texts"]]
        runs = data["tasks"][0]["runs"]
        assert sum(n.endswith(f", {r['scenario']}") for n in names for r in runs) >= len(runs), names
        assert sum(n.startswith("B3.") for n in names) == 4, names
        for t in got["texts"]:
            left, top, right, bottom = t["box"]
            assert x <= left and right <= x + w and y <= top and bottom <= y + h, (t["text"], t["box"], got["view"])
            sl, st, sr, sb = t["screen"]
            fl, ft, fr, fb = got["frame"]
            assert fl - 0.5 <= sl and sr <= fr + 0.5 and ft - 0.5 <= st and sb <= fb + 0.5, (t["text"], t["screen"])
        assert problems == []
    finally:
        page.close()


def test_matrix_agent_section_nests_its_lists(site, browser):
    """"How the agent gets its skill": the per-task figures are lists nested in their bullet, not run into its
    paragraph."""
    page, problems = _open(browser, f"{site}/matrix.html")
    try:
        nested = page.evaluate("""() => {
          const out = [];
          for (let e = document.getElementById("how-the-agent-gets-its-skill").nextElementSibling;
               e && e.tagName !== "H2"; e = e.nextElementSibling)
            for (const inner of e.querySelectorAll(":scope > li > ul, :scope > li > ol"))
              out.push([...inner.children].map(li => li.textContent.trim()));
          return out;
        }""")
        assert len(nested) == 2, nested
        turns, sizes = nested
        bullets = page.evaluate("""() => {
          for (let e = document.getElementById("how-the-agent-gets-its-skill").nextElementSibling;
               e && e.tagName !== "H2"; e = e.nextElementSibling)
            if (e.tagName === "UL") return [...e.children].map(li => li.querySelector("strong").textContent);
          return [];
        }""")
        assert bullets == ["The client's figures do not change.", "The agent's own loop is one step shorter.",
                           "The instructions are larger than the SKILL.md"], bullets  # three bullets, none run in
        assert turns and all("server model turns" in item for item in turns), turns
        assert sizes and all("bytes, the SKILL.md's" in item for item in sizes), sizes
        assert problems == []
    finally:
        page.close()


_TABLES = """() => {
  const out = {wide: [], split: [], task: []};
  document.querySelectorAll("article table").forEach((t, i) => {
    const wrap = t.closest(".md-typeset__scrollwrap") || t.parentElement;
    if (t.scrollWidth > wrap.clientWidth + 1) out.wide.push([i, t.rows[0].cells.length, t.scrollWidth, wrap.clientWidth]);
    for (const c of t.querySelectorAll("td code")) {
      const text = c.firstChild;
      if (!text || text.nodeType !== Node.TEXT_NODE) continue;
      let top = null;
      for (let k = 0; k < text.length; k++) {
        const r = document.createRange();
        r.setStart(text, k);
        r.setEnd(text, k + 1);
        const y = r.getBoundingClientRect().top;
        if (top !== null && y > top + 2 && !"-/ ".includes(text.data[k - 1])) out.split.push(text.data);
        top = y;
      }
    }
  });
  const heading = [...document.querySelectorAll("article h3")].find(h => h.textContent.includes("(B3t)"));
  for (let e = heading && heading.nextElementSibling; e && !/^H[23]$/.test(e.tagName); e = e.nextElementSibling) {
    const t = e.tagName === "TABLE" ? e : e.querySelector("table");
    if (t) { out.task = [...t.rows].slice(1).map(r => r.getBoundingClientRect().height); break; }
  }
  return out;
}"""


def test_matrix_tables_fit_the_column_and_split_no_name(site, browser):
    """At 1280 px every table of the matrix page fits the text column, with no column off-screen (the B3t task
    table had an eighth one, and rows five lines tall); and no name in code is split inside a word (the first table
    wrapped `refund_flow_approved` mid-word): a code element breaks, if anywhere, after a hyphen or a slash."""
    page, problems = _open(browser, f"{site}/matrix.html")
    try:
        got = page.evaluate(_TABLES)
        assert got["wide"] == [], got["wide"]
        assert got["split"] == [], got["split"]
        assert len(got["task"]) == 4 and max(got["task"]) < 80, got["task"]  # at most two lines of text a row
        assert problems == []
    finally:
        page.close()


def _pyproject() -> dict:
    import tomllib

    return tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))


def test_home_page_next_steps_link_every_page_of_the_nav(site, browser):
    """"Where to go next" on the home page links every page of the site's nav but itself, among them Your own server,
    the decision matrix and the command-line reference, which it used to leave out."""
    import yaml

    nav = [next(iter(item.values())) for item in yaml.safe_load((ROOT / "mkdocs.yml").read_text("utf-8"))["nav"]]
    page, problems = _open(browser, f"{site}/index.html")
    try:
        links = page.evaluate("""() => {
          const out = [];
          for (let e = document.getElementById("where-to-go-next").nextElementSibling; e && e.tagName !== "H2";
               e = e.nextElementSibling)
            for (const a of e.querySelectorAll("li > a")) out.push([a.getAttribute("href"), a.textContent.trim()]);
          return out;
        }""")
        hrefs = [href for href, _ in links]
        for md in nav[1:]:
            assert md.replace(".md", ".html") in hrefs, (md, links)
        for href in ("own-server.html", "matrix.html", "cli.html"):
            assert page.locator(f'article li > a[href="{href}"]').first.is_visible(), href
        assert problems == []
    finally:
        page.close()


def test_home_page_says_where_judgment_runs_on_each_surface(site, browser):
    """The home page's table gives each server-run surface (the workflow prompt, the workflow tool, the task) what is
    true of it: judgment on the server only as `when:` data, a person at `confirm:`; none says "nowhere"."""
    page, problems = _open(browser, f"{site}/index.html")
    try:
        rows = page.evaluate("""() => {
          for (let e = document.getElementById("where-judgment-runs").nextElementSibling; e && e.tagName !== "H2";
               e = e.nextElementSibling) {
            const table = e.tagName === "TABLE" ? e : e.querySelector("table");
            if (table) return [...table.rows].map(tr => [...tr.cells].map(c => c.textContent.trim()));
          }
          return [];
        }""")
        judgment = {row[0]: row[2] for row in rows[1:]}
        assert list(judgment) == ["skill", "workflow prompt", "workflow tool", "workflow tool as a task", "agent"]
        for surface in ("workflow prompt", "workflow tool", "workflow tool as a task"):
            assert "when:" in judgment[surface] and "confirm:" in judgment[surface], (surface, judgment[surface])
        assert not any("nowhere" in cell for cell in judgment.values()), judgment
        assert problems == []
    finally:
        page.close()


def test_own_server_page_opens_lightly(site, browser):
    """"Your own server" opens with a short sentence and the path as a list of linked steps, not a heavy paragraph."""
    page, problems = _open(browser, f"{site}/own-server.html")
    try:
        opening = page.evaluate("""() => {
          const out = [];
          for (let e = document.querySelector("article h1").nextElementSibling; e && e.tagName !== "H2";
               e = e.nextElementSibling) out.push([e.tagName, e.textContent.trim(), e.querySelectorAll("a").length]);
          return out;
        }""")
        first = next(text for tag, text, _ in opening if tag == "P")
        assert len(first.split()) <= 20, first
        assert all(len(text.split()) <= 30 for tag, text, _ in opening if tag == "P"), opening
        steps = [(text, links) for tag, text, links in opening if tag == "OL"]
        assert len(steps) == 1 and steps[0][1] >= 4, opening
        assert problems == []
    finally:
        page.close()


def test_quickstart_lists_every_extra(site, browser):
    """The quick start's table of extras has one row per extra of pyproject.toml (fastmcp was missing), each with a
    line on what it is for."""
    extras = list(_pyproject()["project"]["optional-dependencies"])
    assert "fastmcp" in extras
    page, problems = _open(browser, f"{site}/quickstart.html")
    try:
        rows = page.evaluate("""() => {
          for (let e = document.getElementById("the-extras").nextElementSibling; e && e.tagName !== "H2";
               e = e.nextElementSibling) {
            const table = e.tagName === "TABLE" ? e : e.querySelector("table");
            if (table) return [...table.rows].map(tr => [...tr.cells].map(c => c.textContent.trim()));
          }
          return [];
        }""")
        listed = {row[0]: row for row in rows[1:]}
        assert sorted(listed) == sorted(extras), rows
        for name, row in listed.items():
            assert len(row[1]) > 10 and row[2] in ("yes", "no"), row
        assert listed["fastmcp"][2] == "yes"
        assert 'pytest -m "not slow"' in page.inner_text("article")
        assert problems == []
    finally:
        page.close()


def test_agents_page_explains_spike_010(site, browser):
    """"spike 010" is said in a sentence, with a link to where it is written up."""
    page, problems = _open(browser, f"{site}/agents.html")
    try:
        paragraph = page.locator("article p", has_text="spike 010")
        assert paragraph.count() == 1
        assert "Rust MCP SDK" in paragraph.inner_text()
        link = paragraph.locator('a[href^="https://github.com/paiml/rust-mcp-sdk/"]')
        assert link.count() == 1 and link.is_visible()
        assert problems == []
    finally:
        page.close()


@pytest.mark.parametrize("name", ["index", "quickstart", "format", "warnings", "catalog", "skill-layout", "cli", "serving",
                                  "verifying", "performance", "agents", "building", "contributing"])
def test_other_pages_load_cleanly(site, browser, name):
    page, problems = _open(browser, f"{site}/{name}.html")
    try:
        assert page.locator("article h1").count() == 1
        assert problems == []
    finally:
        page.close()
