"""The HTML report without a browser: its structure (golden), its isolation and its escaping.

The golden files hold an *outline* of the page (every element with its id,
class and data attributes, headings and table headers with their text),
not the page itself: a tweak of the style sheet should not churn a golden
file, a lost section or column must.  Regenerate after an intended change::

    PASSK_UPDATE_GOLDEN=1 python -m pytest tests/report/test_html_report.py -q
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from passk_action.cli import main
from passk_action.core.model import Version
from passk_action.report.html import render_html_report, render_run_html
from passk_action.report.html_page import CSP, markdown_html
from passk_action.store.artifact import write_run
from passk_action.store.results import write_result
from support.html_outline import Outline, outline
from support.report_goldens import assert_golden
from support.scenarios import Attempts, compare, failed_scenario, hostile_scenario, make_run, row


def test_compare_report_structure_golden() -> None:
    assert_golden("html_failed.outline", outline(render_html_report(failed_scenario())))


def test_run_report_structure_golden() -> None:
    assert_golden("html_run_failed.outline", outline(render_run_html(failed_scenario().candidate)))


@pytest.mark.parametrize("scenario", [failed_scenario, hostile_scenario])
def test_the_page_is_self_contained_under_a_strict_policy(scenario: object) -> None:
    assert callable(scenario)
    page = render_html_report(scenario())
    assert f'<meta http-equiv="Content-Security-Policy" content="{CSP}">' in page
    assert CSP.startswith("default-src 'none';")
    parsed = Outline(page)
    # The only URLs are in-page anchors, an empty data: icon and the SVG namespace.
    for tag, attrs in parsed.tags:
        for name in ("src", "href", "action", "formaction", "poster", "srcset"):
            if name in attrs:
                assert attrs[name].startswith("#") or attrs[name] == "data:,", (tag, attrs)
    urls = set(re.findall(r"(?:https?:)?//[^\s\"'<>)]+", page))
    assert urls <= {"http://www.w3.org/2000/svg"} | {u for u in urls if "evil.example" in u}
    assert [t for t, _ in parsed.tags].count("script") == 1
    assert [t for t, _ in parsed.tags].count("style") == 1


def test_hostile_values_are_text_everywhere() -> None:
    page = render_html_report(hostile_scenario())
    parsed = Outline(page)
    tags = {t for t, _ in parsed.tags}
    assert "img" not in tags and "details" in tags
    # No event handler or inline style came from a value.
    assert not [a for _, a in parsed.tags if any(k.startswith("on") for k in a)]
    # Each hostile row id is in the table, escaped, as a data-id and as its own row.
    data_ids = [a["data-id"] for t, a in parsed.tags if t == "tr" and "data-id" in a]
    assert "</details><img src=x onerror=alert(1)>" in data_ids
    assert "<!-- passk:sticky-comment -->" in data_ids
    assert "&lt;/details&gt;&lt;img src=x onerror=alert(1)&gt;" in page
    assert "\x00" not in page  # the NUL in an error detail became U+FFFD
    # The agent description "<script>alert(1)</script>" is text, not a second script.
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_markdown_fragments_never_pass_raw_html() -> None:
    text = markdown_html("**bold** <script>x()</script> [a](javascript:alert(1))")
    assert "<strong>bold</strong>" in text
    assert "<script>" not in text and "&lt;script&gt;" in text
    assert 'href="javascript:' not in text


def test_the_report_says_within_noise_and_shows_error_bars() -> None:
    page = render_html_report(failed_scenario())
    assert "<strong>Within noise:</strong> the change in mean accuracy could be chance" in page
    assert '<table id="error-bars">' in page
    assert "38.0% – 100.0%" in page  # the baseline's per-row accuracy interval (test_render)


def test_rows_blocking_the_gate_come_first_and_are_marked() -> None:
    page = render_html_report(failed_scenario())
    order = re.findall(r'<tr[^>]*data-id="([^"]+)"', page)
    assert order[:2] == ["refund-001", "refund-003"]
    assert order[2:] == ["refund-002", "refund-004", "refund-005", "refund-007", "refund-006"]
    blocking = re.findall(r'<tr class="blocking" data-id="([^"]+)"', page)
    assert blocking == ["refund-001", "refund-003"]


def test_an_empty_comparison_still_renders() -> None:
    empty = make_run(Version.BASELINE, [], Attempts(), "", None)
    result = compare([], empty, make_run(Version.CANDIDATE, [], Attempts(), "c", None))
    page = render_html_report(result)
    assert "<h2>Rows (0)</h2>" in page
    assert 'id="chart-curve"' not in page  # no rows, no curve
    assert "Too few rows to tell a change from noise" in page


def test_a_single_row_gets_no_interval_but_a_curve() -> None:
    rows = [row("only", "yes")]
    base = make_run(Version.BASELINE, rows, Attempts().ok("only", "yes", times=3), "b", None)
    cand = make_run(Version.CANDIDATE, rows, Attempts().ok("only", "no", times=3), "c", None)
    page = render_html_report(compare(rows, base, cand))
    assert "n/a (fewer than 2 rows)" in page
    assert 'id="chart-curve"' in page


def test_passk_report_format_html(tmp_path: Path) -> None:
    result = failed_scenario()
    write_result(result, tmp_path / "result.json")
    write_run(result.baseline, tmp_path / "baseline.json")
    for name in ("result", "baseline"):
        out = tmp_path / f"{name}.html"
        code = main(
            ["report", str(tmp_path / f"{name}.json"), "--format", "html", "--out", str(out)]
        )
        assert code == 0
        page = out.read_text(encoding="utf-8")
        assert page.startswith("<!DOCTYPE html>")
        assert 'id="chart-curve"' in page and 'id="rows-table"' in page
    assert "passk: gate failed" in (tmp_path / "result.html").read_text(encoding="utf-8")
    assert "passk: baseline run" in (tmp_path / "baseline.html").read_text(encoding="utf-8")


def test_passk_report_of_a_broken_file_is_a_usage_error(tmp_path: Path) -> None:
    bad = tmp_path / "broken.json"
    bad.write_text("{not json", encoding="utf-8")
    assert main(["report", str(bad), "--format", "html"]) == 2
