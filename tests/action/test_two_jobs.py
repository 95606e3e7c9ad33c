"""The two-job mode end to end: the pull request's code runs only where no write token is.

Job 1 (``mode: measure``) runs with no token at all: the pull request's agent k
times per row and its confirmation attempts; it posts nothing and writes the
measured file.  The file is handed over as a file (the workflow's artifact).
Job 2 (``mode: gate-measured``) holds the token and runs none of the pull
request's code: the base commit's agent only, the pull request's files read as
git objects.  Under ``workflow_run`` (pull requests from forks) it learns the
pull request from GitHub, never from the file.  GitHub is the local fake.

The pull request's agent leaves a mark whenever its setup runs, so "none of its
code ran" is observed, not assumed; each forged or edited measured file is an
attack beside the untouched file (the control).
"""

from __future__ import annotations

import io
import json
import shlex
import shutil
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from passk_action.action import main as action_main
from passk_action.cli import main as cli_main
from passk_action.github.client import GitHubClient
from passk_action.github.sticky_comment import decode_record
from passk_action.github.workflow import visible
from passk_action.store.results import read_result
from support.fakegithub import SPECS_DIR, FakeGitHub
from support.fakegithub.server import FakePull
from support.pull_request_repo import (
    CONFIG,
    REPO,
    RIGHT,
    ROWS,
    TOKEN,
    commit,
    edit_rows,
    flip_r1,
    git,
    parse_outputs,
    shared_template,
    write_rows,
    write_script,
)
from support.runner_commands import ATTACKS, HARMLESS, obeyed

PR = 7


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shared_template(tmp_path_factory)


@dataclass
class Job:
    code: int
    log: str
    outputs: dict[str, str]
    summary: str
    asked: list[tuple[str, int, str]]


@dataclass
class PullRequest:
    """One test's repository: main with passk, and a pull request's head commit."""

    repo: Path
    tmp: Path
    base: str
    head: str = ""
    jobs: int = 0
    labels: tuple[str, ...] = ()
    """The pull request's labels, as its events name them."""

    @property
    def marker(self) -> Path:
        """Written by the pull request's agent.setup: its code ran."""
        return self.tmp / "pull-request-code-ran"

    def push(self, script: dict[str, Any], *, prints: tuple[str, ...] = ()) -> str:
        """The pull request's head: ``script`` as its agent, with a setup that leaves a mark
        (and prints ``prints``, one line each)."""
        write_script(self.repo, script)
        config = yaml.safe_load((self.repo / "passk.yml").read_text(encoding="utf-8"))
        setup = [
            f"echo ran >> {self.marker}",
            *(f"printf '%s\\n' {shlex.quote(p)}" for p in prints),
        ]
        config["agent"] = {**CONFIG["agent"], "setup": setup}
        (self.repo / "passk.yml").write_text(yaml.safe_dump(config, sort_keys=False), "utf-8")
        self.head = commit(self.repo, "the candidate")
        return self.head

    def run(self, env: dict[str, str], fake: FakeGitHub | None = None) -> Job:
        self.jobs += 1
        n = self.jobs
        log, output, summary = (self.tmp / f"{name}-{n}" for name in ("asked", "out", "sum"))
        base_env = {
            "PATH": "/usr/bin:/bin:/usr/local/bin",
            "HOME": str(self.tmp),
            "GITHUB_ACTIONS": "true",
            "GITHUB_API_URL": fake.url if fake is not None else "http://127.0.0.1:9",
            "GITHUB_SERVER_URL": "https://github.com",
            "GITHUB_REPOSITORY": REPO,
            "GITHUB_RUN_ID": str(4000 + n),
            "GITHUB_WORKSPACE": str(self.repo),
            "GITHUB_OUTPUT": str(output),
            "GITHUB_STEP_SUMMARY": str(summary),
            "INPUT_CONFIG": "passk.yml",
            "PASSK_SCRIPTED_LOG": str(log),
        }
        out, err = io.StringIO(), io.StringIO()
        code = action_main({**base_env, **env}, stdout=out, stderr=err, cwd=self.repo)
        asked = []
        if log.exists():
            for line in log.read_text(encoding="utf-8").splitlines():
                request = json.loads(line)
                asked.append((request["id"], request["attempt"], request["version"]))
        return Job(
            code,
            out.getvalue() + err.getvalue(),
            parse_outputs(output),
            summary.read_text(encoding="utf-8") if summary.exists() else "",
            sorted(asked),
        )

    def pull_request_event(self, name: str = "event-pr.json") -> Path:
        payload = json.loads((SPECS_DIR / "events" / "pull_request.opened.json").read_text("utf-8"))
        pr = payload["pull_request"]
        payload["number"] = pr["number"] = PR
        pr["head"]["sha"], pr["base"]["sha"] = self.head, self.base
        pr["base"]["ref"] = "main"  # as the fake's pull request says (GitHub's current word)
        pr["labels"] = [{"id": 1, "name": name} for name in self.labels]
        path = self.tmp / name
        path.write_text(json.dumps(payload), encoding="utf-8")
        return path

    def measure(self) -> tuple[Job, Path]:
        """Job 1, as the workflow runs it: no token anywhere in its environment."""
        job = self.run(
            {
                "GITHUB_EVENT_NAME": "pull_request",
                "GITHUB_EVENT_PATH": str(self.pull_request_event()),
                "INPUT_MODE": "measure",
            }
        )
        assert job.code == 0, job.log
        # The artifact: the file, handed over as a file, out of the checkout.
        artifact = self.tmp / f"artifact-{self.jobs}" / "measured.json"
        artifact.parent.mkdir()
        shutil.copy(self.repo / job.outputs["measured-run"], artifact)
        return job, artifact

    def workflow_run_event(
        self,
        *,
        pull_requests: tuple[int, ...] = (),
        head: str = "",
        actor: str = "codertocat",
        created_at: str = "2026-01-05T10:00:00Z",
    ) -> Path:
        """GitHub's ``workflow_run`` payload for the measuring run (the fields passk reads):
        ``actor`` triggered it, at ``created_at``."""
        payload = {
            "action": "completed",
            "workflow_run": {
                "id": 31337,
                "name": "passk measure",
                "event": "pull_request",
                "status": "completed",
                "conclusion": "success",
                "head_sha": head or self.head,
                "head_branch": "feature",
                "head_repository": {"full_name": REPO},
                "pull_requests": [{"number": n} for n in pull_requests],
                "actor": {"login": actor},
                "created_at": created_at,
            },
        }
        path = self.tmp / "event-workflow-run.json"
        path.write_text(json.dumps(payload), encoding="utf-8")
        return path

    def gate(
        self, fake: FakeGitHub, artifact: Path, *, event: str = "workflow_run", **kw: Any
    ) -> Job:
        """Job 2: the token, the artifact, and none of the pull request's code."""
        path = (
            self.workflow_run_event(**kw) if event == "workflow_run" else self.pull_request_event()
        )
        return self.run(
            {
                "GITHUB_EVENT_NAME": event,
                "GITHUB_EVENT_PATH": str(path),
                "INPUT_MODE": "gate-measured",
                "INPUT_CANDIDATE-RUN": str(artifact),
                "INPUT_GITHUB-TOKEN": TOKEN,
                "INPUT_COMMENT": "update",
            },
            fake,
        )


def new_pull(tmp_path: Path, template: Path) -> PullRequest:
    repo = tmp_path / "repo"
    shutil.copytree(template, repo, symlinks=True)
    git(repo, "checkout", "-q", "-b", "feature")
    return PullRequest(repo=repo, tmp=tmp_path, base=git(repo, "rev-parse", "main"))


@pytest.fixture
def pull(template: Path, tmp_path: Path) -> PullRequest:
    return new_pull(tmp_path, template)


def fake_for(pull: PullRequest, **changes: Any) -> FakeGitHub:
    return FakeGitHub(
        token=TOKEN,
        repository=REPO,
        pull=FakePull(
            number=PR,
            head_sha=changes.get("head_sha", pull.head),
            base_sha=pull.base,
            base_ref="main",
            head_ref="feature",
            head_repo_full_name=changes.get("head_repo"),
            labels=pull.labels,
        ),
    )


@pytest.fixture
def fake(pull: PullRequest) -> Iterator[Callable[..., FakeGitHub]]:
    started: list[FakeGitHub] = []

    def start(**changes: Any) -> FakeGitHub:
        server = fake_for(pull, **changes).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def candidate_asked(job: Job) -> list[tuple[str, int, str]]:
    return [a for a in job.asked if a[2] == "candidate"]


# --- both jobs, end to end ---------------------------------------------------------------


def test_both_jobs_gate_a_broken_row_and_the_gating_job_runs_none_of_the_prs_code(
    pull: PullRequest, fake: Callable[..., FakeGitHub]
) -> None:
    pull.push(flip_r1())
    measuring, artifact = pull.measure()
    # Job 1: the pull request's agent ran (its setup left the mark), k = 2 per row, and
    # the lost must-not-break row r1 was confirmed twice more; no baseline agent ran.
    assert pull.marker.exists()
    assert {v for _, _, v in measuring.asked} == {"candidate"}
    assert ("r1", 3, "candidate") in measuring.asked and ("r1", 4, "candidate") in measuring.asked
    assert len(measuring.asked) == 4 * 2 + 2
    assert "posts nothing and uses no token" in measuring.log
    assert "passk measured the candidate here" in measuring.summary
    pull.marker.unlink()

    github = fake()
    gating = pull.gate(github, artifact)
    assert gating.code == 1, gating.log
    # Job 2: none of the pull request's code ran; the base's agent confirmed r1.
    assert not pull.marker.exists()
    assert candidate_asked(gating) == []
    assert gating.asked == [("r1", 3, "baseline"), ("r1", 4, "baseline")]
    [check] = github.check_runs
    assert (check["head_sha"], check["status"], check["conclusion"]) == (
        pull.head,
        "completed",
        "failure",
    )
    [body] = github.comment_bodies(PR)
    assert "recorded by the pull request's own job" in body
    assert "`r1`" in body
    record = decode_record(body)
    assert (record.head_sha, record.base_sha, record.passed) == (pull.head, pull.base, False)
    assert gating.outputs["passed"] == "false"
    # This job executed the base's two confirmation attempts, nothing of the candidate's.
    [executions] = [line for line in gating.log.splitlines() if "execution(s) now" in line]
    assert executions.endswith("baseline top-up 0, confirmation 2 + 0)"), executions
    result = json.loads((pull.repo / ".passk/result.json").read_text(encoding="utf-8"))
    assert [(f["id"], f["rule"]) for f in result["gate"]["failures"]] == [("r1", "must-not-break")]
    assert github.violations == []


def test_under_the_sequential_rule_job_one_runs_the_candidates_rounds_and_job_two_the_baselines(
    pull: PullRequest, fake: Callable[..., FakeGitHub]
) -> None:
    """``gate.rule: sequential`` on the base: the measuring job runs the candidate's side of
    every confirmation round (it reads the candidate's answers alone), the gating job the
    baseline's, and finds every candidate attempt it asks for in the file."""
    git(pull.repo, "checkout", "-q", "main")
    config = yaml.safe_load((pull.repo / "passk.yml").read_text(encoding="utf-8"))
    config["gate"] = {"block_on_any_regression": True, "rule": "sequential"}
    (pull.repo / "passk.yml").write_text(yaml.safe_dump(config, sort_keys=False), "utf-8")
    pull.base = commit(pull.repo, "passk: the sequential gate rule")
    git(pull.repo, "checkout", "-q", "-B", "feature")
    pull.push(flip_r1())
    measuring, artifact = pull.measure()
    assert {v for _, _, v in measuring.asked} == {"candidate"}
    # Every row is gated: r1's test fails after 18 answers; the others pass after 7.
    per_row = {row: [n for r, n, _ in measuring.asked if r == row] for row in RIGHT}
    assert per_row == {
        "r1": list(range(1, 19)),
        **{r: list(range(1, 8)) for r in RIGHT if r != "r1"},
    }
    pull.marker.unlink()

    gating = pull.gate(fake(), artifact)
    assert gating.code == 1, gating.log
    assert not pull.marker.exists() and candidate_asked(gating) == []
    assert gating.asked == [("r1", n, "baseline") for n in range(3, 26)]
    result = json.loads((pull.repo / ".passk/result.json").read_text(encoding="utf-8"))
    assert [(f["id"], f["rule"]) for f in result["gate"]["failures"]] == [("r1", "must-not-break")]
    assert result["rows"][0]["verdict"]["candidate"]["attempts"] == 18


def test_control_a_good_pull_request_passes_through_both_jobs(
    pull: PullRequest, fake: Callable[..., FakeGitHub]
) -> None:
    pull.push(RIGHT)
    measuring, artifact = pull.measure()
    assert len(measuring.asked) == 8  # nothing lost: no confirmation
    github = fake()
    gating = pull.gate(github, artifact)
    assert gating.code == 0, gating.log
    assert gating.asked == []  # the committed baseline holds: nothing runs at all
    assert github.check_runs[0]["conclusion"] == "success"
    assert github.violations == []


def test_the_measuring_jobs_relayed_setup_output_is_no_command(
    pull: PullRequest, tmp_path_factory: pytest.TempPathFactory, template: Path
) -> None:
    """Job 1 relays the pull request's setup output through the same log lines as
    a one-job gate: a line the runner would obey is shown, never obeyed."""
    pull.push(RIGHT, prints=tuple(ATTACKS))
    attacked, _ = pull.measure()
    control = new_pull(tmp_path_factory.mktemp("control"), template)
    control.push(RIGHT, prints=tuple(HARMLESS))
    plain, _ = control.measure()
    assert [c.name for c in obeyed(attacked.log)] == [c.name for c in obeyed(plain.log)]
    assert not [c for c in obeyed(attacked.log) if "forged" in c.data or "pwned" in c.data]
    for attack in ATTACKS:
        assert visible(attack) in attacked.log, attack


def test_the_same_workflow_on_pull_request_gates_the_same_way(
    pull: PullRequest, fake: Callable[..., FakeGitHub]
) -> None:
    pull.push(flip_r1())
    _, artifact = pull.measure()
    pull.marker.unlink()
    github = fake()
    gating = pull.gate(github, artifact, event="pull_request")
    assert gating.code == 1, gating.log
    assert not pull.marker.exists() and candidate_asked(gating) == []
    assert github.check_runs[0]["conclusion"] == "failure"
    assert github.violations == []


def test_rerunning_the_measuring_job_cannot_shop_for_a_pass(
    pull: PullRequest, fake: Callable[..., FakeGitHub]
) -> None:
    pull.push(flip_r1())
    _, artifact = pull.measure()
    github = fake()
    assert pull.gate(github, artifact).code == 1
    # A second measuring run of the same commit whose answers came out right (forged
    # here): the gating job replays the verdicts it recorded for this content.
    forged = edit(artifact, lambda doc: set_decisions(doc, "r1", "approve"))
    again = pull.gate(github, forged)
    assert again.code == 1, again.log
    assert again.outputs["reused"] == "true"
    assert "input `candidate-run` is ignored" in again.log
    assert github.violations == []


# --- a forged or edited measured file ------------------------------------------------------


def edit(artifact: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    doc = json.loads(artifact.read_text(encoding="utf-8"))
    change(doc)
    forged = artifact.parent / "forged.json"
    forged.write_text(json.dumps(doc), encoding="utf-8")
    return forged


def set_decisions(doc: dict[str, Any], row: str, decision: str) -> None:
    for attempt in doc["run"]["attempts"]:
        if attempt["row"] == row and "decision" in attempt:
            attempt["decision"] = decision


def relabel_rows(doc: dict[str, Any]) -> None:
    """Claims the candidate answered right: its rows' labels say 'deny' for r1."""
    for row in doc["run"]["rows"]:
        if row["id"] == "r1":
            row["expected"] = "deny"
    for attempt in doc["run"]["attempts"]:
        if attempt["row"] == "r1":
            attempt["decision"] = "deny"


def drop_row(doc: dict[str, Any]) -> None:
    doc["run"]["rows"] = [r for r in doc["run"]["rows"] if r["id"] != "r2"]
    doc["run"]["attempts"] = [a for a in doc["run"]["attempts"] if a["row"] != "r2"]


def drop_attempt(doc: dict[str, Any]) -> None:
    doc["run"]["attempts"] = [a for a in doc["run"]["attempts"] if (a["row"], a["n"]) != ("r3", 2)]


def more_k(doc: dict[str, Any]) -> None:
    """k = 3 (the base says 2), every row with a third main attempt to match."""
    doc["run"]["settings"]["k"] = 3
    extra = [dict(a, n=3) for a in doc["run"]["attempts"] if a["n"] == 2]
    doc["run"]["attempts"] += extra


def other_digest(doc: dict[str, Any]) -> None:
    doc["run"]["dataset_digest"] = "sha256:" + "1" * 64


def other_commit(doc: dict[str, Any]) -> None:
    doc["run"]["agent"]["commit"] = "0" * 40


def other_head(doc: dict[str, Any]) -> None:
    doc["pull_request"]["head_sha"] = "0" * 40


def other_pull_request(doc: dict[str, Any]) -> None:
    doc["pull_request"]["number"] = 8


FORGERIES: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "a row missing": (drop_row, "was recorded on another dataset"),
    "an attempt missing": (drop_attempt, "do not have exactly the main attempts 1..2"),
    "another k": (more_k, "recorded with k=3"),
    "another dataset digest": (other_digest, "was recorded on another dataset (digest sha256:111"),
    "another commit in the run": (other_commit, "was measured at commit 000000000000"),
    "another head in the file": (other_head, "was measured for pull request #7 at 0000000,"),
    "another pull request": (other_pull_request, "cannot read pull request #8"),
    "not JSON": (lambda doc: doc.clear(), "not a measured run"),
}


@pytest.mark.parametrize("forgery", sorted(FORGERIES))
def test_a_forged_measured_file_is_refused_and_the_check_fails_closed(
    pull: PullRequest, fake: Callable[..., FakeGitHub], forgery: str
) -> None:
    pull.push(RIGHT)
    _, artifact = pull.measure()
    change, said = FORGERIES[forgery]
    github = fake()
    refused = pull.gate(github, edit(artifact, change))
    assert refused.code == 2, refused.log
    [error] = [line for line in refused.log.splitlines() if line.startswith("::error")]
    assert said in error, error
    [check] = github.check_runs
    assert (check["status"], check["conclusion"]) == ("completed", "failure")
    assert check["output"]["title"].startswith("passk could not finish: ")
    assert refused.asked == []
    # Control: the untouched file passes.
    assert pull.gate(github, artifact).code == 0
    assert github.violations == []


def test_a_file_claiming_right_answers_by_its_own_labels_is_judged_by_the_bases(
    pull: PullRequest, fake: Callable[..., FakeGitHub]
) -> None:
    pull.push({**RIGHT, "r1": ["deny"]})  # breaks must-not-break r1 (expected approve)
    _, artifact = pull.measure()
    github = fake()
    # The file relabels r1 to what the candidate answered: the labels in the file are
    # never read, the base commit's are.
    gating = pull.gate(github, edit(artifact, relabel_rows))
    assert gating.code == 1, gating.log
    result = json.loads((pull.repo / ".passk/result.json").read_text(encoding="utf-8"))
    assert ("r1", "must-not-break") in {(f["id"], f["rule"]) for f in result["gate"]["failures"]}
    assert github.violations == []


def test_forged_decisions_cannot_be_told_apart_so_the_comment_says_who_recorded_them(
    pull: PullRequest, fake: Callable[..., FakeGitHub]
) -> None:
    """What the gating job cannot verify: that the agent gave the recorded answers.

    A measuring job that writes right answers its agent would not give passes
    (the pull request's code ran there, and on a hosted runner it can become
    root, FACTS.md H1).  The comment says whose word the answers are.
    """
    pull.push({**RIGHT, "r1": ["deny"]})
    _, artifact = pull.measure()
    github = fake()
    gating = pull.gate(github, edit(artifact, lambda doc: set_decisions(doc, "r1", "approve")))
    assert gating.code == 0, gating.log
    assert "recorded by the pull request's own job" in github.comment_bodies(PR)[0]
    assert "cannot check that its agent gave them" in gating.summary


def test_under_workflow_run_the_pull_request_comes_from_github_not_the_file(
    pull: PullRequest, fake: Callable[..., FakeGitHub]
) -> None:
    pull.push(RIGHT)
    _, artifact = pull.measure()
    # The measuring run measured another commit than the pull request's head (it moved
    # on, or the file names a pull request it was not made for): refused.
    github = fake(head_sha="f" * 40)
    moved = pull.gate(github, artifact)
    assert moved.code == 2
    assert "whose head is fffffff, not the commit the measuring run measured" in moved.log
    assert github.check_runs[0]["conclusion"] == "failure"
    # GitHub lists the run's pull requests (same-repository pull requests): the file's
    # number must be one of them.
    github = fake()
    listed = pull.gate(github, artifact, pull_requests=(9,))
    assert listed.code == 2 and "but the measuring run was for #9" in listed.log
    # A fork's head repository must be the run's.
    github = fake(head_repo="mallory/refund-agent")
    fork = pull.gate(github, artifact)
    assert fork.code == 2 and "from 'mallory/refund-agent'" in fork.log
    # Control: GitHub agrees with the run.
    github = fake()
    assert pull.gate(github, artifact, pull_requests=(PR,)).code == 0
    assert github.violations == []


def test_a_missing_measured_file_fails_the_check_saying_why(
    pull: PullRequest, fake: Callable[..., FakeGitHub]
) -> None:
    pull.push(RIGHT)
    github = fake()
    gone = pull.gate(github, pull.tmp / "no-artifact" / "measured.json")
    assert gone.code == 2
    [check] = github.check_runs
    assert check["conclusion"] == "failure" and "measured.json" in check["output"]["title"]


@pytest.mark.parametrize(
    ("loss", "event", "passes"),
    [("expired", "workflow_run", True), ("damaged", "pull_request", False)],
)
def test_rerunning_the_gating_job_without_its_measured_file_replays_the_record(
    pull: PullRequest, fake: Callable[..., FakeGitHub], loss: str, event: str, passes: bool
) -> None:
    """The example workflows keep the measured file 7 days: a re-run of the gating job
    after that (or with a damaged file) replays the verdicts recorded in the comment, as
    a re-run does, instead of failing a recorded pass (issue 30)."""
    pull.push(RIGHT if passes else flip_r1())
    _, artifact = pull.measure()
    github = fake()
    first = pull.gate(github, artifact, event=event, pull_requests=(PR,))
    assert first.code == (0 if passes else 1), first.log
    [recorded] = github.comment_bodies(PR)
    if loss == "expired":
        artifact.unlink()
    else:
        artifact.write_text(artifact.read_text(encoding="utf-8")[:200], encoding="utf-8")
    pull.marker.unlink(missing_ok=True)
    again = pull.gate(github, artifact, event=event, pull_requests=(PR,))
    assert again.code == first.code, again.log
    assert again.outputs["reused"] == "true"
    assert "the verdicts passk recorded for this content are replayed" in again.log
    assert not pull.marker.exists() and candidate_asked(again) == []
    assert [c["conclusion"] for c in github.check_runs] == ["success" if passes else "failure"] * 2
    [body] = github.comment_bodies(PR)
    assert decode_record(body).passed is passes
    assert decode_record(body).candidate_attempts == decode_record(recorded).candidate_attempts
    assert github.violations == []


def test_control_without_a_record_an_unusable_measured_file_still_fails_the_check(
    pull: PullRequest, fake: Callable[..., FakeGitHub]
) -> None:
    pull.push(RIGHT)
    _, artifact = pull.measure()
    artifact.write_text("{", encoding="utf-8")
    github = fake()
    job = pull.gate(github, artifact, pull_requests=(PR,))
    assert job.code == 2 and "replayed" not in job.log
    assert github.check_runs[0]["conclusion"] == "failure"
    assert github.violations == []


def test_a_check_a_killed_run_left_in_progress_is_completed_by_the_next_run(
    pull: PullRequest, fake: Callable[..., FakeGitHub]
) -> None:
    """A killed action never completes its check, which would spin on the pull request for
    ever: the next run of the same check on the same commit completes it (issue 30)."""
    pull.push(RIGHT)
    _, artifact = pull.measure()
    github = fake()
    client = GitHubClient(api_url=github.url, token=TOKEN, repository=REPO)

    def started(name: str, head_sha: str) -> int:
        run = client.create_check_run(
            name=name, head_sha=head_sha, conclusion=None, title="running", summary="killed"
        )
        return int(run["id"])

    stale = started("passk", pull.head)
    # Controls: another check's run, and this check's run on another commit, stay as they are.
    other_name, other_head = started("passk (docs)", pull.head), started("passk", "e" * 40)
    job = pull.gate(github, artifact, pull_requests=(PR,))
    assert job.code == 0, job.log
    runs = {run["id"]: run for run in github.check_runs}
    assert (runs[stale]["status"], runs[stale]["conclusion"]) == ("completed", "cancelled")
    assert runs[stale]["output"]["title"] == "stopped before it finished"
    assert [runs[i]["status"] for i in (other_name, other_head)] == ["in_progress"] * 2
    assert (github.check_runs[-1]["name"], github.check_runs[-1]["conclusion"]) == (
        "passk",
        "success",
    )
    assert "completed 1 check run(s) 'passk' that a stopped run left in progress" in job.log
    assert github.violations == []


def test_the_measuring_job_posts_nothing_even_when_given_a_token(
    pull: PullRequest, fake: Callable[..., FakeGitHub]
) -> None:
    pull.push(flip_r1())
    github = fake()
    job = pull.run(
        {
            "GITHUB_EVENT_NAME": "pull_request",
            "GITHUB_EVENT_PATH": str(pull.pull_request_event()),
            "GITHUB_API_URL": github.url,
            "INPUT_MODE": "measure",
            "INPUT_GITHUB-TOKEN": TOKEN,
        }
    )
    assert job.code == 0, job.log
    assert github.requests == []
    assert TOKEN not in job.log.replace(f"::add-mask::{TOKEN}", "")


def test_a_base_that_moved_on_is_gated_on_the_merge_both_jobs_see(
    pull: PullRequest, fake: Callable[..., FakeGitHub]
) -> None:
    """The measuring job runs the merge commit GitHub checks out; the gating job
    computes the same merge from the base and head commits' git objects."""
    head = pull.push(RIGHT)
    # main moves on after the pull request branched: a new row, recorded in its baseline.
    git(pull.repo, "checkout", "-q", "main")
    rows = (pull.repo / "data.jsonl").read_text(encoding="utf-8")
    new_row = {"id": "r5", "input": {"amount": 60}, "expected": "approve"}
    (pull.repo / "data.jsonl").write_text(rows + json.dumps(new_row) + "\n", encoding="utf-8")
    write_script(pull.repo, {**RIGHT, "r5": ["approve"]})
    pull.base = commit(pull.repo, "main: a new row")
    # The checkout the measuring job gets: the pull request merged into the new base.
    git(pull.repo, "checkout", "-q", "-b", "merge", "main")
    git(pull.repo, "merge", "-q", "--no-ff", "-X", "theirs", "-m", "merge", head)
    measuring, artifact = pull.measure()
    assert ("r5", 1, "candidate") in measuring.asked  # the merge's rows, r5 among them
    git(pull.repo, "checkout", "-q", head)  # the gating job has the head checked out
    github = fake()
    gating = pull.gate(github, artifact)
    # r5 is new to the committed baseline: the base's agent tops it up here.
    assert gating.code == 0, gating.log
    assert [a for a in gating.asked if a[0] == "r5"] == [
        ("r5", 1, "baseline"),
        ("r5", 2, "baseline"),
    ]
    assert candidate_asked(gating) == []
    assert github.violations == []


# --- issue 28 route 5: what a fork's rows may spend in the trusted job --------------------

NEW_ROWS = [
    {"id": f"n{i}", "input": {"amount": 100 + i}, "expected": "approve"} for i in range(1, 5)
]
"""Rows a pull request adds; the base agent answers them right (they are not its to break)."""


@pytest.mark.parametrize("added", [4, 2], ids=["attack-4-rows-over-limit-2", "control-2-rows"])
def test_the_gating_job_runs_the_base_agent_on_a_limited_number_of_added_rows(
    pull: PullRequest, fake: Callable[..., FakeGitHub], added: int
) -> None:
    """Attack: a fork's pull request adds 4 rows; the trusted gating job would run the base
    agent k times on each, on the base repository's key.  The base config's
    ``baseline.added_rows_limit: 2`` caps it: 2 rows x k = 4 calls, and the comment lists
    the other 2 as not measured.  Control: 2 added rows, within the limit, are all
    measured and nothing is listed."""
    git(pull.repo, "checkout", "-q", "main")
    config = yaml.safe_load((pull.repo / "passk.yml").read_text(encoding="utf-8"))
    config["baseline"] = {**config.get("baseline", {}), "added_rows_limit": 2}
    (pull.repo / "passk.yml").write_text(yaml.safe_dump(config, sort_keys=False), "utf-8")
    answers = {**RIGHT, **{r["id"]: ["approve"] for r in NEW_ROWS}}
    write_script(pull.repo, answers)
    pull.base = commit(pull.repo, "passk: at most 2 added rows on the base agent")
    git(pull.repo, "checkout", "-q", "-B", "feature")
    edit_rows(lambda rows: rows.extend(NEW_ROWS[:added]))(pull.repo)
    pull.push(answers)
    _, artifact = pull.measure()
    github = fake()
    gating = pull.gate(github, artifact)  # under workflow_run, as for a fork
    assert gating.code == 0, gating.log
    assert gating.asked == [(f"n{i}", n, "baseline") for i in (1, 2) for n in (1, 2)]
    [executions] = [line for line in gating.log.splitlines() if "execution(s) now" in line]
    assert "baseline top-up 4," in executions
    [body] = github.comment_bodies(PR)
    note = (
        "2 row(s) this pull request adds were not measured on the baseline: the gating job "
        "runs the base agent on at most 2 added row(s) (baseline.added_rows_limit in the base "
        "config), so they are left out of this comparison: n3, n4"
    )
    if added > 2:
        assert note in body, body
    else:
        assert "were not measured on the baseline" not in body
    result = json.loads((pull.repo / ".passk/result.json").read_text(encoding="utf-8"))
    assert result["gate"]["failures"] == []
    compared = [r["id"] for r in result["rows"]]
    assert compared == ["r1", "r2", "r3", "r4", "n1", "n2"][: 4 + min(added, 2)]
    assert read_result(pull.repo / ".passk/result.json").consistent
    assert github.violations == []


# --- issue 28 route 3 under workflow_run: the label binds to the run its adder triggered --

ALLOW = "passk-allow-baseline-change"


@pytest.mark.parametrize("actor", ["attack-a-run-the-author-triggered", "control-the-labeler"])
def test_under_workflow_run_the_label_binds_to_the_measuring_run_its_adder_triggered(
    pull: PullRequest, fake: Callable[..., FakeGitHub], actor: str
) -> None:
    """Under ``workflow_run`` (a fork's pull request) the gating job has no ``labeled``
    payload.  Attack: a maintainer adds the allow label to a protected change (r1
    relabeled); the measuring run being gated is one the author triggered (a push after
    the label): the label does not count for it.  Control: the run the maintainer's
    label triggered, created after the label, is approved and passes."""
    pull.labels = (ALLOW,)
    edit_rows(lambda rows: rows[0].update(expected="deny"))(pull.repo)
    pull.push({**RIGHT, "r1": ["deny"]})
    _, artifact = pull.measure()
    github = fake()
    github.roles["maya"] = "maintain"
    added = github.label_event(PR, ALLOW, "maya")["created_at"]
    login = "maya" if actor == "control-the-labeler" else "codertocat"
    gating = pull.gate(github, artifact, actor=login)
    if actor == "control-the-labeler":
        assert gating.code == 0, gating.log
        assert "approves head" in gating.log and "added by @maya (maintain access)" in gating.log
        assert decode_record(github.comment_bodies(PR)[0]).approval is not None
    else:
        # Not approved: the gate reads the base's labels, and the run measured with the
        # head's is refused, saying the label is why: who added it, what started this
        # run instead, for which head and base, and what is needed.
        assert gating.code == 2, gating.log
        why = (
            f"the label '{ALLOW}' does not count for {pull.head[:7]} against 'main': @maya "
            f"added it at {added}, but @codertocat started the measuring run gated here; it "
            "approves only the head it was added at, so a person with write access removes "
            "the label and adds it again"
        )
        [error] = error_lines(gating)
        assert error.startswith(f"::error title=passk::{why} (the measured run "), error
        assert "another dataset" not in error
        # The comment's reason, and the check's summary, say the same.
        shown = why.replace("@", "@\u2060")
        assert f"**Reason:** {shown}" in github.comment_bodies(PR)[0]
        assert shown in github.check_runs[-1]["output"]["summary"]
        assert github.check_runs[-1]["conclusion"] == "failure"
    assert github.violations == []


@pytest.mark.parametrize("trigger", ["attack-a-pull-request-event", "control-the-labeled-event"])
def test_on_pull_request_the_gating_job_says_which_event_the_label_did_not_start(
    pull: PullRequest, fake: Callable[..., FakeGitHub], trigger: str
) -> None:
    """Both jobs on ``pull_request``: the gating job runs on the pull request's ``opened``
    event, not the one that added the label, and passk has no record of an approval.
    The error says who added it, which event started this run, for which head and base,
    and what is needed.  Control: the gating job of the ``labeled`` event that maintainer
    sent approves the head and passes."""
    pull.labels = (ALLOW,)
    edit_rows(lambda rows: rows[0].update(expected="deny"))(pull.repo)
    pull.push({**RIGHT, "r1": ["deny"]})
    _, artifact = pull.measure()
    github = fake()
    github.roles["maya"] = "maintain"
    github.label_event(PR, ALLOW, "maya")
    if trigger == "control-the-labeled-event":
        event = json.loads(pull.pull_request_event().read_text(encoding="utf-8"))
        event.update(action="labeled", label={"name": ALLOW}, sender={"login": "maya"})
        labeled = pull.tmp / "event-labeled.json"
        labeled.write_text(json.dumps(event), encoding="utf-8")
        gating = pull.run(
            {
                "GITHUB_EVENT_NAME": "pull_request",
                "GITHUB_EVENT_PATH": str(labeled),
                "INPUT_MODE": "gate-measured",
                "INPUT_CANDIDATE-RUN": str(artifact),
                "INPUT_GITHUB-TOKEN": TOKEN,
                "INPUT_COMMENT": "update",
            },
            github,
        )
        assert gating.code == 0, gating.log
        assert "added by @maya (maintain access)" in gating.log
    else:
        gating = pull.gate(github, artifact, event="pull_request")
        assert gating.code == 2, gating.log
        why = (
            f"the label '{ALLOW}' does not count for {pull.head[:7]} against 'main': @maya "
            "added it, but the `opened` event started this run, not the label; it approves "
            "only the head it was added at, so a person with write access removes the label "
            "and adds it again"
        )
        [error] = error_lines(gating)
        assert error.startswith(f"::error title=passk::{why} (the measured run "), error
        shown = why.replace("@", "@\u2060").replace("`", "\\`")  # inert Markdown
        assert f"**Reason:** {shown}" in github.comment_bodies(PR)[0]
    assert github.violations == []


# --- a scorer program from the base commit (issue 33) -------------------------------------

SCORER = """\
import json, sys
request = json.load(sys.stdin)
right = request["expected"] in str(request["answer"])
print(json.dumps({"correct": right, "reason": "the base's scorer"}))
"""


STATE_SCORER = """\
import json, os, sys
request = json.load(sys.stdin)
right = {"r1": "approve", "r2": "deny", "r3": "approve", "r4": "deny"}[request["row_id"]]
state = request["state"]
print(json.dumps({"correct": right in str(request["answer"]) and os.path.isdir(state)}))
"""


def judged_by_a_scorer(pull: PullRequest, by: str = "command") -> None:
    """The base commit: ``scoring.by: <by>`` with its scorer program, the baseline
    recorded under it; the pull request's branch starts there.  ``environment``: the
    rows carry no expected value; the scorer knows each task's and reads its state."""
    git(pull.repo, "checkout", "-q", "main")
    if by == "environment":
        (pull.repo / "scorer.py").write_text(STATE_SCORER, encoding="utf-8")
        write_rows(pull.repo, [{k: v for k, v in r.items() if k != "expected"} for r in ROWS])
    else:
        (pull.repo / "scorer.py").write_text(SCORER, encoding="utf-8")
    config = yaml.safe_load((pull.repo / "passk.yml").read_text(encoding="utf-8"))
    command = [sys.executable, "scorer.py"]
    config["scoring"] = {"by": by, "command": command, "timeout_s": 20}
    (pull.repo / "passk.yml").write_text(yaml.safe_dump(config, sort_keys=False), "utf-8")
    assert cli_main(["baseline", "--config", str(pull.repo / "passk.yml"), "--quiet"]) == 0
    pull.base = commit(pull.repo, "passk: a scorer program judges the answers")
    git(pull.repo, "checkout", "-q", "-B", "feature")


def forge_verdicts(doc: dict[str, Any]) -> None:
    """Every recorded answer judged right, as the pull request's own job could write it."""
    for attempt in doc["run"]["attempts"]:
        if "verdicts" in attempt:
            attempt["decision"] = "success"
            attempt["verdicts"] = [{"correct": True, "reason": "forged"}]


def gated_rows(pull: PullRequest) -> tuple[list[tuple[str, str]], list[Any]]:
    """The last job's failures and its candidate verdict per row, from its result."""
    result = json.loads((pull.repo / ".passk/result.json").read_text(encoding="utf-8"))
    failures = [(f["id"], f["rule"]) for f in result["gate"]["failures"]]
    return failures, [(r["id"], r["verdict"]["candidate"]) for r in result["rows"]]


def test_forged_verdicts_in_the_measured_file_are_judged_again_by_the_bases_scorer(
    pull: PullRequest, fake: Callable[..., FakeGitHub]
) -> None:
    """Under ``by: command`` the gating job ignores the measured file's verdicts: the base
    commit's scorer judges every candidate answer again, as in the one-job mode."""
    judged_by_a_scorer(pull)
    pull.push(flip_r1())
    _, artifact = pull.measure()
    pull.marker.unlink()
    github = fake()
    # The attack: every verdict in the file says right.
    forged = pull.gate(github, edit(artifact, forge_verdicts))
    assert forged.code == 1, forged.log
    assert not pull.marker.exists() and candidate_asked(forged) == []
    assert "passk: answers are judged by " in forged.log
    # The base's scorer judged the recorded answers; no candidate agent ran here.
    assert "agent execution(s) now (candidate 8, " in forged.log
    failures, rows = gated_rows(pull)
    assert failures == [("r1", "must-not-break")]
    assert "forged" not in (pull.repo / ".passk/result.json").read_text(encoding="utf-8")
    # Control: the untouched file (a fresh record, so nothing is replayed) gives the same
    # verdicts ...
    honest = pull.gate(fake(), artifact)
    assert honest.code == 1, honest.log
    assert gated_rows(pull) == (failures, rows)
    # ... as the one-job mode, whose candidate the scorer judges as its agent answers.
    one_job = pull.run(
        {
            "GITHUB_EVENT_NAME": "pull_request",
            "GITHUB_EVENT_PATH": str(pull.pull_request_event("event-one-job.json")),
            "INPUT_GITHUB-TOKEN": TOKEN,
            "INPUT_COMMENT": "update",
        },
        fake(),
    )
    assert one_job.code == 1, one_job.log
    assert gated_rows(pull) == (failures, rows)


def one_job(pull: PullRequest, fake: Callable[..., FakeGitHub]) -> Job:
    """The same pull request gated in one job (``mode: gate``)."""
    return pull.run(
        {
            "GITHUB_EVENT_NAME": "pull_request",
            "GITHUB_EVENT_PATH": str(pull.pull_request_event("event-one-job.json")),
            "INPUT_GITHUB-TOKEN": TOKEN,
            "INPUT_COMMENT": "update",
        },
        fake(),
    )


def measured_by_hand(pull: PullRequest) -> Path:
    """A measured file as the pull request's own job can write it (that job runs its
    code, and a same-repository pull request can edit its workflow): the candidate run
    at the head, wrapped as ``mode: measure`` wraps it."""
    run = pull.tmp / "by-hand" / "run.json"
    run.parent.mkdir()
    config = str(pull.repo / "passk.yml")
    assert cli_main(["run", "--config", config, "--out", str(run), "--quiet"]) == 0
    header = {"number": PR, "head_sha": pull.head, "base_sha": pull.base}
    doc = {"schema_version": 1, "kind": "passk-measured", "pull_request": header}
    doc["run"] = json.loads(run.read_text(encoding="utf-8"))
    measured = run.parent / "measured.json"
    measured.write_text(json.dumps(doc), encoding="utf-8")
    return measured


def error_lines(job: Job) -> list[str]:
    return [line for line in job.log.splitlines() if line.startswith("::error")]


def test_a_state_scorer_is_not_gated_on_verdicts_the_measuring_job_wrote(
    pull: PullRequest, fake: Callable[..., FakeGitHub]
) -> None:
    """Under ``by: environment`` with a ``command`` the base's scorer judges the state each
    attempt left, and that state stays in the measuring job: the gating job cannot judge
    again, so it refuses (exit 2, the check fails closed) rather than take the file's word."""
    judged_by_a_scorer(pull, by="environment")
    pull.push(flip_r1())
    # The attack: the file says every answer right (r1 is wrong on every attempt).
    forged = edit(measured_by_hand(pull), forge_verdicts)
    pull.marker.unlink(missing_ok=True)
    github = fake()
    gating = pull.gate(github, forged)
    assert gating.code == 2, gating.log
    [error] = error_lines(gating)
    assert "passk.yml: scoring.by: the two-job mode cannot check the verdicts" in error, error
    assert "gate in one job (`mode: gate`" in error, error
    assert gating.asked == [] and not pull.marker.exists()
    [check] = github.check_runs
    assert (check["status"], check["conclusion"]) == ("completed", "failure")
    # The measuring job says it too, before any of the pull request's code runs.
    measuring = pull.run(
        {
            "GITHUB_EVENT_NAME": "pull_request",
            "GITHUB_EVENT_PATH": str(pull.pull_request_event()),
            "INPUT_MODE": "measure",
        }
    )
    assert measuring.code == 2, measuring.log
    assert error_lines(measuring) == [error]
    assert measuring.asked == [] and not pull.marker.exists()
    # Control: the same pull request in one job, where the base's scorer judges each
    # attempt's state as the agent leaves it: r1 blocks.
    gated = one_job(pull, fake)
    assert gated.code == 1, gated.log
    assert gated_rows(pull)[0] == [("r1", "must-not-break")]
    assert github.violations == []


def test_control_an_environment_that_reports_its_own_outcome_gates_in_two_jobs(
    pull: PullRequest, fake: Callable[..., FakeGitHub]
) -> None:
    """Without a ``command`` the verdict is the agent's own report in either mode (the
    README's table): the two-job mode takes it as the measuring job recorded it, gates,
    and the comment says whose word the answers are.  Refusing it would only move the
    pull request's code into the job that holds the token."""
    git(pull.repo, "checkout", "-q", "main")
    write_rows(pull.repo, [{k: v for k, v in r.items() if k != "expected"} for r in ROWS])
    write_script(pull.repo, {row: [{"correct": True}] for row in RIGHT})
    config = yaml.safe_load((pull.repo / "passk.yml").read_text(encoding="utf-8"))
    config["scoring"] = {"by": "environment"}
    (pull.repo / "passk.yml").write_text(yaml.safe_dump(config, sort_keys=False), "utf-8")
    assert cli_main(["baseline", "--config", str(pull.repo / "passk.yml"), "--quiet"]) == 0
    pull.base = commit(pull.repo, "passk: the environment scores each task")
    git(pull.repo, "checkout", "-q", "-B", "feature")
    pull.push({**{row: [{"correct": True}] for row in RIGHT}, "r1": [{"correct": False}]})
    _, artifact = pull.measure()
    github = fake()
    gating = pull.gate(github, artifact)
    assert gating.code == 1, gating.log
    assert gated_rows(pull)[0] == [("r1", "must-not-break")]
    assert "recorded by the pull request's own job" in github.comment_bodies(PR)[0]
    assert github.violations == []
