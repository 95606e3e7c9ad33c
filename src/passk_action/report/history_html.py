"""The baselines' history drawn for the HTML report: the three numbers over time, row by row.

A section for :func:`.html.render_html_report` and a page of its own for
``passk history --html``: a line chart of mean accuracy, pass^k and flip
rate over the versions of the baseline (oldest left, as time runs), then
the rows that flipped, joined or left, each with one badge per version.
Pure: a :class:`History` in, HTML out; every value through
:func:`.charts.xml_text` where placed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..core.history import CODES, History, RowHistory
from .charts import CANDIDATE_COLOR, GAINED_COLOR, Series, svg_curve, xml_text
from .history import MOVED_TITLE, on_branch, summary_line
from .history import notes as history_notes
from .html_page import page
from .phrases import plural

CHART_TITLE = "The three numbers over the baselines"
ROWS_SHOWN = 200
"""Rows listed per table; the rest are counted."""


def _share(value: float | None) -> float:
    return math.nan if value is None else value


def history_chart(history: History) -> str | None:
    """Mean accuracy, pass^k and flip rate of each baseline, oldest first; None without any."""
    points = history.baselines[::-1]
    if not points:
        return None
    series = [
        Series("mean accuracy", tuple(_share(p.metrics.mean_accuracy) for p in points)),
        Series("pass^k", tuple(_share(p.metrics.pass_k) for p in points), GAINED_COLOR),
        Series(
            "flip rate (lower is better)",
            tuple(_share(p.metrics.flip_rate) for p in points),
            CANDIDATE_COLOR,
            dashed=True,
        ),
    ]
    return svg_curve(
        series,
        chart_id="chart-history",
        title=f"{CHART_TITLE} {on_branch(history)}",
        x_label="baseline (commit), oldest to newest",
        y_label="share",
        x_ticks=[p.commit[:7] for p in points],
    )


def _badges(row: RowHistory, history: History) -> str:
    """One badge per version, oldest first, titled with its commit and class."""
    out = []
    for point, row_class in zip(history.baselines[::-1], row.classes()[::-1], strict=True):
        if row_class is None:
            title = xml_text(f"{point.commit[:7]}: absent")
            out.append(f'<span class="cls muted" title="{title}">·</span>')
        else:
            letter = CODES[row_class]
            out.append(
                f'<span class="cls cls-{row_class.value}" '
                f'title="{xml_text(point.commit[:7])}: {row_class.value}">{letter}</span>'
            )
    return "".join(out)


def _rows_table(title: str, rows: Sequence[RowHistory], history: History) -> list[str]:
    if not rows:
        return [f"<h3>{xml_text(title)} (0)</h3>"]
    out = [
        f"<h3>{xml_text(title)} ({len(rows)})</h3>",
        "<table><thead><tr><th>row</th><th>class per baseline, oldest to newest</th>"
        "<th>locked</th></tr></thead><tbody>",
    ]
    for row in rows[:ROWS_SHOWN]:
        out.append(
            f"<tr><td><code>{xml_text(row.id)}</code></td><td>{_badges(row, history)}</td>"
            f"<td>{'yes' if row.locked else ''}</td></tr>"
        )
    out.append("</tbody></table>")
    if len(rows) > ROWS_SHOWN:
        out.append(f'<p class="muted">… and {plural(len(rows) - ROWS_SHOWN, "more row")}.</p>')
    return out


def history_section(history: History) -> str:
    """``<section id="history">``: the chart, what limited the history, the rows that moved."""
    where = on_branch(history)
    out = [f'<section id="history"><h2>History {xml_text(where)}</h2>']
    out.append(f"<p>{xml_text(summary_line(history).removeprefix('passk: '))}.</p>")
    for note in history_notes(history):
        out.append(f'<p class="muted">{xml_text(note[0].upper() + note[1:])}.</p>')
    chart = history_chart(history)
    if chart is not None:
        out.append(
            f"<figure>{chart}<figcaption>Each point is one version of the committed baseline "
            "(hover for its value). Solid: higher is better; dashed: the flip rate, lower is "
            "better.</figcaption></figure>"
        )
        out += _rows_table(MOVED_TITLE, history.moved(), history)
        out += _rows_table("Rows that are new", history.joined(), history)
        out += _rows_table("Rows that left the dataset", history.left(), history)
        exits = history.ratchet_exits
        out.append(f"<h3>Rows that left the ratchet ({len(exits)})</h3>")
        if exits:
            out.append("<ul>")
            for e in exits:
                gone = "it left the dataset" if e.left_dataset else "still in the dataset"
                out.append(
                    f"<li><code>{xml_text(e.id)}</code> at <code>{xml_text(e.commit[:7])}</code>"
                    f": {gone}</li>"
                )
            out.append("</ul>")
    out.append("</section>")
    return "\n".join(out)


def render_history_html(history: History) -> str:
    """``passk history --html``: the history section as a page of its own."""
    return page(
        f"passk: history {on_branch(history)}", [("history", "History")], [history_section(history)]
    )
