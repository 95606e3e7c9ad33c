"""The HTML report in a real browser: headless Chromium loads it, runs its script, draws its charts.

Chromium is Debian's ``chromium`` package, which ``.ci/run`` installs when it
is missing.  Where it cannot be found these tests skip and say why; nothing
else in the suite needs a browser.

The page is served from a loopback HTTP server that records every request,
so "nothing was requested" is observed, not assumed: the only request must
be the page itself.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from html.parser import HTMLParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from passk_action.report.html import render_html_report, render_run_html
from support.scenarios import failed_scenario, hostile_scenario

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_browser() -> str | None:
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    return None


BROWSER = find_browser()
pytestmark = pytest.mark.skipif(
    BROWSER is None,
    reason="Chromium not found (install Debian's 'chromium' package; .ci/run does this "
    "when it can): the headless-browser check of the HTML report is skipped",
)


class Pages:
    """A loopback server for fixed pages that logs every path asked for."""

    def __init__(self) -> None:
        self.pages: dict[str, bytes] = {}
        self.requests: list[str] = []
        pages, requests = self.pages, self.requests

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                requests.append(self.path)
                body = pages.get(self.path.split("#")[0])
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.end_headers()
                self.wfile.write(body or b"not found")

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"


@pytest.fixture
def pages() -> Iterator[Pages]:
    server = Pages()
    server.thread.start()
    try:
        yield server
    finally:
        server.server.shutdown()
        server.server.server_close()


def chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert BROWSER is not None
    command = [
        BROWSER,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--hide-scrollbars",
        f"--user-data-dir={tmp_path / 'profile'}",
        *args,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def dump_dom(tmp_path: Path, url: str) -> str:
    done = chromium(tmp_path, "--dump-dom", url)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


class Elements(HTMLParser):
    """Every start tag with its attributes, from the DOM Chromium dumped."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))

    def by_id(self, element_id: str) -> dict[str, str]:
        found = [a for _, a in self.tags if a.get("id") == element_id]
        assert len(found) == 1, f"expected one element #{element_id}, found {len(found)}"
        return found[0]

    def named(self, tag: str) -> list[dict[str, str]]:
        return [a for t, a in self.tags if t == tag]


def test_the_report_runs_its_script_and_draws_its_charts(tmp_path: Path, pages: Pages) -> None:
    pages.pages["/report.html"] = render_html_report(failed_scenario()).encode("utf-8")
    dom = dump_dom(tmp_path, pages.url("/report.html"))
    elements = Elements(dom)
    # The script ran: it marked the table, showed the controls and counted the rows.
    table = elements.by_id("rows-table")
    assert table["data-ready"] == "true"
    assert table["data-sorted"] == "none"
    assert "hidden" not in elements.by_id("row-controls")
    assert re.search(r'id="row-count"[^>]*>Showing 7 of 7 rows<', dom)
    # The charts are there, as inline SVG with their ids and their data.
    svg_ids = {a.get("id") for a in elements.named("svg")}
    assert {"chart-curve", "chart-transitions", "chart-check-flips"} <= svg_ids
    assert len(elements.named("circle")) == 4 * 3  # 4 lines of 3 points (j = 1..3)
    assert any(a.get("data-count") == "3" for a in elements.named("g"))
    # Nothing but the page itself was requested: no font, script, image or favicon.
    assert pages.requests == ["/report.html"]


def test_the_url_fragment_sorts_and_filters_the_rows(tmp_path: Path, pages: Pages) -> None:
    pages.pages["/report.html"] = render_html_report(failed_scenario()).encode("utf-8")
    dom = dump_dom(tmp_path, pages.url("/report.html#sort=id:desc&show=lost"))
    table = Elements(dom).by_id("rows-table")
    assert table["data-sorted"] == "id:desc"
    assert table["data-shown"] == "4"
    assert re.search(r'id="row-count"[^>]*>Showing 4 of 7 rows<', dom)
    order = re.findall(r'<tr[^>]*data-id="([^"]+)"', dom)
    assert order == [f"refund-00{i}" for i in range(7, 0, -1)]
    hidden = set(re.findall(r'<tr[^>]*data-id="([^"]+)"[^>]*hidden', dom))
    assert hidden == {"refund-005", "refund-006", "refund-007"}


def test_hostile_values_are_shown_not_run(tmp_path: Path, pages: Pages) -> None:
    pages.pages["/hostile.html"] = render_html_report(hostile_scenario()).encode("utf-8")
    dom = dump_dom(tmp_path, pages.url("/hostile.html"))
    elements = Elements(dom)
    assert elements.named("img") == []  # "<img src=x onerror=...>" stayed text
    assert len(elements.named("script")) == 1  # ours
    assert not [a for _, a in elements.tags if any(k.startswith("on") for k in a)]
    assert elements.by_id("rows-table")["data-ready"] == "true"
    assert pages.requests == ["/hostile.html"]


def test_a_run_report_and_a_screenshot(tmp_path: Path, pages: Pages) -> None:
    pages.pages["/run.html"] = render_run_html(failed_scenario().candidate).encode("utf-8")
    dom = dump_dom(tmp_path, pages.url("/run.html"))
    elements = Elements(dom)
    assert elements.by_id("rows-table")["data-ready"] == "true"
    assert {"chart-curve", "chart-check-flips"} <= {a.get("id") for a in elements.named("svg")}
    shot = tmp_path / "run.png"
    done = chromium(
        tmp_path, f"--screenshot={shot}", "--window-size=1280,1600", pages.url("/run.html")
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size > 20_000  # a drawn page, not a blank one
    assert set(pages.requests) == {"/run.html"}


# Opens the first row the way a click does, then measures what a reader sees at 1280 px.
MEASURE = """<script>
document.querySelector("#rows-table tbody details").open = true;
setTimeout(function () {
  var extra = document.querySelector("#rows-table tr.attempts-row");
  var cells = extra ? extra.querySelectorAll("td.checks") : [];
  var narrow = Array.prototype.map.call(
    extra ? extra.querySelectorAll("table td") : [], function (td) { return td.offsetWidth; });
  document.body.setAttribute("data-measured", [
    extra ? extra.previousElementSibling.getAttribute("data-id") : "none",
    extra ? extra.querySelectorAll("table").length : 0,
    cells.length ? cells[0].offsetWidth : 0,
    Math.min.apply(null, narrow.length ? narrow : [0]),
    document.getElementById("rows-table").offsetWidth,
    document.querySelector("main").clientWidth
  ].join(" "));
}, 50);
</script></body>"""


def test_an_opened_rows_attempts_are_readable_at_1280px(tmp_path: Path, pages: Pages) -> None:
    page = render_html_report(failed_scenario()).replace("</body>", MEASURE, 1)
    pages.pages["/open.html"] = page.encode("utf-8")
    dom = chromium(
        tmp_path,
        "--window-size=1280,900",
        "--virtual-time-budget=3000",
        "--dump-dom",
        pages.url("/open.html"),
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    found = re.search(r'data-measured="([^"]*)"', dom.stdout)
    assert found is not None, "the measuring script did not run"
    row, tables, checks, narrowest, table, main = found.group(1).split()
    # The first row's baseline and candidate attempts sit in a row of their own under it.
    assert row == "refund-001" and tables == "2"
    assert int(checks) >= 150  # "return_window = ok, proof_of_purchase = present" fits
    assert int(narrowest) >= 20  # no column squeezed to a letter per line
    assert int(table) <= int(main) - 40  # and the row table still fits the page (padding)
