"""A pull request's git repository with passk set up, and the action run on it."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from passk_action.action import main as action_main
from passk_action.cli import main as cli_main
from support.fakegithub import SPECS_DIR, FakeGitHub, FakePull
from support.once import once

TOKEN = "ghs_actionSecretToken0123456789abcdef"
REPO = "octo-org/refund-agent"
EVENTS = SPECS_DIR / "events"
EXAMPLE_BASE_REF = "master"
"""The base branch GitHub's example ``pull_request`` payloads name."""
MAINTAINER = "maya"
"""Who adds labels in these tests unless told otherwise: ``maintain`` access."""

ROWS = [
    {"id": "r1", "input": {"amount": 900}, "expected": "approve", "must_not_break": True},
    {"id": "r2", "input": {"amount": 20}, "expected": "deny", "tags": ["vip"]},
    {"id": "r3", "input": {"amount": 35}, "expected": "approve"},
    {"id": "r4", "input": {"amount": 5}, "expected": "deny"},
]
RIGHT = {"r1": ["approve"], "r2": ["deny"], "r3": ["approve"], "r4": ["deny"]}
CONFIG: dict[str, Any] = {
    "dataset": "data.jsonl",
    "k": 2,
    # Two workers a side at most: each is a process start-up, and these attempts answer
    # at once (bench/suite_speed.md, "Two workers a side").
    "concurrency": 2,
    "agent": {
        "command": [sys.executable, "-m", "passk_action.testing.scripted_agent", "script.json"],
        # One start-up per side, not one per attempt: these tests are about the action
        # and the gate, not the agent protocol (tests/agents tests both protocols).
        "protocol": "worker",
        "timeout_s": 30,
    },
    "baseline": {"artifact": ".passk/baseline.json"},
    "confirm": {"attempts": 2, "must_not_break_attempts": 2},
    "must_not_break": {"tags": ["vip"]},
    # The action's mechanics with the literal rule: a wrong answer blocks at once, so k = 2
    # attempts show each case (the default rule's rounds: test_the_default_rule_...).
    "gate": {"block_on_any_regression": True, "rule": "strict"},
    "retry": {"attempts": 0},
}


def git(repo: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True)
    return proc.stdout.strip()


def write_rows(repo: Path, rows: list[dict[str, Any]]) -> None:
    text = "".join(json.dumps(r) + "\n" for r in rows)
    (repo / "data.jsonl").write_text(text, encoding="utf-8")


def write_config(repo: Path, config: dict[str, Any]) -> None:
    (repo / "passk.yml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")


def write_script(repo: Path, rows: dict[str, Any]) -> None:
    (repo / "script.json").write_text(json.dumps({"rows": rows}), encoding="utf-8")


def commit(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository whose main branch has passk set up, with a recorded baseline.

    Built once per test run (``support.once``), however many modules and workers use
    it: read only, each test copies it (:func:`checkout`).
    """
    return shared_template(tmp_path_factory)


def shared_template(factory: pytest.TempPathFactory) -> Path:
    """:func:`make_template` once per test run; tests copy it, never change it."""
    _, made = once(factory, "pull-request-template", lambda f: str(make_template(f / "repo")))
    return Path(made)


def make_template(repo: Path) -> Path:
    """``repo``: a main branch with the config, the dataset and a recorded baseline."""
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.name", "Dev")
    git(repo, "config", "user.email", "dev@example.com")
    write_config(repo, CONFIG)
    write_rows(repo, ROWS)
    write_script(repo, RIGHT)
    (repo / ".gitignore").write_text(".passk/*\n!.passk/baseline.json\n", encoding="utf-8")
    code = cli_main(["baseline", "--config", str(repo / "passk.yml"), "--quiet"])
    assert code == 0
    commit(repo, "passk: config, dataset and baseline")
    return repo


@dataclass
class Outcome:
    code: int
    stdout: str
    stderr: str
    outputs: dict[str, str]
    summary: str
    asked: list[tuple[str, int, str]]
    files: list[Path] = field(default_factory=list)


@dataclass
class Checkout:
    """One test's clone of the template, with helpers to make head commits and run."""

    repo: Path
    tmp: Path
    base_sha: str
    runs: int = 0

    def head(self, script: dict[str, Any] | None = None, **edits: Any) -> str:
        if script is not None:
            write_script(self.repo, script)
        for edit in edits.get("apply", ()):
            edit(self.repo)
        git(self.repo, "add", "-A")
        git(self.repo, "commit", "-q", "--allow-empty", "-m", "candidate change")
        return git(self.repo, "rev-parse", "HEAD")

    def event(
        self,
        head_sha: str,
        *,
        labels: tuple[str, ...] = (),
        fork: bool = False,
        name: str = "pull_request.opened.json",
        base_ref: str | None = None,
        labeled: tuple[str, str] | None = None,
        edited_from: str | None = None,
    ) -> Path:
        """GitHub's example payload for this head; ``labeled`` (label, sender) makes it the
        ``labeled`` event of that label, from GitHub's example of one."""
        if labeled is not None:
            name = "pull_request.labeled.json"
        payload = json.loads((EVENTS / name).read_text(encoding="utf-8"))
        if labeled is not None:
            payload["label"] = dict(payload["label"], name=labeled[0])
            payload["sender"] = dict(payload["sender"], login=labeled[1])
        if edited_from is not None:
            # The `edited` event of a retargeted pull request (octokit publishes no example
            # of it: its schema, tests/specs/events/pull_request.edited.schema.json).
            payload["action"] = "edited"
            payload["changes"] = {"base": {"ref": {"from": edited_from}, "sha": {"from": "0" * 40}}}
        pr = payload["pull_request"]
        payload["number"] = pr["number"] = 7
        pr["head"]["sha"] = head_sha
        pr["base"]["sha"] = self.base_sha
        if base_ref is not None:
            pr["base"]["ref"] = base_ref
        template = pr["labels"][0] if pr["labels"] else {"id": 1, "name": "x"}
        pr["labels"] = [dict(template, name=label) for label in labels]
        if fork:
            pr["head"]["repo"] = dict(pr["head"]["repo"], full_name="mallory/refund-agent")
        path = self.tmp / f"event-{self.runs}.json"
        path.write_text(json.dumps(payload), encoding="utf-8")
        return path

    def run(
        self,
        fake: FakeGitHub | None,
        head_sha: str,
        *,
        labels: tuple[str, ...] = (),
        fork: bool = False,
        extra_env: dict[str, str] | None = None,
        event_name: str = "pull_request",
        sleep: Callable[[float], None] | None = None,
        base_ref: str | None = None,
        labeled_by: str | None = MAINTAINER,
        current_base_ref: str | None = None,
        edited_from: str | None = None,
    ) -> Outcome:
        """Run the action on a ``pull_request`` event for ``head_sha``.

        With a fake GitHub, each of ``labels`` not on the pull request yet is added
        by ``labeled_by`` (a maintainer unless told otherwise; None adds none), and the
        event is the ``labeled`` event of the first one added; the fake's pull request
        is this one, with base ``current_base_ref`` (default: the event's).
        """
        self.runs += 1
        labeled = None
        if fake is not None:
            if labeled_by is not None:
                fake.roles.setdefault(labeled_by, "maintain")
                for label in labels:
                    if label not in _labels_on(fake, 7):
                        fake.label_event(7, label, labeled_by)
                        labeled = labeled or (label, labeled_by)
            event_base = base_ref if base_ref is not None else EXAMPLE_BASE_REF
            fake.pull = FakePull(
                number=7,
                head_sha=head_sha,
                base_sha=self.base_sha,
                base_ref=current_base_ref or event_base,
                labels=labels,
                head_repo_full_name="mallory/refund-agent" if fork else None,
            )
        n = self.runs
        log = self.tmp / f"asked-{n}.jsonl"
        output = self.tmp / f"output-{n}.txt"
        summary = self.tmp / f"summary-{n}.md"
        env = {
            "PATH": "/usr/bin:/bin:/usr/local/bin",
            "HOME": str(self.tmp),
            "GITHUB_ACTIONS": "true",
            "GITHUB_EVENT_NAME": event_name,
            "GITHUB_EVENT_PATH": str(
                self.event(
                    head_sha,
                    labels=labels,
                    fork=fork,
                    base_ref=base_ref,
                    labeled=labeled,
                    edited_from=edited_from,
                )
            ),
            "GITHUB_API_URL": fake.url if fake is not None else "http://127.0.0.1:9",
            "GITHUB_SERVER_URL": "https://github.com",
            "GITHUB_REPOSITORY": REPO,
            "GITHUB_RUN_ID": "4242",
            "GITHUB_WORKSPACE": str(self.repo),
            "GITHUB_OUTPUT": str(output),
            "GITHUB_STEP_SUMMARY": str(summary),
            "INPUT_GITHUB-TOKEN": TOKEN,
            "INPUT_CONFIG": "passk.yml",
            "INPUT_COMMENT": "update",
            "INPUT_CHECK-NAME": "passk",
            "INPUT_MODE": "gate",
            "INPUT_WORKING-DIRECTORY": ".",
            "PASSK_SCRIPTED_LOG": str(log),
        }
        env.update(extra_env or {})
        out, err = io.StringIO(), io.StringIO()
        waits: list[float] = []
        code = action_main(env, stdout=out, stderr=err, cwd=self.repo, sleep=sleep or waits.append)
        asked = []
        if log.exists():
            for line in log.read_text(encoding="utf-8").splitlines():
                request = json.loads(line)
                asked.append((request["id"], request["attempt"], request["version"]))
        return Outcome(
            code=code,
            stdout=out.getvalue(),
            stderr=err.getvalue(),
            outputs=parse_outputs(output),
            summary=summary.read_text(encoding="utf-8") if summary.exists() else "",
            asked=sorted(asked),
            files=[output, summary],
        )


def _labels_on(fake: FakeGitHub, number: int) -> set[str]:
    on: set[str] = set()
    for event in fake.issue_events.get(number, []):
        name = event["label"]["name"]
        if event["event"] == "labeled":
            on.add(name)
        else:
            on.discard(name)
    return on


def parse_outputs(path: Path) -> dict[str, str]:
    """Read GITHUB_OUTPUT the way the runner does (heredoc form only)."""
    if not path.exists():
        return {}
    outputs: dict[str, str] = {}
    lines = path.read_text(encoding="utf-8").split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line:
            i += 1
            continue
        name, delimiter = line.split("<<", 1)
        end = lines.index(delimiter, i + 1)
        outputs[name] = "\n".join(lines[i + 1 : end])
        i = end + 1
    return outputs


@pytest.fixture
def checkout(template: Path, tmp_path: Path) -> Checkout:
    repo = tmp_path / "repo"
    shutil.copytree(template, repo, symlinks=True)
    git(repo, "checkout", "-q", "-b", "feature")
    return Checkout(repo=repo, tmp=tmp_path, base_sha=git(repo, "rev-parse", "main"))


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    with FakeGitHub(token=TOKEN, repository=REPO) as server:
        yield server


def flip_r1() -> dict[str, Any]:
    """The candidate breaks must-not-break row r1: right once, then wrong."""
    return {**RIGHT, "r1": ["approve", "deny"]}


def edit_config(change: Callable[[dict[str, Any]], None]) -> Callable[[Path], None]:
    def apply(repo: Path) -> None:
        config = yaml.safe_load((repo / "passk.yml").read_text(encoding="utf-8"))
        change(config)
        write_config(repo, config)

    return apply


def edit_rows(change: Callable[[list[dict[str, Any]]], None]) -> Callable[[Path], None]:
    def apply(repo: Path) -> None:
        rows = [json.loads(line) for line in (repo / "data.jsonl").read_text("utf-8").splitlines()]
        change(rows)
        write_rows(repo, rows)

    return apply


def run_baseline(
    repo: Path, tmp: Path, update: str, extra_env: dict[str, str] | None = None
) -> tuple[int, str, dict[str, str], str]:
    event = tmp / "push.json"
    payload = json.loads((EVENTS / "push.with-new-branch.json").read_text(encoding="utf-8"))
    payload["after"] = git(repo, "rev-parse", "HEAD")
    event.write_text(json.dumps(payload), encoding="utf-8")
    output, summary = tmp / "output.txt", tmp / "summary.md"
    env = {
        "PATH": "/usr/bin:/bin:/usr/local/bin",
        "GITHUB_EVENT_NAME": "push",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_REPOSITORY": "octo-org/refund-agent",
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_WORKSPACE": str(repo),
        "GITHUB_OUTPUT": str(output),
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_REF_NAME": "main",
        "INPUT_GITHUB-TOKEN": TOKEN,
        "INPUT_MODE": "baseline",
        "INPUT_BASELINE-UPDATE": update,
        **(extra_env or {}),
    }
    out = io.StringIO()
    code = action_main(env, stdout=out, stderr=io.StringIO(), cwd=repo)
    return code, out.getvalue(), parse_outputs(output), summary.read_text(encoding="utf-8")
