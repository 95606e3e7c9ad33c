"""``passk action`` with ``mode: baseline``: record the default branch's agent as the baseline.

The same steps as ``passk baseline`` (record every row k times, carry the
ratchet forward from the committed baseline), then the new artifact reaches
the branch in one of two ways:

- ``baseline-update: commit`` commits it as ``passk[bot]`` and pushes to the
  checked-out branch (needs ``contents: write``);
- ``baseline-update: pull-request`` pushes a branch ``passk/baseline-<sha>``
  and prints the link that opens the pull request.  The REST subset passk
  speaks has no create-pull-request operation, so a person (or a later
  workflow step such as ``gh pr create``) opens it: that also keeps a human
  review on every change to what the gate trusts.

Pushing uses the action's ``github-token``, handed to that one git call in
its environment: the workflows check out with ``persist-credentials: false``
so that no agent can read the token from the checkout.  When the checkout did
persist credentials,
git uses those as before.  The token is never put into a URL, a command line
or a file.
"""

from __future__ import annotations

import os

from ..agents.identity import agent_user
from ..core.model import AgentInfo, Version
from ..core.stats import compute_metrics, summarize_run
from ..engine.agents import build_agent, scorer_spec
from ..engine.measuring import (
    Measurement,
    install_baseline,
    previous_baseline,
    record_agent,
    rows_to_measure,
)
from ..engine.session import stop_on_signals
from ..errors import EXIT_OK, AgentCouldNotRun, GitError, UsageError
from ..github.urls import compare_page
from ..github.workflow import Workflow
from ..inputs.config import load_config
from ..inputs.dataset import load_dataset
from ..report.could_not_run import render_could_not_run
from ..report.run_report import render_run_report
from ..sides.credentials import credentials_hidden, env_without_token
from ..sides.exports import head_export
from ..sides.gitrepo import GitRepo, token_auth_env
from ..sides.provenance import commit_provenance
from ..store.side_files import beside
from .inputs import ActionInputs
from .runtime import Runtime, fraction, setup_agent

REMOTE = "origin"


def run_baseline_mode(inputs: ActionInputs, runtime: Runtime) -> int:
    workflow = runtime.workflow
    event = inputs.runner.event_name
    if event.startswith("pull_request"):
        raise UsageError(
            f"mode baseline records the default branch; it does not run on {event!r}",
            where="input `mode`",
            hint="use `mode: gate` on pull requests and `mode: baseline` on pushes",
        )
    repo = GitRepo.discover(inputs.working_directory)
    loaded = load_config(inputs.config_path)
    for message in loaded.warnings:
        workflow.warn(message)
    config = loaded.config
    dataset = load_dataset(config.dataset, config.must_not_break_tags, config.scoring)
    out = config.baseline.artifact
    rel = repo.relative(out)
    previous = previous_baseline(out)
    commit_sha = inputs.runner.sha or repo.head_sha()
    agent_config = config.require_agent("`mode: baseline`")
    # From before the agent's setup until it is closed: a token actions/checkout
    # persisted is out of its reach.

    hidden = credentials_hidden(
        repo,
        agent_user(runtime.env),
        runtime.env,
        warn=workflow.warn,
        note=workflow.note,
    )
    with (
        stop_on_signals() as stop,
        hidden,
        head_export(
            repo, agent_config, runtime.env, workflow.warn, version=Version.BASELINE.value
        ) as head,
    ):
        # With an agent user, from an export of HEAD that user may write.
        agent_config = head.agent
        head.announce(workflow.line, Version.BASELINE.value)
        env = env_without_token(runtime.env, inputs.token)
        setup_agent(workflow, agent_config, env, Version.BASELINE, where=head.where, stop=stop)
        # Baseline mode runs on the default branch: its checkout is the base's own scorer.
        scorer = scorer_spec(config.scoring, config.path.parent, env)
        agent = build_agent(
            agent_config, env, concurrency=config.concurrency, warn=workflow.warn, scorer=scorer
        )
        staging = beside(out, ".recording.json")
        ratchet = previous.ratchet if previous is not None else ()
        measured = rows_to_measure(config.gate.rule, dataset.rows, ratchet)
        what = Measurement(dataset, dataset.rows, config.settings, staging, measured=measured)
        # What the agent ran, so a later gate can tell when this goes stale.
        fingerprint = commit_provenance(repo, "HEAD", config).fingerprint
        info = AgentInfo(Version.BASELINE, agent.description, commit_sha, fingerprint=fingerprint)
        with workflow.group("passk: recording the baseline"):
            session = runtime.session(config, stop)
            try:
                run = record_agent(agent, what, info, session)
            except AgentCouldNotRun as exc:
                # Nothing is pushed: the job's summary says why, as the gate's does.
                workflow.write_summary(render_could_not_run(exc))
                raise
            run, left = install_baseline(previous, run, dataset, staging, out)
            for row_id in left:
                workflow.warn(
                    f"row {row_id!r} left the ratchet: it is no longer in the dataset", title=None
                )
            workflow.line(
                f"passk: baseline recorded to {rel} ({len(run.attempts)} attempts, "
                f"{len(run.ratchet)} rows locked by the ratchet)"
            )
    workflow.write_summary(render_run_report(run))
    with workflow.group("passk: publishing the baseline"):
        _deliver(repo, inputs, workflow, rel, commit_sha, push_auth(repo, inputs))
    metrics = compute_metrics(
        summarize_run(run.rows, run.attempts_by_row(), run.settings.k, run.settings.scoring),
        run.settings.k,
    )
    workflow.set_outputs(
        {
            "mean-accuracy": fraction(metrics.mean_accuracy),
            "pass-k": fraction(metrics.pass_k),
            "flip-rate": fraction(metrics.flip_rate),
            "result": _workspace_relative(inputs, out),
            "reused": "false",
        }
    )
    return EXIT_OK


def _workspace_relative(inputs: ActionInputs, path: os.PathLike[str]) -> str:
    from pathlib import Path

    try:
        return Path(path).resolve().relative_to(inputs.runner.workspace).as_posix()
    except ValueError:
        return str(path)


def push_auth(repo: GitRepo, inputs: ActionInputs) -> dict[str, str] | None:
    """The token for the push, unless there is none or the checkout persisted credentials."""
    if not inputs.token or repo.config_entries(r"^http\..*extraheader$"):
        return None
    return token_auth_env(inputs.runner.server_url, inputs.token, os.environ)


def _deliver(
    repo: GitRepo,
    inputs: ActionInputs,
    workflow: Workflow,
    rel: str,
    commit_sha: str,
    auth: dict[str, str] | None,
) -> None:
    short = commit_sha[:7]
    message = f"passk: record the baseline of {short}"
    commit = repo.commit_files([rel], message)
    if inputs.baseline_update == "commit":
        branch = repo.current_branch() or inputs.runner.ref_name
        if not branch:
            raise GitError(
                "the checkout is on no branch, so there is nowhere to commit the baseline",
                where="baseline-update: commit",
                hint="run on a push to the default branch, or use `baseline-update: pull-request`",
            )
        repo.push(REMOTE, commit, branch, auth=auth)
        if repo.current_branch() == branch:
            repo.fast_forward(commit)
        workflow.note(f"baseline committed to {branch} as {commit[:7]}")
        return
    branch = f"passk/baseline-{short}"
    repo.push(REMOTE, commit, branch, auth=auth)
    target = repo.current_branch() or inputs.runner.ref_name or "main"
    compare_url = compare_page(inputs.runner.server_url, inputs.runner.repository, target, branch)
    workflow.note(
        f"baseline pushed to the branch {branch}; open the pull request"
        + (f" at {compare_url}" if compare_url else f" from {branch} into {target}")
        + " (passk does not create it: review the new baseline before merging)"
    )
