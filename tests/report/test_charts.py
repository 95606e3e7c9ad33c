"""Charts and the noise sentence: Mermaid text, SVG that parses and says its numbers, escaping."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from passk_action.core.error_bars import ErrorBar
from passk_action.core.model import RowClass
from passk_action.core.paired import PairedComparison, mcnemar_exact_p, verdict_of
from passk_action.report.charts import (
    CLASS_ORDER,
    FlipBar,
    Series,
    mermaid_curve,
    mermaid_text,
    svg_curve,
    svg_flip_rates,
    svg_transition_matrix,
    transition_counts,
    xml_text,
)
from passk_action.report.comment import render_comment
from passk_action.report.how_sure import noise_sentence
from support.scenarios import MARKER, RECORD, failed_scenario, many_lost_rows

SVG = "{http://www.w3.org/2000/svg}"


def test_mermaid_curve_is_the_expected_block() -> None:
    text = mermaid_curve(
        [Series("b", (0.9, 0.81, 0.729), "#0072B2"), Series("c", (1.0, 0.5, 0.25), "#D55E00")],
        title='pass^j "quoted" #1 %%{x}%%',
    )
    assert text.splitlines() == [
        "```mermaid",
        '%%{init: {"themeVariables": {"xyChart": {"plotColorPalette": "#0072B2, #D55E00"}}}}%%',
        "xychart-beta",
        '    title "pass^j quoted 1 %% x %%"',
        '    x-axis "attempts j" [1, 2, 3]',
        '    y-axis "share of rows (%)" 0 --> 100',
        "    line [90.0, 81.0, 72.9]",
        "    line [100.0, 50.0, 25.0]",
        "```",
    ]


def test_mermaid_rejects_ragged_series_and_odd_colors() -> None:
    with pytest.raises(ValueError, match="same"):
        mermaid_curve([Series("a", (0.1, 0.2)), Series("b", (0.1,))], title="t")
    with pytest.raises(ValueError, match="colors"):
        mermaid_curve([Series("a", (0.1,), "red")], title="t")
    with pytest.raises(ValueError, match="at least one"):
        mermaid_curve([], title="t")


def test_mermaid_text_keeps_only_inert_characters() -> None:
    assert mermaid_text('a"b#c;d<e>f`g\nh') == "a b c d e f g h"
    assert mermaid_text("pass^j (%): 1/2, x_y-z") == "pass^j (%): 1/2, x_y-z"


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)  # raises on anything that is not well-formed


def test_svg_curve_places_points_by_value_and_states_them() -> None:
    svg = svg_curve(
        [Series("base", (0.8, 0.6)), Series("cand", (0.7, 0.2), "#D55E00", True)],
        title="t <&>",
    )
    root = parse(svg)
    assert root.attrib["id"] == "chart-curve"
    circles = root.findall(f".//{SVG}circle")
    assert len(circles) == 4
    ys = [float(c.attrib["cy"]) for c in circles]
    assert ys[0] < ys[1]  # 80% is drawn above 60%
    assert ys[3] > ys[1]  # 20% below 60%
    tips = [c.findtext(f"{SVG}title") for c in circles]
    assert tips == [
        "base, j = 1: 80.0%",
        "base, j = 2: 60.0%",
        "cand, j = 1: 70.0%",
        "cand, j = 2: 20.0%",
    ]
    assert root.findtext(f"{SVG}title") == "t <&>"
    dashed = [p for p in root.iter(f"{SVG}polyline") if "stroke-dasharray" in p.attrib]
    assert len(dashed) == 1


def test_svg_curve_draws_intervals_and_a_single_point() -> None:
    root = parse(svg_curve([Series("one", (0.5,), intervals=((0.25, 0.75),))], title="t"))
    assert len(root.findall(f".//{SVG}polyline")) == 0  # one point, no line
    tip = root.find(f".//{SVG}circle/{SVG}title")
    assert tip is not None and tip.text == "one, j = 1: 50.0% (95% CI 25.0%–75.0%)"


def test_transition_counts_add_up_to_the_rows_lost_and_gained() -> None:
    result = failed_scenario()
    counts = transition_counts(result.comparison.rows)
    assert len(counts) == 16
    assert sum(counts.values()) == len(result.rows)
    sc = RowClass.STABLE_CORRECT
    lost = sum(n for (b, c), n in counts.items() if b is sc and c is not sc)
    gained = sum(n for (b, c), n in counts.items() if c is sc and b is not sc)
    assert (lost, gained) == (len(result.comparison.lost), len(result.comparison.gained))
    assert counts[(sc, RowClass.FLIP)] == 3


def test_svg_transition_matrix_prints_every_count() -> None:
    counts = transition_counts(failed_scenario().comparison.rows)
    root = parse(svg_transition_matrix(counts))
    cells = {
        (g.attrib["data-baseline"], g.attrib["data-candidate"]): int(g.attrib["data-count"])
        for g in root.iter(f"{SVG}g")
        if g.attrib.get("class") == "cell"
    }
    assert cells == {(b.value, c.value): counts[(b, c)] for b in CLASS_ORDER for c in CLASS_ORDER}
    drawn = [t.text for g in root.iter(f"{SVG}g") for t in g.iter(f"{SVG}text")]
    assert drawn.count("3") == 1


def test_svg_flip_rates_escapes_labels_and_counts_what_it_leaves_out() -> None:
    bars = [FlipBar(f"<script>x{i}</script>\x00", (0.5, None)) for i in range(5)]
    svg = svg_flip_rates(bars, limit=3)
    root = parse(svg)
    assert "<script>" not in svg and "\x00" not in svg
    groups = [g for g in root.iter(f"{SVG}g") if g.attrib.get("class") == "check"]
    assert len(groups) == 3
    assert groups[0].attrib["data-check"] == "<script>x0</script>\ufffd"
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "… and 2 more checks" in texts
    assert texts.count("not reported") == 3
    assert "50.0%" in texts
    with pytest.raises(ValueError, match="one rate per version"):
        svg_flip_rates([FlipBar("a", (0.1,))])


def test_svg_flip_rates_without_checks_says_so() -> None:
    root = parse(svg_flip_rates([]))
    assert "No intermediate check was reported twice for one row." in [
        t.text for t in root.iter(f"{SVG}text")
    ]


def test_xml_text_escapes_quotes_and_forbidden_characters() -> None:
    assert xml_text('a"<b>&\x01') == "a&quot;&lt;b&gt;&amp;\ufffd"


def bar(estimate: float | None, low: float | None, high: float | None, n: int = 40) -> ErrorBar:
    return ErrorBar(estimate, None if low is None else 0.01, low, high, n)


@pytest.mark.parametrize(
    ("error_bar", "b", "c", "start"),
    [
        (bar(-0.02, -0.05, 0.01), 3, 1, "**Within noise:** the change in mean accuracy could be"),
        (bar(0.1, 0.04, 0.16), 0, 9, "**Beyond noise:** mean accuracy is better on the candidate"),
        (
            bar(-0.1, -0.16, -0.04),
            9,
            0,
            "**Beyond noise:** mean accuracy is worse on the candidate",
        ),
        (bar(0.0, None, None, 1), 0, 0, "**Too few rows to tell a change from noise:** 1 row"),
    ],
)
def test_noise_sentence(error_bar: ErrorBar, b: int, c: int, start: str) -> None:
    paired = PairedComparison(error_bar, b, c, mcnemar_exact_p(b, c), verdict_of(error_bar))
    text = noise_sentence(paired)
    assert text.startswith(start)
    assert f"Stable-correct rows: {c} gained vs {b} lost, exact McNemar p" in text


def test_noise_sentence_numbers() -> None:
    paired = PairedComparison(bar(-0.02, -0.05, 0.01), 9, 0, 0.0039, "within noise")
    assert noise_sentence(paired) == (
        "**Within noise:** the change in mean accuracy could be chance (mean per-row difference "
        "-2.0 pts, 95% CI -5.0 to +1.0 pts over 40 rows). Stable-correct rows: 0 gained vs "
        "9 lost, exact McNemar p = 0.0039."
    )


def test_the_chart_and_transition_table_survive_a_trimmed_comment() -> None:
    tight = render_comment(many_lost_rows(300), marker=MARKER, record=RECORD, limit=8_000)
    assert len(tight) <= 8_000
    assert "```mermaid\n" in tight and "xychart-beta" in tight
    assert "| stable-correct | 0 | 0 | 300 | 0 |" in tight
    assert "Some lists are shortened" in tight
