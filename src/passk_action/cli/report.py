"""``passk report``: the three numbers side by side for one recorded run (or a result)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..artifact import parse_json_file, run_from_json
from ..core.render import render_compare_report, render_run_report, run_report_json
from ..errors import EXIT_OK
from ..results import RESULT_KIND, result_from_json, result_to_json
from .common import write_output


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "report", help="report mean accuracy, pass^k and flip rate of a run artifact or result"
    )
    parser.add_argument("artifact", help="a run artifact (passk run) or a result (passk compare)")
    parser.add_argument("--format", choices=["md", "json"], default="md")
    parser.add_argument("--out", default=None, help="write here instead of stdout")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    path = Path(args.artifact)
    doc = parse_json_file(path)
    if isinstance(doc, dict) and doc.get("kind") == RESULT_KIND:
        result = result_from_json(doc, str(path)).result
        if args.format == "json":
            text = json.dumps(result_to_json(result), ensure_ascii=False, indent=2)
        else:
            text = render_compare_report(result)
    else:
        run = run_from_json(doc, str(path))
        if args.format == "json":
            text = json.dumps(run_report_json(run), ensure_ascii=False, indent=2)
        else:
            text = render_run_report(run)
    write_output(args.out, text)
    return EXIT_OK
