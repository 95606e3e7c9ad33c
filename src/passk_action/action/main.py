"""``passk action``: the GitHub Action entrypoint, gate mode and dispatch.

Everything comes from the environment mapping it is given.  In gate mode the
pull request's *base* commit supplies what protects the gate (config
settings, must-not-break marks and labels, the baseline artifact and its
ratchet); the head supplies the candidate agent and the rows to run.  The
token is masked before anything else is printed and never reaches the
agent, the log, the artifacts or an error message.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TextIO

from ..agents.runner import Agent
from ..cli.common import stop_on_signals
from ..core.gate import RECORDED_FAILURE_KIND, ProtectedChange, decide
from ..core.model import Dataset, Row, Version, dataset_digest
from ..core.result import CompareResult, Executions
from ..engine import CompareInputs, Session, build_agent, compare, retry_policy
from ..errors import (
    EXIT_GATE_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    ArtifactError,
    ConfigError,
    DatasetError,
    GitError,
    GitHubError,
    PasskError,
    UsageError,
)
from ..github.client import GitHubClient
from ..github.publish import MARKER
from ..inputs.config import AgentConfig, Config, load_config, parse_config_bytes
from ..inputs.dataset import format_for, load_dataset, parse_dataset
from ..progress import make_progress
from ..report.markdown import render_compare_report
from ..store.artifact import read_run, run_from_json, write_text_atomic
from ..store.results import write_result
from .event import PullRequest, pull_request_from, read_payload
from .gitrepo import GitRepo
from .inputs import ActionInputs, read_inputs
from .protect import Snapshot, protected_changes
from .publish import Published, annotate, comment_author, publish
from .record import GateRecord, encode_record, find_record, record_for
from .replay import ReplayAgent
from .workflow import Workflow

RESULT_PATH = ".passk/result.json"
REPORT_PATH = ".passk/report.md"
CANDIDATE_PATH = ".passk/candidate.json"
RECORDED_FAILURE = (
    "a re-run cannot overturn the recorded failure for this content; push a commit that "
    "changes a file (an empty or amended commit with the same files keeps the failure)"
)
UNPINNED = (
    "re-runs are not pinned: {why}, so re-running this job asks the agent again and may get "
    "a different result"
)
PWN_REQUEST = (
    "passk refuses to run on `pull_request_target`: that event runs with a write token and "
    "secrets, and passk executes the pull request's agent, so a fork could take over the "
    "repository (a 'pwn request', FACTS.md E3)"
)


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


@dataclass(frozen=True)
class Runtime:
    """The action's collaborators, injectable by tests."""

    env: Mapping[str, str]
    workflow: Workflow
    stderr: TextIO
    cwd: Path
    sleep: Callable[[float], None] = time.sleep
    now: Callable[[], str] = now_iso


def raw_token(env: Mapping[str, str]) -> str:
    return env.get("INPUT_GITHUB-TOKEN", "").strip() or env.get("GITHUB_TOKEN", "").strip()


def main(
    env: Mapping[str, str] | None = None,
    *,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    cwd: Path | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Run the action; 0 gate passed (or baseline recorded), 1 gate failed, 2 bad input."""
    env = os.environ if env is None else env
    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr
    workflow = Workflow(out, env)
    token = raw_token(env)
    if token:
        workflow.add_mask(token)  # first thing: before any line could quote it
    runtime = Runtime(env, workflow, err, cwd or Path.cwd(), sleep)
    try:
        inputs = read_inputs(env, runtime.cwd)
        if inputs.mode == "baseline":
            from .baseline import run_baseline_mode

            return run_baseline_mode(inputs, runtime)
        return run_gate_mode(inputs, runtime)
    except PasskError as exc:
        workflow.error(exc.one_line(), title="passk")
        return exc.exit_code
    except KeyboardInterrupt:
        workflow.error("interrupted", title="passk")
        return 130
    except Exception as exc:  # a bug in passk: one scrubbed line; traceback only on request
        if env.get("PASSK_DEBUG"):
            err.write(workflow.scrub(traceback.format_exc()))
        workflow.error(
            f"internal error: {type(exc).__name__}: {' '.join(str(exc).split())} "
            "(set PASSK_DEBUG=1 for a traceback, and please report it)",
            title="passk",
        )
        return EXIT_USAGE


# --- trusted inputs from the base commit -----------------------------------------


@dataclass(frozen=True)
class Sides:
    base: Snapshot
    head: Snapshot
    base_run_where: str


def _short(sha: str) -> str:
    return sha[:7]


def load_sides(
    repo: GitRepo, inputs: ActionInputs, pr: PullRequest, warn: Callable[[str], None]
) -> Sides:
    """Read the head from the checkout and the base from git objects of the base commit."""
    config_path = inputs.config_path
    loaded = load_config(config_path)
    for message in loaded.warnings:
        warn(message)
    head_config = loaded.config
    head_dataset = load_dataset(head_config.dataset, head_config.must_not_break_tags)
    head_artifact = head_config.baseline.artifact
    head_baseline = head_artifact.read_bytes() if head_artifact.is_file() else None

    at = f"@{_short(pr.base_sha)}"
    config_rel = repo.relative(config_path)
    base_bytes = repo.show(pr.base_sha, config_rel)
    if base_bytes is None:
        raise ConfigError(
            f"the pull request's base commit has no {config_rel}",
            where=f"{config_rel}{at}",
            hint="merge the passk config and a recorded baseline into the base branch first; "
            "the gate trusts only the base's config",
        )
    try:
        # Anchored at the checkout's path, so relative paths name the same files.
        base_config = parse_config_bytes(base_bytes, config_path).config
    except ConfigError as exc:
        raise ConfigError(
            f"in the base commit {_short(pr.base_sha)}: {exc.message}",
            where=exc.where,
            hint="the gate reads its settings from the base branch; fix the config there first",
        ) from exc
    dataset_rel = repo.relative(base_config.dataset)
    dataset_bytes = repo.show(pr.base_sha, dataset_rel)
    if dataset_bytes is None:
        raise DatasetError(
            "the base commit's config names a dataset that is not in the base commit",
            where=f"{dataset_rel}{at}",
            hint="commit the dataset to the base branch",
        )
    base_dataset = parse_dataset(
        dataset_bytes,
        f"{dataset_rel}{at}",
        format_for(base_config.dataset),
        base_config.must_not_break_tags,
    )
    artifact_rel = repo.relative(base_config.baseline.artifact)
    base_baseline = repo.show(pr.base_sha, artifact_rel)
    if base_baseline is None:
        raise ArtifactError(
            "the pull request's base commit has no baseline artifact",
            where=f"{artifact_rel}{at}",
            hint="record one: run the action with `mode: baseline` on the default branch, "
            "or run `passk baseline` and commit the artifact",
        )
    return Sides(
        base=Snapshot(base_config, base_dataset, base_baseline),
        head=Snapshot(head_config, head_dataset, head_baseline),
        base_run_where=f"{artifact_rel}{at}",
    )


def authoritative_dataset(base: Snapshot, head: Snapshot, allowed: bool) -> Dataset:
    """The rows to gate: the head's, protected by the base's marks and labels.

    A row is must-not-break when the head marks it, when the base did (by id,
    tags of the base config included), or when it carries a tag the base
    config protects; a row that was must-not-break at base keeps the base's
    expected label.  When the protected changes are allowed by label, a
    maintainer approved the head's edits, so the head's rows stand as written.
    """
    if allowed:
        return head.dataset
    base_rows = base.dataset.by_id()
    base_tags = set(base.config.must_not_break_tags)
    rows: list[Row] = []
    for row in head.dataset.rows:
        old = base_rows.get(row.id)
        protected_at_base = old is not None and old.must_not_break
        mark = row.must_not_break or protected_at_base or not base_tags.isdisjoint(row.tags)
        expected = old.expected if protected_at_base and old is not None else row.expected
        rows.append(replace(row, must_not_break=mark, expected=expected))
    return Dataset(rows=tuple(rows), source=head.dataset.source, digest=dataset_digest(rows))


def effective_config(base: Config, head: Config) -> Config:
    """The head's agent and rows, with every setting that protects the gate from the base."""
    return replace(
        head,
        k=base.k,
        scoring=base.scoring,
        confirm=base.confirm,
        gate=base.gate,
        must_not_break_tags=base.must_not_break_tags,
        baseline=base.baseline,
    )


def agent_env(env: Mapping[str, str], token: str, agent: AgentConfig) -> dict[str, str]:
    """The parent environment for an agent: no variable holding the token, under any name.

    The runner already drops the known token variables; this also catches a
    copy under another name (``MY_TOKEN: ${{ github.token }}``), unless the
    config passes it on purpose.
    """
    if not token:
        return dict(env)
    return {k: v for k, v in env.items() if token not in v or k in agent.pass_env}


def rebase_agent(agent: AgentConfig, old_root: Path, new_root: Path) -> AgentConfig:
    """The same agent with its working directory moved from ``old_root`` into ``new_root``."""
    try:
        rel = agent.cwd.resolve().relative_to(old_root)
    except ValueError:
        return agent  # a cwd outside the repository is not part of the commit
    return replace(agent, cwd=new_root / rel)


# --- gate mode -------------------------------------------------------------------------


def _client(inputs: ActionInputs, runtime: Runtime) -> GitHubClient | None:
    if not inputs.token:
        runtime.workflow.warning(
            "no github-token: nothing is posted to the pull request; the report is in the "
            "job summary",
            title="passk",
        )
        return None
    try:
        return GitHubClient(
            api_url=inputs.api_url,
            token=inputs.token,
            repository=inputs.repository,
            sleep=runtime.sleep,
        )
    except GitHubError as exc:
        runtime.workflow.warning(f"nothing is posted to GitHub: {exc.one_line()}", title="passk")
        return None


def run_gate_mode(inputs: ActionInputs, runtime: Runtime) -> int:
    workflow = runtime.workflow
    if inputs.event_name == "pull_request_target":
        raise UsageError(
            PWN_REQUEST,
            where="GITHUB_EVENT_NAME=pull_request_target",
            hint="trigger the workflow with `on: pull_request` instead",
        )
    if inputs.event_name != "pull_request":
        raise UsageError(
            f"nothing to gate on a {inputs.event_name or 'unknown'!r} event",
            where="input `mode`",
            hint="use `mode: gate` on `pull_request`, and `mode: baseline` on pushes to the "
            "default branch",
        )
    payload = read_payload(inputs.event_path)
    pr = pull_request_from(payload, inputs.event_path or "GITHUB_EVENT_PATH")
    repo = GitRepo.discover(inputs.working_directory)

    def warn(message: str) -> None:
        workflow.warning(message, title="passk")

    with workflow.group("passk: trusted inputs from the base commit"):
        sides = load_sides(repo, inputs, pr, warn)
        base, head = sides.base, sides.head
        try:
            baseline_run = run_from_json(json.loads(base.baseline or b""), sides.base_run_where)
        except ValueError as exc:
            raise ArtifactError(
                f"the base commit's baseline artifact is not JSON: {exc}",
                where=sides.base_run_where,
                hint="record it again with `passk baseline` on the base branch",
            ) from exc
        changes = protected_changes(base, head, ratchet=baseline_run.ratchet)
        allow_label = base.config.gate.allow_label
        allowed = bool(changes) and allow_label in pr.labels
        workflow.line(
            f"passk: PR #{pr.number} base {_short(pr.base_sha)} head {_short(pr.head_sha)}"
            f"{' (from a fork)' if pr.fork else ''}"
        )
        for change in changes:
            workflow.line(
                f"passk: protected change: {change.detail}"
                + (f" ({change.id})" if change.id else "")
                + (f" — allowed by the label {allow_label!r}" if allowed else "")
            )
        config = effective_config(base.config, head.config)
        dataset = authoritative_dataset(base, head, allowed)

    client = _client(inputs, runtime)
    comments: list[dict[str, Any]] = []
    if client is not None:
        try:
            comments = client.list_issue_comments(pr.number)
        except GitHubError as exc:
            warn(f"cannot read the pull request's comments, so no earlier record is used: {exc}")
    if inputs.comment == "off":
        warn(
            "comment: off keeps no record of this commit's verdicts, so re-running the job "
            "asks the agent again (use `update` so a re-run cannot change the result)"
        )
    record, record_warnings = find_record(comments, MARKER)
    for message in record_warnings:
        warn(message)
    # The files the agent actually runs: the checkout (the merge commit under the
    # default `pull_request` checkout), so a moved base branch is measured anew.
    head_tree = _tree(repo, "HEAD", warn)
    matching = record is not None and record.matches(
        pr.head_sha, dataset.digest, config.settings, head_tree=head_tree
    )
    replay_candidate = record.candidate_attempts if matching and record else None
    replay_baseline = (
        record.baseline_attempts
        if matching and record is not None and record.base_sha == pr.base_sha
        else None
    )

    recorded_candidate = None
    if inputs.candidate_run is not None:
        if replay_candidate:
            warn(
                "input `candidate-run` is ignored: the verdicts passk recorded for this commit "
                "are reused, so a re-run cannot change the result"
            )
        else:
            recorded_candidate = read_run(inputs.candidate_run)

    with contextlib.ExitStack() as stack, workflow.group("passk: running the comparison"):
        # A cancelled job gets SIGINT/SIGTERM: stop after the attempts in flight.
        stop = stack.enter_context(stop_on_signals())
        token = inputs.token

        def built(spec: AgentConfig) -> Agent:
            agent = build_agent(
                spec, agent_env(runtime.env, token, spec), concurrency=config.concurrency
            )
            close = getattr(agent, "close", None)
            if callable(close):
                # Registered after any worktree, so persistent agents stop before it goes.
                stack.callback(close)
            return agent

        candidate_agent = ReplayAgent(
            config.agent.describe(), replay_candidate or (), lambda: built(config.agent)
        )

        def build_baseline() -> Agent:
            named = base.config.baseline.agent
            if named is not None:
                return built(named)
            tree = stack.enter_context(repo.worktree(pr.base_sha))
            return built(rebase_agent(base.config.agent, repo.root, tree))

        base_agent_config = base.config.baseline.agent or base.config.agent
        baseline_agent = ReplayAgent(
            base_agent_config.describe(), replay_baseline or (), build_baseline
        )
        agents: dict[Version, Agent] = {
            Version.CANDIDATE: candidate_agent,
            Version.BASELINE: baseline_agent,
        }
        session = Session(
            concurrency=config.concurrency,
            retry=retry_policy(config),
            now=runtime.now,
            progress=make_progress(runtime.stderr, False, False),
            stop=stop,
            warn=warn,
        )
        result = compare(
            CompareInputs(
                config=config,
                dataset=dataset,
                baseline=baseline_run,
                candidate=recorded_candidate,
                candidate_out=inputs.workspace / CANDIDATE_PATH,
                agents=agents.get,
                ratchet_source=baseline_run,
                protected_changes=changes,
                protected_changes_allowed=allowed,
                candidate_commit=pr.head_sha,
            ),
            session,
        )
        for agent in (candidate_agent, baseline_agent):
            if agent.build_error is not None:
                raise agent.build_error
    if replay_candidate and record is not None:
        result = _as_reused(result, candidate_agent, baseline_agent, record, pr.head_sha)
    if matching and record is not None and record.candidate_attempts is None and not record.passed:
        result = _keep_recorded_failure(result)
    ran = result.executions
    workflow.line(
        f"passk: {ran.total} agent execution(s) now (candidate {ran.candidate}, baseline top-up "
        f"{ran.baseline_topup}, confirmation {ran.confirm_baseline} + {ran.confirm_candidate})"
        + ("; verdicts reused from the record of this commit" if result.reused else "")
    )

    result_file = inputs.workspace / RESULT_PATH
    write_result(result, result_file)
    report = render_compare_report(result)
    write_text_atomic(inputs.workspace / REPORT_PATH, report)

    with workflow.group("passk: gate"):
        workflow.line(
            f"passk: gate {'passed' if result.gate.passed else 'failed'} "
            f"({len(result.gate.failures)} failure(s)); result in {RESULT_PATH}"
        )
        annotate(workflow, result)
    workflow.write_summary(report)

    encoded = encode_record(
        record_for(
            result,
            head_sha=pr.head_sha,
            head_tree=head_tree,
            base_sha=pr.base_sha,
            committed_baseline=baseline_run,
        )
    )
    published: Published | None = None
    if client is not None:
        with workflow.group("passk: publishing"):
            published = publish(
                workflow,
                client,
                result,
                pr_number=pr.number,
                head_sha=pr.head_sha,
                fork=pr.fork,
                comment_mode=inputs.comment,
                check_name=inputs.check_name,
                record=encoded,
                author=comment_author(comments),
                details_url=inputs.details_url(),
            )
    # The record lives in the comment: without one, nothing pins a re-run.
    # (`comment: off` was already warned about before anything ran.)
    if inputs.comment != "off" and (published is None or published.comment == "failed"):
        if published is None:
            why = "nothing could be posted to the pull request"
        elif pr.fork:
            why = "a fork's read-only token cannot post the comment that holds passk's record"
        else:
            why = "the comment that holds passk's record could not be posted"
        unpinned = UNPINNED.format(why=why)
        warn(unpinned)
        workflow.write_summary(f"\n> ⚠️ {unpinned[0].upper()}{unpinned[1:]}.\n")
    workflow.set_outputs(gate_outputs(result, RESULT_PATH))
    return EXIT_OK if result.gate.passed else EXIT_GATE_FAILED


def _tree(repo: GitRepo, sha: str, warn: Callable[[str], None]) -> str | None:
    """The head commit's tree, so a record pins content, not a commit id; None if unknown."""
    try:
        return repo.tree_sha(sha)
    except GitError as exc:
        warn(
            f"cannot read the tree of the head commit {_short(sha)} ({exc.message}): "
            "the record pins this commit only, not commits with the same content"
        )
        return None


def _as_reused(
    result: CompareResult,
    candidate: ReplayAgent,
    baseline: ReplayAgent,
    record: GateRecord,
    head_sha: str,
) -> CompareResult:
    """Mark a result built from recorded attempts, counting only the executions made now."""
    from ..core.model import Phase

    asked = sum(candidate.asked.values()) + sum(baseline.asked.values())
    executions = Executions(
        candidate=candidate.asked[Phase.MAIN],
        baseline_topup=baseline.asked[Phase.MAIN],
        confirm_baseline=baseline.asked[Phase.CONFIRM],
        confirm_candidate=candidate.asked[Phase.CONFIRM],
        naive=result.executions.naive,
    )
    replayed = candidate.replayed + baseline.replayed
    source = (
        "this commit"
        if record.head_sha == head_sha
        else f"commit {_short(record.head_sha)}, which has the same files as this one"
    )
    note = (
        f"verdicts reused from passk's record for {source}: {replayed} "
        "recorded attempt(s) replayed"
        + (f", {asked} errored or missing attempt(s) asked again" if asked else ", no agent run")
    )
    return replace(result, reused=True, executions=executions, notes=(*result.notes, note))


def _keep_recorded_failure(result: CompareResult) -> CompareResult:
    """A failed record without attempts (too large to keep) stays failed on a re-run.

    The failure goes in as a standing protected change, so the result file
    still re-derives its own gate (`passk gate` agrees with it).
    """
    changes = (*result.protected_changes, ProtectedChange(RECORDED_FAILURE_KIND, RECORDED_FAILURE))
    gate = decide(
        result.comparison.rows,
        result.policy,
        protected_changes=changes,
        protected_changes_allowed=result.protected_changes_allowed,
    )
    return replace(result, protected_changes=changes, gate=gate)


def fraction(value: float | None) -> str:
    return "" if value is None else f"{value:.4f}"


def gate_outputs(result: CompareResult, result_path: str) -> dict[str, str]:
    metrics = result.comparison.candidate_metrics
    return {
        "passed": "true" if result.gate.passed else "false",
        "mean-accuracy": fraction(metrics.mean_accuracy),
        "pass-k": fraction(metrics.pass_k),
        "flip-rate": fraction(metrics.flip_rate),
        "gained": str(len(result.comparison.gained)),
        "lost": str(len(result.comparison.lost)),
        "result": result_path,
        "reused": "true" if result.reused else "false",
    }


__all__ = ["GateRecord", "main"]
