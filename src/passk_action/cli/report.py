"""``passk report``: the three numbers side by side for one recorded run (or a result).

Formats: ``md`` (the Markdown report), ``json`` (the same as data), ``html``
(one self-contained page with charts and a sortable row table) and
``junit`` (JUnit XML for any CI system).  For a result, a JUnit test fails
when its row blocks the gate; for a plain run there is no gate, so a row
fails when it is must-not-break (or ratchet-locked) and not stable-correct.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..artifact import gc_paused
from ..core.html import render_html_report, render_run_html
from ..core.junit import junit_for_result, junit_for_run
from ..core.render import render_compare_report, render_run_report, run_report_json
from ..errors import EXIT_OK
from ..results import AuditedResult, read_run_or_result, result_to_json
from .common import write_output


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "report", help="report mean accuracy, pass^k and flip rate of a run artifact or result"
    )
    parser.add_argument("artifact", help="a run artifact (passk run) or a result (passk compare)")
    parser.add_argument(
        "--format",
        choices=["md", "json", "html", "junit"],
        default="md",
        help="md (default), json, html (self-contained page) or junit (XML for CI)",
    )
    parser.add_argument(
        "--suite",
        default=None,
        help="JUnit suite name, the classname is passk.SUITE (default: the artifact's file name)",
    )
    parser.add_argument("--out", default=None, help="write here instead of stdout")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    # A large result is millions of objects and no garbage: the collector
    # would only rescan them while the report is computed.
    with gc_paused():
        return _report(args)


def _report(args: argparse.Namespace) -> int:
    path = Path(args.artifact)
    loaded = read_run_or_result(path)
    suite = args.suite if args.suite is not None else path.stem
    if isinstance(loaded, AuditedResult):
        result = loaded.result
        if args.format == "json":
            text = json.dumps(result_to_json(result), ensure_ascii=False, indent=2)
        elif args.format == "html":
            text = render_html_report(result)
        elif args.format == "junit":
            text = junit_for_result(result, suite=suite)
        else:
            text = render_compare_report(result)
    else:
        run = loaded
        if args.format == "json":
            text = json.dumps(run_report_json(run), ensure_ascii=False, indent=2)
        elif args.format == "html":
            text = render_run_html(run)
        elif args.format == "junit":
            text = junit_for_run(run, suite=suite)
        else:
            text = render_run_report(run)
    write_output(args.out, text)
    return EXIT_OK
