"""Pictures of a comparison: Mermaid and tables for Markdown, inline SVG for the HTML report.

Pure: numbers and labels in, text out.  Two outputs, two audiences:

- :func:`mermaid_curve` writes a Mermaid ``xychart-beta`` block, which GitHub
  renders inside a comment.  Mermaid has its own syntax (quotes end a
  title, ``#`` starts an entity, ``%%`` a directive), so every label goes
  through :func:`mermaid_text`, which keeps only characters that are inert
  there.  No value from a user or an agent is ever drawn in Mermaid.
- The ``svg_*`` builders write inline SVG for the self-contained HTML report:
  no external font, image, style sheet or script, so the page works under a
  ``default-src 'none'`` Content-Security-Policy.  Every text node and
  attribute value goes through :func:`xml_text` (control characters that XML
  forbids become U+FFFD, then ``html.escape``), so a check named
  ``<script>`` is drawn, never run.

Colors come from the Okabe-Ito palette, which stays distinguishable under
the common forms of color blindness; every chart also states its values as
text (tooltips and labels), so color is never the only carrier.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..core.analysis import Analysis
from ..core.diff import RowComparison
from ..core.model import RowClass
from ..core.pass_curve import PassCurve

BASELINE_COLOR = "#0072B2"
"""Okabe-Ito blue."""
CANDIDATE_COLOR = "#D55E00"
"""Okabe-Ito vermillion."""
GAINED_COLOR = "#009E73"
LOST_COLOR = "#D55E00"
OTHER_COLOR = "#56B4E9"
SAME_COLOR = "#6B7280"

CLASS_ORDER = (
    RowClass.STABLE_CORRECT,
    RowClass.STABLE_WRONG,
    RowClass.FLIP,
    RowClass.UNCLASSIFIED,
)
"""Rows and columns of every transition table and matrix, best class first."""

CLASS_RANK = {row_class: len(CLASS_ORDER) - 1 - i for i, row_class in enumerate(CLASS_ORDER)}
"""The same order as a sort key: unclassified 0 … stable-correct 3, so ascending is worst first."""

FLIP_BARS_LIMIT = 30
"""Checks drawn in the flip-rate chart; the rest are counted in a caption."""

LABEL_LEN = 28
"""Characters of a check name drawn next to its bars (the full name is in the tooltip)."""


# --- escaping --------------------------------------------------------------

# XML 1.0 allows tab, newline, carriage return and everything from U+0020 up,
# except the surrogates and U+FFFE/U+FFFF.  Anything else makes the document
# ill-formed (a NUL in a check name would break the whole SVG).
_XML_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_safe(text: str) -> str:
    """``text`` with every character XML 1.0 forbids replaced by U+FFFD."""
    return _XML_FORBIDDEN.sub("\ufffd", text)


def xml_text(text: str) -> str:
    """``text`` safe as an HTML/SVG text node *and* a quoted attribute value."""
    return html.escape(xml_safe(text), quote=True)


_MERMAID_UNSAFE = re.compile(r"[^A-Za-z0-9 ^@.,:()%/+_\-]")


def mermaid_text(text: str) -> str:
    """A label that cannot end a Mermaid string or start an entity or directive.

    Keeps letters, digits, spaces and ``^@.,:()%/+_-``; anything else becomes
    a space, and whitespace runs collapse.  Only our own labels reach
    Mermaid, so this is a guard, not a transliteration.
    """
    return " ".join(_MERMAID_UNSAFE.sub(" ", text).split())


# --- the data behind the pictures ---------------------------------------------


@dataclass(frozen=True, slots=True)
class Series:
    """One line of a curve chart: a share (0..1) for each x = 1, 2, ...

    ``intervals`` optionally gives a (low, high) error bar for each point,
    drawn in the SVG only (Mermaid cannot draw them).  ``dashed`` marks a
    secondary line (pass@j next to pass^j).
    """

    label: str
    values: tuple[float, ...]
    color: str = BASELINE_COLOR
    dashed: bool = False
    intervals: tuple[tuple[float, float], ...] | None = None


@dataclass(frozen=True, slots=True)
class FlipBar:
    """One intermediate check in the flip-rate chart: its rate on each version drawn.

    ``rates`` follows the chart's ``versions``; ``None`` means that version
    never reported the check on two valid attempts of a row (nothing to
    draw), which is different from a rate of 0.
    """

    label: str
    rates: tuple[float | None, ...]


COMPARE_VERSIONS = (("baseline", BASELINE_COLOR), ("candidate", CANDIDATE_COLOR))


def transition_counts(rows: Iterable[RowComparison]) -> dict[tuple[RowClass, RowClass], int]:
    """Rows per (baseline class, candidate class), from the k main attempts of each.

    The main-attempt classes are the ones "gained" and "lost" are defined on,
    so the table's stable-correct row and column add up to those lists.
    Every one of the 16 pairs is present, zero or not.
    """
    counts = {(b, c): 0 for b in CLASS_ORDER for c in CLASS_ORDER}
    for row in rows:
        counts[(row.baseline_class, row.candidate_class)] += 1
    return counts


# --- Mermaid -------------------------------------------------------------------


def _pct(value: float) -> str:
    return f"{value * 100:.1f}"


def _pct_or_na(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{_pct(value)}%"


def _runs(values: Sequence[float]) -> list[list[int]]:
    """The points (1-based) of each stretch of values with no NaN: one line each."""
    runs: list[list[int]] = [[]]
    for j, value in enumerate(values, 1):
        if math.isnan(value):
            if runs[-1]:
                runs.append([])
        else:
            runs[-1].append(j)
    return [run for run in runs if run]


def mermaid_curve(
    series: Sequence[Series],
    *,
    title: str,
    x_label: str = "attempts j",
    y_label: str = "share of rows (%)",
) -> str:
    """A fenced Mermaid ``xychart-beta`` block with one line per series.

    The y axis is fixed at 0..100 % so two charts (or two lines) are never
    made to look different by rescaling.  Line colors follow the series
    (through the ``plotColorPalette`` theme variable); Mermaid's xychart has
    no legend, so the caller states which color is which next to the chart.
    """
    if not series:
        raise ValueError("a curve needs at least one series")
    width = len(series[0].values)
    if width == 0 or any(len(s.values) != width for s in series):
        raise ValueError("every series needs the same, non-zero number of points")
    palette = ", ".join(s.color for s in series)
    if not re.fullmatch(r"#[0-9A-Fa-f]{6}(, #[0-9A-Fa-f]{6})*", palette):
        raise ValueError(f"series colors must be #rrggbb, got {palette!r}")
    lines = [
        "```mermaid",
        '%%{init: {"themeVariables": {"xyChart": {"plotColorPalette": "' + palette + '"}}}}%%',
        "xychart-beta",
        f'    title "{mermaid_text(title)}"',
        f'    x-axis "{mermaid_text(x_label)}" [{", ".join(str(j) for j in range(1, width + 1))}]',
        f'    y-axis "{mermaid_text(y_label)}" 0 --> 100',
    ]
    lines += [f"    line [{', '.join(_pct(v) for v in s.values)}]" for s in series]
    lines.append("```")
    return "\n".join(lines)


# --- SVG -------------------------------------------------------------------------

_FONT = "font-family=\"system-ui, -apple-system, 'Segoe UI', sans-serif\""


def _num(value: float) -> str:
    """Coordinates with at most one decimal: stable text for golden files."""
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


def _svg_open(chart_id: str, width: float, height: float, title: str, desc: str) -> list[str]:
    safe_id = xml_text(chart_id)
    return [
        f'<svg id="{safe_id}" class="chart" xmlns="http://www.w3.org/2000/svg" '
        f'viewBox="0 0 {_num(width)} {_num(height)}" width="{_num(width)}" '
        f'height="{_num(height)}" role="img" aria-labelledby="{safe_id}-title {safe_id}-desc" '
        f'{_FONT} font-size="12">',
        f'<title id="{safe_id}-title">{xml_text(title)}</title>',
        f'<desc id="{safe_id}-desc">{xml_text(desc)}</desc>',
    ]


def svg_curve(
    series: Sequence[Series],
    *,
    chart_id: str = "chart-curve",
    title: str,
    x_label: str = "attempts j",
    y_label: str = "share of rows",
    x_ticks: Sequence[str] | None = None,
) -> str:
    """A line chart of shares over j = 1..n, y fixed at 0..100 %, with a legend.

    Each point carries a tooltip with its exact value (and interval); the
    description lists every value, so a screen reader gets the numbers too.
    ``x_ticks`` names the points instead of their numbers (e.g. commits); a
    NaN value is a point with no value, drawn as a gap in its line.
    """
    if not series:
        raise ValueError("a curve needs at least one series")
    n = len(series[0].values)
    if n == 0 or any(len(s.values) != n for s in series):
        raise ValueError("every series needs the same, non-zero number of points")
    if x_ticks is not None and len(x_ticks) != n:
        raise ValueError("x_ticks needs one name per point")
    ticks = [str(j) for j in range(1, n + 1)] if x_ticks is None else list(x_ticks)
    at = "j = " if x_ticks is None else ""
    legend, legend_bottom = _curve_legend_places(series)
    frame = _CurveFrame(n=n, top=legend_bottom + 22)
    short = at.replace(" ", "")
    desc = "; ".join(
        f"{s.label}: "
        + ", ".join(f"{short}{ticks[j - 1]} {_pct_or_na(v)}" for j, v in enumerate(s.values, 1))
        for s in series
    )
    out = _svg_open(chart_id, frame.width, frame.height, title, desc)
    out += _curve_axes(frame, ticks, x_label, y_label)
    for index, s in enumerate(series):
        out += _curve_line(frame, index, s, [f"{at}{tick}" for tick in ticks])
    for lx, ly, s in legend:
        dash = ' stroke-dasharray="6 4"' if s.dashed else ""
        out.append(
            f'<line x1="{_num(lx)}" y1="{_num(ly)}" x2="{_num(lx + 24)}" y2="{_num(ly)}" '
            f'stroke="{xml_text(s.color)}" stroke-width="2.5"{dash}/>'
        )
        out.append(
            f'<text x="{_num(lx + 30)}" y="{_num(ly + 4)}" fill="#111827">'
            f"{xml_text(s.label)}</text>"
        )
    out.append("</svg>")
    return "\n".join(out)


@dataclass(frozen=True)
class _CurveFrame:
    """Where a curve's plot sits: ``n`` points across, shares 0..1 up, below the legend."""

    n: int
    top: float
    width: float = 640.0
    left: float = 56.0
    right: float = 16.0
    bottom: float = 48.0

    @property
    def height(self) -> float:
        return self.top + 232 + self.bottom

    @property
    def plot_w(self) -> float:
        return self.width - self.left - self.right

    @property
    def plot_h(self) -> float:
        return self.height - self.top - self.bottom

    def x_at(self, j: int) -> float:
        if self.n == 1:
            return self.left + self.plot_w / 2
        return self.left + self.plot_w * (j - 1) / (self.n - 1)

    def y_at(self, share: float) -> float:
        return self.top + self.plot_h * (1 - min(max(share, 0.0), 1.0))


def _curve_legend_places(
    series: Sequence[Series],
) -> tuple[list[tuple[float, float, Series]], float]:
    """Each legend entry's place, and the last row's y: entries flow left to right and
    wrap, so long labels never clip."""
    frame = _CurveFrame(n=1, top=0.0)
    legend: list[tuple[float, float, Series]] = []
    x, y = frame.left, 18.0
    for s in series:
        item_w = 30 + 6.8 * len(s.label) + 20
        if x > frame.left and x + item_w > frame.width - frame.right:
            x, y = frame.left, y + 18
        legend.append((x, y, s))
        x += item_w
    return legend, y


def _curve_axes(frame: _CurveFrame, ticks: Sequence[str], x_label: str, y_label: str) -> list[str]:
    """The background, the grid at every 25 %, the x axis's labels and both axis titles."""
    left, width, right, top = frame.left, frame.width, frame.right, frame.top
    plot_w, plot_h, height = frame.plot_w, frame.plot_h, frame.height
    out = [f'<rect x="0" y="0" width="{_num(width)}" height="{_num(height)}" fill="#ffffff"/>']
    for tick in (0, 25, 50, 75, 100):
        y = frame.y_at(tick / 100)
        out.append(
            f'<line x1="{_num(left)}" y1="{_num(y)}" x2="{_num(width - right)}" y2="{_num(y)}" '
            f'stroke="#e5e7eb"/>'
        )
        out.append(
            f'<text x="{_num(left - 6)}" y="{_num(y + 4)}" text-anchor="end" '
            f'fill="#374151">{tick}%</text>'
        )
    n = frame.n
    step = max(1, -(-n // 12))  # at most ~12 labels on the x axis
    for j in range(1, n + 1):
        if (j - 1) % step and j != n:
            continue
        out.append(
            f'<text x="{_num(frame.x_at(j))}" y="{_num(top + plot_h + 16)}" text-anchor="middle" '
            f'fill="#374151">{xml_text(ticks[j - 1])}</text>'
        )
    out.append(
        f'<text x="{_num(left + plot_w / 2)}" y="{_num(height - 10)}" text-anchor="middle" '
        f'fill="#111827">{xml_text(x_label)}</text>'
    )
    out.append(
        f'<text transform="translate(14 {_num(top + plot_h / 2)}) rotate(-90)" '
        f'text-anchor="middle" fill="#111827">{xml_text(y_label)}</text>'
    )
    return out


def _curve_line(frame: _CurveFrame, index: int, s: Series, names: Sequence[str]) -> list[str]:
    """One series: its line broken at gaps, a point with its tooltip (``names`` the
    points') and its interval at every value."""
    x_at, y_at = frame.x_at, frame.y_at
    color = xml_text(s.color)
    dash = ' stroke-dasharray="6 4"' if s.dashed else ""
    out = [f'<g class="series series-{index}" data-label="{xml_text(s.label)}">']
    for run in _runs(s.values):
        points = " ".join(f"{_num(x_at(j))},{_num(y_at(s.values[j - 1]))}" for j in run)
        if len(run) > 1:
            out.append(
                f'<polyline points="{points}" fill="none" stroke="{color}" '
                f'stroke-width="2.5"{dash}/>'
            )
    for j, v in enumerate(s.values, 1):
        if math.isnan(v):
            continue
        tip = f"{s.label}, {names[j - 1]}: {_pct(v)}%"
        if s.intervals is not None:
            low, high = s.intervals[j - 1]
            tip += f" (95% CI {_pct(low)}%–{_pct(high)}%)"
            out.append(
                f'<line x1="{_num(x_at(j))}" y1="{_num(y_at(low))}" x2="{_num(x_at(j))}" '
                f'y2="{_num(y_at(high))}" stroke="{color}" stroke-width="1.5"/>'
            )
        out.append(
            f'<circle cx="{_num(x_at(j))}" cy="{_num(y_at(v))}" r="4" fill="{color}">'
            f"<title>{xml_text(tip)}</title></circle>"
        )
    out.append("</g>")
    return out


def _cell_color(baseline: RowClass, candidate: RowClass) -> str:
    if baseline is candidate:
        return SAME_COLOR
    if candidate is RowClass.STABLE_CORRECT:
        return GAINED_COLOR
    if baseline is RowClass.STABLE_CORRECT:
        return LOST_COLOR
    return OTHER_COLOR


def svg_transition_matrix(
    counts: Mapping[tuple[RowClass, RowClass], int],
    *,
    chart_id: str = "chart-transitions",
    title: str = "Rows by baseline class (rows) and candidate class (columns)",
) -> str:
    """A 4×4 heat map of row counts: baseline class down, candidate class across.

    Green cells are rows gained (into stable-correct), vermillion rows lost
    (out of stable-correct), gray rows that kept their class, light blue the
    other moves.  Shade grows with the count; every cell prints its count.
    """
    size, left, top = 88.0, 128.0, 58.0
    width = left + size * len(CLASS_ORDER) + 16
    height = top + size * len(CLASS_ORDER) + 16
    peak = max(counts.values(), default=0)
    desc = "; ".join(
        f"{b.value} to {c.value}: {counts.get((b, c), 0)}" for b in CLASS_ORDER for c in CLASS_ORDER
    )
    out = _svg_open(chart_id, width, height, title, desc)
    out.append(f'<rect x="0" y="0" width="{_num(width)}" height="{_num(height)}" fill="#ffffff"/>')
    out.append(
        f'<text x="{_num(left + size * 2)}" y="14" text-anchor="middle" fill="#111827" '
        f'font-weight="600">candidate →</text>'
    )
    out.append(
        f'<text transform="translate(14 {_num(top + size * 2)}) rotate(-90)" '
        f'text-anchor="middle" fill="#111827" font-weight="600">baseline →</text>'
    )
    for i, cls in enumerate(CLASS_ORDER):
        out.append(
            f'<text x="{_num(left + size * i + size / 2)}" y="{_num(top - 10)}" '
            f'text-anchor="middle" fill="#374151">{xml_text(cls.value)}</text>'
        )
        out.append(
            f'<text x="{_num(left - 8)}" y="{_num(top + size * i + size / 2 + 4)}" '
            f'text-anchor="end" fill="#374151">{xml_text(cls.value)}</text>'
        )
    for r, base in enumerate(CLASS_ORDER):
        for c, cand in enumerate(CLASS_ORDER):
            count = counts.get((base, cand), 0)
            x, y = left + size * c, top + size * r
            opacity = 0.0 if not count or not peak else 0.15 + 0.85 * count / peak
            dark = opacity > 0.55
            noun = "row" if count == 1 else "rows"
            tip = f"{count} {noun}: baseline {base.value} → candidate {cand.value}"
            out.append(
                f'<g class="cell" data-baseline="{base.value}" data-candidate="{cand.value}" '
                f'data-count="{count}"><title>{xml_text(tip)}</title>'
                f'<rect x="{_num(x)}" y="{_num(y)}" width="{_num(size - 2)}" '
                f'height="{_num(size - 2)}" fill="#f9fafb" stroke="#e5e7eb"/>'
                f'<rect x="{_num(x)}" y="{_num(y)}" width="{_num(size - 2)}" '
                f'height="{_num(size - 2)}" fill="{_cell_color(base, cand)}" '
                f'fill-opacity="{opacity:.2f}"/>'
                f'<text x="{_num(x + size / 2 - 1)}" y="{_num(y + size / 2 + 5)}" '
                f'text-anchor="middle" font-size="16" '
                f'fill="{"#ffffff" if dark else "#111827"}">{count}</text></g>'
            )
    out.append("</svg>")
    return "\n".join(out)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def svg_flip_rates(
    bars: Sequence[FlipBar],
    *,
    versions: Sequence[tuple[str, str]] = COMPARE_VERSIONS,
    chart_id: str = "chart-check-flips",
    title: str = "How often each intermediate check flipped within a row",
    limit: int = FLIP_BARS_LIMIT,
) -> str:
    """Horizontal bars: for each check, its flip rate on each version (name, color).

    Checks are drawn in the order given (the caller sorts them, worst first);
    beyond ``limit`` a caption counts the rest.  A version that never
    reported a check draws no bar and says "not reported".
    """
    if any(len(b.rates) != len(versions) for b in bars):
        raise ValueError("every bar needs one rate per version")
    shown = list(bars[: max(limit, 0)])
    hidden = len(bars) - len(shown)
    left, right, top, bar_h = 200.0, 70.0, 36.0, 12.0
    group = bar_h * len(versions) + 4 * len(versions) + 6
    width = 640.0
    plot_w = width - left - right
    height = top + group * max(len(shown), 1) + (44 if hidden else 24)

    def rates_text(bar: FlipBar) -> str:
        return ", ".join(
            f"{name} {_rate(r)}" for (name, _), r in zip(versions, bar.rates, strict=True)
        )

    desc = "; ".join(f"{b.label}: {rates_text(b)}" for b in bars)
    out = _svg_open(chart_id, width, height, title, desc or "no intermediate checks recorded")
    out.append(f'<rect x="0" y="0" width="{_num(width)}" height="{_num(height)}" fill="#ffffff"/>')
    x = left
    for name, color in versions:
        out.append(f'<rect x="{_num(x)}" y="10" width="12" height="12" fill="{xml_text(color)}"/>')
        out.append(f'<text x="{_num(x + 18)}" y="20" fill="#111827">{xml_text(name)}</text>')
        x += 30 + 7 * len(name) + 24
    if not shown:
        out.append(
            f'<text x="{_num(left)}" y="{_num(top + 20)}" fill="#374151">'
            "No intermediate check was reported twice for one row.</text>"
        )
    for i, bar in enumerate(shown):
        y = top + group * i
        out.append(f'<g class="check" data-check="{xml_text(bar.label)}">')
        out.append(f"<title>{xml_text(f'{bar.label}: {rates_text(bar)}')}</title>")
        out.append(
            f'<text x="{_num(left - 8)}" y="{_num(y + 4 + bar_h)}" text-anchor="end" '
            f'fill="#111827">{xml_text(_clip(bar.label, LABEL_LEN))}</text>'
        )
        for v, ((_, color), rate) in enumerate(zip(versions, bar.rates, strict=True)):
            offset = 2 + v * (bar_h + 4)
            if rate is None:
                out.append(
                    f'<text x="{_num(left + 2)}" y="{_num(y + offset + 10)}" font-size="10" '
                    f'fill="#6b7280">not reported</text>'
                )
                continue
            bar_w = plot_w * min(max(rate, 0.0), 1.0)
            out.append(
                f'<rect x="{_num(left)}" y="{_num(y + offset)}" width="{_num(bar_w)}" '
                f'height="{_num(bar_h)}" fill="{xml_text(color)}"/>'
            )
            out.append(
                f'<text x="{_num(left + bar_w + 4)}" y="{_num(y + offset + 10)}" '
                f'font-size="10" fill="#374151">{_pct(rate)}%</text>'
            )
        out.append("</g>")
    if hidden:
        out.append(
            f'<text x="{_num(left)}" y="{_num(height - 12)}" fill="#374151">'
            f"… and {hidden} more {'check' if hidden == 1 else 'checks'}</text>"
        )
    out.append("</svg>")
    return "\n".join(out)


def _rate(value: float | None) -> str:
    return "not reported" if value is None else f"{_pct(value)}%"


# --- the pass^j curve and the class transitions, as Markdown --------------------------

CURVE_TITLE = "pass^j: share of rows right on all of j attempts"


def curve_points(analysis: Analysis) -> int:
    """How many j the two curves share: both versions are drawn over the same range."""
    return min(len(analysis.baseline.curve.points), len(analysis.candidate.curve.points))


def curve_series(analysis: Analysis, *, pass_at: bool = False) -> list[Series]:
    """pass^j (and optionally pass@j) of both versions over their common j = 1..J."""
    width = curve_points(analysis)

    def values(curve: PassCurve, at: bool) -> tuple[float, ...]:
        return tuple(p.pass_at if at else p.pass_hat for p in curve.points[:width])

    out = [
        Series("baseline pass^j", values(analysis.baseline.curve, False), BASELINE_COLOR),
        Series("candidate pass^j", values(analysis.candidate.curve, False), CANDIDATE_COLOR),
    ]
    if pass_at:
        out += [
            Series("baseline pass@j", values(analysis.baseline.curve, True), BASELINE_COLOR, True),
            Series(
                "candidate pass@j", values(analysis.candidate.curve, True), CANDIDATE_COLOR, True
            ),
        ]
    return out


def curve_lines(analysis: Analysis) -> list[str]:
    """The Mermaid pass^j chart and the line saying which color is which."""
    if curve_points(analysis) == 0:
        return []
    return [
        "",
        mermaid_curve(curve_series(analysis), title=CURVE_TITLE),
        "",
        "Blue: baseline · vermillion: candidate. A line that falls faster as j grows "
        "means answers that are right less consistently.",
    ]


def transition_lines(rows: Sequence[RowComparison]) -> list[str]:
    """Rows counted by baseline class (down) and candidate class (across), as a Markdown table."""
    if not rows:
        return []
    counts = transition_counts(rows)
    lines = [
        "",
        "| baseline ↓ · candidate → | " + " | ".join(c.value for c in CLASS_ORDER) + " |",
        "|---|" + "---:|" * len(CLASS_ORDER),
    ]
    for base in CLASS_ORDER:
        cells = " | ".join(str(counts[(base, cand)]) for cand in CLASS_ORDER)
        lines.append(f"| {base.value} | {cells} |")
    lines += [
        "",
        "Rows by class over the k main attempts; off the diagonal, rows that changed class. "
        "The stable-correct row counts the rows lost, the stable-correct column the rows gained.",
    ]
    return lines
