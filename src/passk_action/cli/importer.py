"""``passk import``: a passk run artifact from another harness's repeated trials.

``passk import --from tau-bench|inspect|promptfoo FILE... --out run.json``
maps results that already hold several trials per task (tau-bench
``--num-trials``, Inspect ``--epochs``, promptfoo ``--repeat``) to a run, so
a team can gate without running anything again.  The mapping is documented
in :mod:`passk_action.importers`.  ``--dataset-out rows.jsonl`` writes the
dataset the run's digest matches: ``passk compare --candidate`` needs it as
``dataset:`` in ``passk.yml``.

Errored trials are scored as the harness scores them (``--errors harness``,
the default, reproduces its headline numbers) or as passk does (``--errors
passk``: an error is never a decision); the run records which.
``--concat-runs`` joins files that are separate runs numbering their
trials alike (two ``tau-bench --num-trials 3`` runs give 6 trials per task);
without it such trials are duplicates and imported once.

Prints one summary line (with several files, also how many trials each
task has and from how many of them) and, when trials errored, a second line
with the headline numbers under the convention used and the other one;
every entry it could not map, and every trial seen twice (the same task and
trial number, in one file or two), goes to stderr with its file and index.
Exits 2 when nothing could be imported.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .. import __version__
from ..core.model import Version
from ..engine.session import now_iso
from ..errors import EXIT_OK, UsageError
from ..importers import ERROR_CONVENTIONS, HARNESS, ImportOptions, dataset_jsonl
from ..importers.reader import PARSERS, import_files
from ..store.artifact import gc_paused, write_run, write_text_atomic
from .output import warn
from .paths import refuse_clobbering

SHOWN = 20
"""Skipped entries printed one per line before the rest is summarized."""


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "import",
        help="turn tau-bench, Inspect or promptfoo results with repeated trials into a run",
    )
    parser.add_argument(
        "--from", dest="source", required=True, choices=sorted(PARSERS), help="the input format"
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="result files, in trial order")
    parser.add_argument("--out", required=True, help="where to write the run artifact")
    parser.add_argument(
        "--dataset-out",
        default=None,
        help="also write the imported rows as a passk dataset (JSONL) the run matches",
    )
    parser.add_argument(
        "--version",
        dest="agent_version",
        choices=[v.value for v in Version],
        default=Version.CANDIDATE.value,
        help="which side the run is (default: candidate)",
    )
    parser.add_argument(
        "--k", type=int, default=None, help="k (default: the fewest trials of any task, >= 2)"
    )
    parser.add_argument(
        "--scorer", default=None, help="Inspect: the scorer that grades (default: the first)"
    )
    parser.add_argument(
        "--prompt-idx",
        type=int,
        default=None,
        help="promptfoo: the promptIdx to import when the file has several",
    )
    parser.add_argument(
        "--errors",
        choices=ERROR_CONVENTIONS,
        default=HARNESS,
        help="how errored trials are scored: as the harness scores them, reproducing its "
        "numbers (default), or as passk does (an error is never a decision)",
    )
    parser.add_argument(
        "--concat-runs",
        action="store_true",
        help="the files are separate runs that number their trials alike: join them "
        "(each file's trials follow the previous file's) instead of dropping repeats",
    )
    parser.add_argument(
        "--allow-incomplete",
        action="store_true",
        help="Inspect: import the finished samples of an eval that failed or was cancelled",
    )
    parser.add_argument(
        "--report-json", default=None, help="write the import report (skipped entries) here"
    )
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    if args.scorer is not None and args.source != "inspect":
        raise UsageError("--scorer applies to --from inspect only", where="--scorer")
    if args.prompt_idx is not None and args.source != "promptfoo":
        raise UsageError("--prompt-idx applies to --from promptfoo only", where="--prompt-idx")
    if args.allow_incomplete and args.source != "inspect":
        raise UsageError(
            "--allow-incomplete applies to --from inspect only", where="--allow-incomplete"
        )
    refuse_clobbering(
        {f"input file {name}": name for name in args.files},
        {"--out": args.out, "--dataset-out": args.dataset_out, "--report-json": args.report_json},
    )
    options = ImportOptions(
        version=Version(args.agent_version),
        k=args.k,
        scorer=args.scorer,
        prompt_idx=args.prompt_idx,
        errors=args.errors,
        concat_runs=args.concat_runs,
        allow_incomplete=args.allow_incomplete,
    )
    # Millions of objects, none of them garbage: the cyclic collector would
    # rescan them all again and again (it tripled the time of a large import).
    with gc_paused():
        imported = import_files(
            args.source,
            [Path(f) for f in args.files],
            options,
            now=now_iso,
            tool_version=__version__,
        )
    report = imported.report
    problems = [*report.dropped, *report.skipped]
    for entry in problems[:SHOWN]:
        warn(f"not imported: {entry}")
    if len(problems) > SHOWN:
        warn(f"... and {len(problems) - SHOWN} more not imported (see --report-json)")
    for message in report.warnings:
        warn(message)
    with gc_paused():
        write_run(imported.run, Path(args.out))
    if args.dataset_out:
        write_text_atomic(Path(args.dataset_out), dataset_jsonl(imported.dataset.rows))
    if args.report_json:
        text = json.dumps(report.to_json(), ensure_ascii=False, indent=2) + "\n"
        write_text_atomic(Path(args.report_json), text)
    print(f"passk: {report.summary()}: {args.out}", file=sys.stdout)
    if report.beside:
        print(f"passk: {report.convention}: {report.headline}; {report.beside}")
    if args.dataset_out:
        print(
            f"passk: {args.dataset_out}: its rows expect no decision ({report.source} graded "
            "each trial): point `dataset:` at it, with `scoring: {by: environment}`"
        )
    return EXIT_OK
