"""``passk compare``: baseline vs candidate, confirmation of lost rows, and the gate."""

from __future__ import annotations

import argparse
import functools
import os
import sys
from pathlib import Path
from typing import Any

from ..core.history import History
from ..core.model import Run
from ..core.result import CompareResult
from ..engine.compare import compare
from ..engine.request import CandidateSource
from ..engine.session import stop_on_signals
from ..errors import EXIT_GATE_FAILED, EXIT_OK, ArtifactError, GitError, UsageError
from ..github.sticky_comment import MARKER
from ..inputs.config import Config
from ..report.comment import CommentContext, render_comment
from ..report.compare_report import render_compare_report
from ..report.history import notes as history_notes
from ..report.notes import sentence
from ..report.protected import change_lines
from ..report.screen import render_screen
from ..sides.gitrepo import GitRepo
from ..sides.history import base_history
from ..sides.prepare import Base, Local, Running, Shell, prepare
from ..sides.provenance import working_tree_provenance
from ..sides.trusted import BaseCommit, trust_base, working_tree_copies
from ..store.artifact import read_run
from ..store.compare_journal import discard_compare_journal
from ..store.results import write_result
from ..store.side_files import refuse_resume
from .common import (
    add_config_argument,
    add_label_argument,
    add_run_arguments,
    agent_setup,
    load_inputs,
    session_for,
    warn,
    write_output,
)
from .paths import project_files, refuse_clobbering, run_outputs


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "compare", help="compare the candidate with the baseline and decide the gate"
    )
    add_config_argument(parser)
    parser.add_argument(
        "--baseline",
        default=None,
        help="baseline artifact (default: baseline.artifact; not with --base, which uses REF's)",
    )
    parser.add_argument(
        "--candidate", default=None, help="a recorded candidate run instead of running `agent`"
    )
    parser.add_argument("--json", default=None, dest="json_out", help="write the result JSON here")
    parser.add_argument(
        "--markdown",
        default=None,
        help="write the Markdown report here and print the verdict on stdout ('-': the "
        "report on stdout; default: on a terminal, the verdict, with the report in "
        ".passk/report.md beside the config; piped, the report)",
    )
    parser.add_argument(
        "--comment",
        default=None,
        metavar="FILE",
        help="also write the pull-request comment the action would post for this result "
        "(its hidden verdict record aside), to preview it before you push",
    )
    parser.add_argument(
        "--candidate-out",
        default=None,
        help="where the candidate run is recorded (default: .passk/candidate.json by the config)",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue an interrupted comparison: its candidate run and every round, asking "
        "nothing already answered",
    )
    parser.add_argument(
        "--base",
        default=None,
        metavar="REF",
        help="gate as a pull request into REF (e.g. main) would, with the same code as the "
        "action: the head is this working tree, uncommitted changes included (what you are "
        "about to push); REF supplies the settings, the must-not-break marks and expected "
        "labels, the baseline artifact and ratchet, and the agent that runs the baseline side "
        "from a clean checkout of REF; edits to those are protected changes and fail the gate",
    )
    add_label_argument(
        parser,
        "with --base: a label the pull request carries (repeatable); REF's "
        "gate.allow_label allows the protected changes, as on GitHub",
    )
    add_run_arguments(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    _check_options(args)
    recorded = read_run(Path(args.candidate)) if args.candidate else None
    compared: Base | Local
    history: History | None = None
    if args.base is not None:
        compared = read_base(args)
        config = compared.trusted.config
        # As the action does, before any agent runs: lost rows say if they wobbled before.
        history = base_history(
            compared.repo,
            compared.commit.sha,
            compared.repo.relative(config.baseline.artifact),
            branch=args.base,
        )
        for note in history_notes(history):  # said only when something limited it
            _stderr_line(f"passk: history: {note}")
    else:
        inputs = load_inputs(args.config)
        config = inputs.config
        baseline = _committed_baseline(args, config.baseline.artifact)
        compared = Local(config, inputs.dataset, baseline)
    candidate_out = (
        Path(args.candidate_out)
        if args.candidate_out
        else config.path.parent / ".passk" / "candidate.json"
    )
    report_to = _report_path(args, config)
    _refuse_clobbering(args, config, candidate_out, report_to)
    if args.resume:
        refuse_resume(candidate_out)
    provenance = working_tree_provenance(config.path.parent, config)
    candidate = CandidateSource(
        out=candidate_out,
        recorded=recorded,
        resume=args.resume,
        commit=provenance.commit,
        dirty=provenance.dirty,
    )
    with stop_on_signals() as stop:
        # A stop request ends a setup at once, as it kills the attempts in flight.
        setup = functools.partial(agent_setup, stop=stop)
        shell = Shell(
            warn=warn,
            note=warn,
            announce=lambda said: warn(sentence(said)),
            line=_stderr_line,
            setup=setup,
        )
        with prepare(
            shell,
            compared,
            candidate,
            Running(
                env=os.environ,
                concurrency=(
                    args.concurrency if args.concurrency is not None else config.concurrency
                ),
            ),
        ) as prepared:
            result = compare(prepared.inputs, prepared.agents, session_for(config, args, stop))
            dataset = prepared.inputs.dataset
    for warning in result.warnings:
        if not warning.announced:  # the others were said before any agent ran
            warn(sentence(warning))
    if args.json_out:
        write_result(result, Path(args.json_out))
    if isinstance(compared, Base):
        base_sha = compared.commit.sha
        allow_label = compared.trusted.sides.base.config.gate.allow_label
    else:
        base_sha, allow_label = None, config.gate.allow_label
    context = CommentContext(
        head_sha=result.candidate.agent.commit,
        base_sha=base_sha,
        base_ref=args.base,
        config=args.config,
        inputs={row.id: row.input for row in dataset.rows},
        allow_label=allow_label,
        result_path=args.json_out,
        history=history,
    )
    if args.comment:
        write_output(args.comment, comment_preview(result, context))
    report = render_compare_report(result, context=context)
    if report_to is None:
        write_output(args.markdown, report, markdown=True)
    else:
        report_to.parent.mkdir(parents=True, exist_ok=True)
        write_output(str(report_to), report)
        outputs = [("Full report", str(report_to))]
        outputs += [("Result", args.json_out)] if args.json_out else []
        outputs += [("Comment preview", args.comment)] if args.comment else []
        colour = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
        write_output(None, render_screen(result, outputs=outputs, colour=colour))
    # Only now: a full disk above leaves every attempt for --resume, which asks nothing again.
    discard_compare_journal(candidate.out)
    return EXIT_OK if result.gate.passed else EXIT_GATE_FAILED


def _check_options(args: argparse.Namespace) -> None:
    """Refuse options that do not go together, before anything is read."""
    if args.base is not None and args.baseline:
        raise UsageError(
            "--baseline cannot be used with --base",
            where="--baseline",
            hint="--base gates against REF's committed baseline, as the pull request does; "
            "drop --baseline, or drop --base to gate against that file",
        )
    if args.labels and args.base is None:
        raise UsageError(
            "--label needs --base",
            where="--label",
            hint="labels allow protected changes, which exist only against a base: add --base REF",
        )


def _report_path(args: argparse.Namespace, config: Config) -> Path | None:
    """Where the full report goes when stdout shows the verdict; None: the report on stdout.

    ``--markdown FILE``: there.  No ``--markdown`` on a terminal: beside the
    config, in ``.passk/report.md``.  Piped, or ``--markdown -``: stdout.
    """
    if args.markdown == "-" or (args.markdown is None and not sys.stdout.isatty()):
        return None
    if args.markdown is not None:
        return Path(args.markdown)
    return config.path.parent / ".passk" / "report.md"


PREVIEW_RECORD = "<!-- passk:record preview: a pull request's run keeps its verdicts here -->"
"""Where the action's comment carries its machine-readable verdict record."""


def comment_preview(result: CompareResult, context: CommentContext) -> str:
    """The comment the action would post for ``result``: the same renderer, marker and limit."""
    return render_comment(result, marker=MARKER, record=PREVIEW_RECORD, context=context)


def _refuse_clobbering(
    args: argparse.Namespace, config: Config, candidate_out: Path, report_to: Path | None
) -> None:
    """Before any agent runs: no output of this comparison overwrites what it reads.

    The working tree's baseline artifact counts as read with ``--base`` too:
    it is the committed file, with its ratchet.
    """
    baseline = Path(args.baseline) if args.baseline else config.baseline.artifact
    reads: dict[str, Path | None] = {
        **project_files(Path(args.config), config.dataset),
        f"the baseline artifact ({baseline})": baseline,
        "--candidate": Path(args.candidate) if args.candidate else None,
    }
    # A recorded candidate (--candidate) is read, not recorded: nothing goes to --candidate-out.
    recorded = run_outputs("--candidate-out", candidate_out) if args.candidate is None else {}
    writes = {
        **recorded,
        "--json": args.json_out,
        "--comment": args.comment,
        "--markdown": str(report_to) if report_to is not None else None,
    }
    refuse_clobbering(reads, writes)


def _stderr_line(line: str) -> None:
    print(line, file=sys.stderr)


def _committed_baseline(args: argparse.Namespace, default: Path) -> Run:
    baseline_path = Path(args.baseline) if args.baseline else default
    if not baseline_path.exists():
        raise ArtifactError(
            "no baseline artifact",
            where=str(baseline_path),
            hint="record one with `passk baseline` and commit it",
        )
    return read_run(baseline_path)


def _say_if_base_moved_on(repo: GitRepo, ref: str, sha: str) -> None:
    """Warn when REF has commits HEAD lacks: the pull request runs on the merge of both.

    ``actions/checkout`` checks out the pull request's merge commit, so the
    candidate there also holds what REF gained since the branch left it; here
    it does not, and the two verdicts can differ.
    """
    try:
        behind = repo.commits_between("HEAD", sha)
    except GitError:
        return  # no HEAD yet: nothing to compare with
    if behind:
        warn(
            f"{ref} has {behind} commit(s) this branch does not; the pull request's check "
            f"runs on the merge of both, so its verdict can differ: merge or rebase onto "
            f"{ref} to reproduce it exactly"
        )


def read_base(args: argparse.Namespace) -> Base:
    """What the action's gate mode reads from the base commit, read from REF.

    The same functions as the action (``trust_base``): REF's config settings,
    marks, labels and committed baseline, and the protected changes this
    working tree makes to them, listed on stderr as the action logs them.
    """
    config_path = Path(args.config)
    repo = GitRepo.discover(config_path.absolute().parent)
    sha = repo.resolve(args.base)
    _say_if_base_moved_on(repo, args.base, sha)
    commit = BaseCommit(sha, args.base)
    trusted = trust_base(
        repo, config_path, commit, args.labels, warn, head_tree=working_tree_copies
    )
    label = trusted.sides.base.config.gate.allow_label
    for line in change_lines(trusted.changes, allowed=trusted.allowed, label=label):
        print(line, file=sys.stderr)
    return Base(repo, commit, trusted)
