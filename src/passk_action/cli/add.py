"""``passk add``: a failing input (from production) becomes a row of the dataset.

The input comes from a JSON file, stdin (``-``), or one attempt of a
recorded run (``--from-run RUN --row ID [--attempt N] --rows DATASET``:
a run keeps digests, not inputs, so the dataset it measured supplies the
input, checked against the digest).  The row is checked against the
dataset (``inputs/new_row.py``), appended in the file's own format and style
and read back (``inputs/dataset_writer.py``), written atomically, and the
next steps are said (``report/added_row.py``).  Each refusal is one line,
exit 2, the file untouched.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path
from typing import Any

from ..core.model import Json, Run, Version
from ..errors import EXIT_OK, UsageError
from ..files import MAX_FILE_BYTES, read_bounded
from ..inputs.config import load_config
from ..inputs.dataset import format_for, load_dataset
from ..inputs.dataset_writer import append_row
from ..inputs.new_row import (
    NewRow,
    expected_text_of,
    expected_value,
    failed_attempt,
    plan_row,
)
from ..report.added_row import AddedRow, added_lines
from ..store.artifact import write_text_atomic
from ..store.jsonfile import unstorable_path
from ..store.results import AuditedResult, read_run_or_result
from .common import add_config_argument, warn


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "add",
        help="add a failing input (e.g. from production) to the dataset as a new row",
        description="Append a failing input to the dataset as a new row, in the dataset's own "
        "format and style, then say what happens next: the pull request that adds it measures "
        "the baseline on it, and once a recorded baseline is stable-correct on a "
        "must-not-break row, the ratchet locks it.",
    )
    parser.add_argument(
        "input",
        nargs="?",
        default=None,
        help="a JSON file holding the input the agent failed on, or - for stdin",
    )
    parser.add_argument(
        "--expected",
        default=None,
        help="the decision the input should get, e.g. deny; a structured one as a JSON object; "
        "none for a task its environment scores",
    )
    parser.add_argument("--id", default=None, help="the new row's id (default: the next one)")
    parser.add_argument(
        "--tag", action="append", default=[], dest="tags", help="a tag (repeatable)"
    )
    parser.add_argument(
        "--must-not-break",
        action="store_true",
        help="mark the row must-not-break: the ratchet locks it once a baseline gets it right",
    )
    parser.add_argument("--cluster", default=None, help="the row's cluster (related rows)")
    parser.add_argument(
        "--new-label",
        action="store_true",
        help="allow an expected decision no row has yet (otherwise refused as a likely typo)",
    )
    parser.add_argument(
        "--from-run",
        default=None,
        metavar="RUN",
        help="take the input from a recorded run or result (with --row and --rows)",
    )
    parser.add_argument("--row", default=None, help="with --from-run: the row id in the run")
    parser.add_argument(
        "--attempt",
        type=int,
        default=None,
        help="with --from-run: the attempt that failed (it must not have answered --expected)",
    )
    parser.add_argument(
        "--version",
        choices=[v.value for v in Version],
        default=Version.CANDIDATE.value,
        help="with --from-run of a result: which version's run (default: candidate)",
    )
    parser.add_argument(
        "--rows",
        default=None,
        metavar="DATASET",
        help="with --from-run: the dataset the run was recorded over (it holds the inputs)",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="check and show the row, write nothing"
    )
    add_config_argument(parser)
    parser.set_defaults(handler=handle)


def _check_text_options(args: argparse.Namespace) -> None:
    """Options are text the dataset stores as UTF-8: bytes that are not UTF-8 are refused.

    Python hands a command-line argument that is not UTF-8 over as lone
    surrogates (``d\\udcff``); stored, they raised UnicodeEncodeError.
    """
    named = [("--expected", args.expected), ("--id", args.id), ("--cluster", args.cluster),
             ("--row", args.row), *(("--tag", tag) for tag in args.tags or ())]  # fmt: skip
    for name, value in named:
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise UsageError(
                    f"{name} is not valid UTF-8 text",
                    where=name,
                    hint="type the value in UTF-8 (check the terminal's encoding)",
                ) from None


def handle(args: argparse.Namespace) -> int:
    _check_text_options(args)
    loaded = load_config(Path(args.config))
    for message in loaded.warnings:
        warn(message)
    config = loaded.config
    dataset = load_dataset(config.dataset, config.must_not_break_tags, config.scoring)
    value, origin = _failing_input(args)
    planned = plan_row(
        dataset,
        NewRow(
            input=value,
            expected=args.expected,
            id=args.id,
            tags=tuple(args.tags),
            must_not_break=args.must_not_break,
            cluster=args.cluster,
        ),
        scoring=config.scoring,
        must_not_break_tags=config.must_not_break_tags,
        new_label=args.new_label,
    )
    path = config.dataset
    appended = append_row(
        read_bounded(path),
        str(path),
        format_for(path),
        planned.record,
        config.must_not_break_tags,
        config.scoring,
    )
    if not args.dry_run:
        _replace(path, appended.data)
    else:
        print(appended.text)
    row = AddedRow(
        id=planned.id,
        dataset=str(path),
        line=appended.line,
        expected=expected_text_of(planned.record.get("expected")),
        must_not_break=planned.must_not_break,
        marked=args.must_not_break,
        protecting_tags=planned.protecting_tags,
        tags=tuple(dict.fromkeys(args.tags)),
        generated=planned.generated,
        k=config.k,
        origin=origin,
        top_up=config.agent is not None or config.baseline.agent is not None,
    )
    for line in added_lines(row, dry_run=args.dry_run):
        print(line)
    return EXIT_OK


def _replace(path: Path, data: bytes) -> None:
    """Write the new dataset atomically where the file (or the link to it) really is,
    keeping its mode: an executable bit that changed would be a protected change."""
    target = path.resolve()
    mode = target.stat().st_mode & 0o777
    write_text_atomic(target, data.decode("utf-8"))
    os.chmod(target, mode)


def _failing_input(args: argparse.Namespace) -> tuple[Json, str | None]:
    """The input value, and where it came from when it was a run's attempt."""
    run_flags = [f for f in ("row", "attempt", "rows") if getattr(args, f) is not None]
    if args.from_run is None:
        if run_flags:
            raise UsageError(
                f"--{run_flags[0]} needs --from-run",
                where=f"--{run_flags[0]}",
                hint="name the recorded run the row comes from with --from-run RUN",
            )
        if args.input is None:
            raise UsageError(
                "no input given",
                where="passk add",
                hint="pass a JSON file holding the input, - for stdin, or --from-run RUN --row ID",
            )
        return _read_json(args.input), None
    if args.input is not None:
        raise UsageError(
            "give the input as a file or with --from-run, not both",
            where=args.input,
            hint="drop one of the two",
        )
    if args.row is None or args.rows is None:
        missing = "--row" if args.row is None else "--rows"
        raise UsageError(
            f"--from-run needs {missing}",
            where=missing,
            hint="--row names the row in the run, --rows the dataset the run was recorded over",
        )
    run = _run_of(Path(args.from_run), Version(args.version))
    source = load_dataset(Path(args.rows), scoring=run.settings.scoring)
    failed = failed_attempt(
        run,
        source,
        args.row,
        attempt=args.attempt,
        expected=expected_text_of(expected_value(args.expected, run.settings.scoring)),
        where=args.from_run,
    )
    which = f"attempt {args.attempt} of" if args.attempt is not None else "the attempts of"
    return failed.input, (
        f"{which} row {args.row} in {args.from_run} (answered {failed.answered}), from {args.rows}"
    )


def _run_of(path: Path, version: Version) -> Run:
    loaded = read_run_or_result(path)
    if isinstance(loaded, AuditedResult):
        result = loaded.result
        return result.candidate if version is Version.CANDIDATE else result.baseline
    return loaded


def _read_json(name: str) -> Json:
    """The JSON value in file ``name`` (``-``: stdin), refused in one line when it is not."""
    where = "stdin" if name == "-" else name
    try:
        data = sys.stdin.buffer.read(MAX_FILE_BYTES) if name == "-" else read_bounded(name)
    except OSError as exc:
        raise UsageError(
            f"cannot read: {exc.strerror or exc}", where=where, hint="check the path"
        ) from exc
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UsageError("is not UTF-8", where=where, hint="save it as UTF-8 JSON") from exc
    if not text.strip():
        raise UsageError("is empty", where=where, hint="write the input the agent got, as JSON")
    try:
        value: Json = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
    except RecursionError as exc:
        raise UsageError("is nested too deeply", where=where) from exc
    except ValueError as exc:
        line = getattr(exc, "lineno", None)
        raise UsageError(
            f"is not JSON: {getattr(exc, 'msg', exc)}",
            where=f"{where}:{line}" if line else where,
            hint='the file is the input itself, e.g. {"days": 40} or "a text request"',
        ) from exc
    at = unstorable_path(value)
    if at is not None:
        raise UsageError(
            "holds a lone surrogate (an escape like \\ud800 without its pair), which UTF-8 "
            "cannot store",
            where=f"{where}: {at}" if at else where,
            hint="write the text as valid Unicode",
        )
    return value


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"the number {text[:20]} is out of range")
    return number


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")
