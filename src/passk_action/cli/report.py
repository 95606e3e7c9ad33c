"""``passk report``: the three numbers side by side for one recorded run (or a result).

Formats: ``md`` (the Markdown report), ``json`` (the same as data), ``html``
(one self-contained page with charts and a sortable row table) and
``junit`` (JUnit XML for any CI system).  For a result, a JUnit test fails
when its row blocks the gate; for a plain run there is no gate, so a row
fails when it is must-not-break (or ratchet-locked) and not stable-correct.

``--format json`` of a result is a report, not the result file again (that
one holds every attempt: gigabytes at scale, and ``passk gate`` reads it)::

    {"gate": {...}, "baseline": {"metrics": {...}}, "candidate": {"metrics": {...}},
     "gained": [ids], "lost": [ids],
     "rows": [one comparison row per dataset row, as in the result file, no attempts],
     "notes": [...], "executions": {...}, "analysis": {error bars, paired comparison,
     pass^j curves, check stability, power}, "spend": {latency, tokens, cost, errors
     per version, and the paired changes}}

The gate is the one recomputed from the recorded attempts, never the one the
file claims.  ``--format json`` of a run is ``{"metrics", "errors_by_reason",
"rows", "analysis", "spend"}`` (``analysis``: that run's error bars, pass^j curve,
check stability and power).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from .. import __version__
from ..core.analysis import Analysis, analyze
from ..core.cost import compare_spend
from ..core.history import History
from ..core.kinds import kind_to_json
from ..core.result import CompareResult
from ..errors import EXIT_OK, UsageError
from ..inputs.config import load_config
from ..report.compare_report import render_compare_report
from ..report.html import render_html_report, render_run_html
from ..report.junit import junit_for_result, junit_for_run
from ..report.run_report import render_run_report, run_report_json
from ..sides.history import history_at
from ..store.artifact import dump_document, gc_paused
from ..store.results import AuditedResult, comparison_row_to_json, read_run_or_result
from .common import add_config_argument, write_output
from .paths import refuse_clobbering

JSON_SHAPE = (
    "--format json prints a report, not the artifact. Of a result: gate, baseline.metrics, "
    "candidate.metrics, gained, lost, rows (the comparison rows, no attempts), notes, "
    "executions, analysis (error bars, paired comparison, pass^j curves, check stability, "
    "power). Of a run: metrics, errors_by_reason, rows, analysis"
)


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "report",
        help="report mean accuracy, pass^k and flip rate of a run artifact or result",
        description="Report mean accuracy, pass^k and flip rate of a run artifact or result. "
        f"{JSON_SHAPE}.",
    )
    parser.add_argument("artifact", help="a run artifact (passk run) or a result (passk compare)")
    parser.add_argument(
        "--format",
        choices=["md", "json", "html", "junit"],
        default="md",
        help="md (default), json (a lean report, not the whole result: see above), "
        "html (self-contained page) or junit (XML for CI)",
    )
    parser.add_argument(
        "--suite",
        default=None,
        help="JUnit suite name, the classname is passk.SUITE (default: the artifact's file name)",
    )
    parser.add_argument(
        "--history",
        default=None,
        metavar="REF",
        help="with --format html: also draw the three numbers over the baselines "
        "committed on REF (e.g. main), read from git as `passk history` does",
    )
    add_config_argument(parser)
    parser.add_argument("--out", default=None, help="write here instead of stdout")
    parser.set_defaults(handler=handle)


def result_report_json(result: CompareResult, analysis: Analysis | None = None) -> dict[str, Any]:
    """The JSON report of a result (shape in the module docstring).

    Built from the comparison rows and the metrics ``evaluate`` already
    derived: no attempt is turned into a dict (at 100,000 rows x k = 5 the
    whole result as dicts was 3.4 GiB).  Rows use the result file's own row
    format, so a tool reading either file reads them the same way.
    """
    cmp = result.comparison
    records = {r.id: r for r in result.rows}
    stats = analysis if analysis is not None else analyze(result)
    return {
        "gate": result.gate.to_json(),
        "baseline": {"metrics": cmp.baseline_metrics.to_json()},
        "candidate": {"metrics": cmp.candidate_metrics.to_json()},
        "gained": list(cmp.gained),
        "lost": list(cmp.lost),
        "rows": [
            comparison_row_to_json(records[r.id], r, result.gate.verdicts.get(r.id))
            for r in cmp.rows
        ],
        "notes": [kind_to_json(note) for note in result.notes],
        "executions": result.executions.to_json(),
        "analysis": stats.to_json(),
        "spend": compare_spend(result.baseline, result.candidate).to_json(),
    }


def dump_report(doc: dict[str, Any]) -> str:
    """Indented JSON, except ``rows``: one compact row per line.

    ``json.dumps(indent=2)`` runs the pure-Python encoder; a hundred
    thousand rows through it took seconds, while one C-encoded line per row
    is as readable and as diffable.
    """
    raw = {
        key: json.dumps(value, ensure_ascii=False, indent=2, allow_nan=False).replace("\n", "\n  ")
        for key, value in doc.items()
        if key != "rows"
    }
    return dump_document(doc, line_lists=("rows",), raw=raw)


def _history(args: argparse.Namespace) -> History | None:
    """The baselines' history on ``--history REF``, for the HTML report; None without it."""
    if args.history is None:
        return None
    config = load_config(Path(args.config)).config
    return history_at(config.path.parent, config.baseline.artifact, args.history)


def handle(args: argparse.Namespace) -> int:
    # A large result is millions of objects and no garbage: the collector
    # would only rescan them while the report is computed.
    with gc_paused():
        return _report(args)


def _report(args: argparse.Namespace) -> int:
    path = Path(args.artifact)
    reads = {f"the report's input ({path})": path}
    if args.history is not None:
        reads[f"the config ({args.config})"] = Path(args.config)
    refuse_clobbering(reads, {"--out": None if args.out == "-" else args.out})
    if args.history is not None and args.format != "html":
        raise UsageError(
            "--history draws a chart: it needs --format html",
            where="--history",
            hint="add --format html, or see `passk history` for the history as text",
        )
    loaded = read_run_or_result(path)
    suite = args.suite if args.suite is not None else path.stem
    if isinstance(loaded, AuditedResult):
        result = loaded.result
        if args.format == "json":
            text = dump_report(result_report_json(result))
        elif args.format == "html":
            text = render_html_report(result, history=_history(args))
        elif args.format == "junit":
            text = junit_for_result(result, suite=suite)
        else:
            text = render_compare_report(result)
    else:
        run = loaded
        if args.format == "json":
            text = dump_report(run_report_json(run))
        elif args.format == "html":
            text = render_run_html(run, history=_history(args))
        elif args.format == "junit":
            text = junit_for_run(run, suite=suite)
        else:
            text = render_run_report(run, reader=__version__)
    write_output(args.out, text, markdown=args.format == "md")
    return EXIT_OK
