"""The base's config is the starting point: what a pull request's ``passk.yml`` may change.

Issue 28, round 4 of the attacks on the gate: the pull request writes its own
``passk.yml`` to reach the job's token (route 1), to make a broken gated row
vanish (route 2) or to hold the runner (route 6).  Each attack runs the action
as the other action tests do (a real git repository, a real agent process,
the fake GitHub), beside its control: the same steps without the attack.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from passk_action.cli import main as cli_main
from support.fakegithub import FakeGitHub
from support.paths import TESTS
from support.pull_request_repo import (
    RIGHT,
    TOKEN,
    Checkout,
    Outcome,
    checkout,
    commit,
    edit_config,
    edit_rows,
    fake,
    git,
    template,
)
from support.words import notes_of, worded

__all__ = ["checkout", "fake", "template"]  # the shared fixtures, used by name

THIEF = TESTS / "data" / "agents" / "token_thief.py"
ANSWERS = {row: decisions[0] for row, decisions in RIGHT.items()}
# The job's token under every name a workflow or the runner gives it, and one more.
WORKFLOW_ENV = {
    "GITHUB_TOKEN": TOKEN,
    "GH_TOKEN": TOKEN,
    "ACTIONS_RUNTIME_TOKEN": TOKEN,
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN": TOKEN,
    "ACTIONS_ID_TOKEN_REQUEST_URL": "http://127.0.0.1:9/token",
    "MY_COPY": f"Bearer {TOKEN}",
}


def thief_agent(**agent: Any) -> Any:
    """The head's agent: the token thief, its setup the thief too (``agent`` adds keys)."""

    def apply(repo: Path) -> None:
        shutil.copy(THIEF, repo / "thief.py")
        edit_config(
            lambda c: c["agent"].update(
                command=[sys.executable, "thief.py"],
                protocol="process",
                setup=[f"{shlex.quote(sys.executable)} thief.py --setup"],
                env={"THIEF_RIGHT": json.dumps(ANSWERS)},
                **agent,
            )
        )(repo)

    return apply


def stolen(checkout: Checkout) -> list[dict[str, Any]]:
    """What the thief recorded, setup and attempts: the names it found a token in."""
    out = checkout.tmp / "thief.jsonl"
    if not out.exists():
        return []
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


def forged_checks(fake: FakeGitHub) -> list[dict[str, Any]]:
    return [run for run in fake.check_runs if "forged" in json.dumps(run)]


def run_thief(checkout: Checkout, fake: FakeGitHub, head: str) -> Outcome:
    env = {**WORKFLOW_ENV, "THIEF_OUT": str(checkout.tmp / "thief.jsonl")}
    return checkout.run(fake, head, extra_env=env)


# --- route 1: no config hands an agent the runner's credentials -------------------------


def test_the_token_under_a_name_of_its_own_never_reaches_the_agent_or_its_setup(
    checkout: Checkout, fake: FakeGitHub
) -> None:
    # The head passes on the variable that holds a copy of the token: before, pass_env kept
    # it from the scrub, and the agent posted a green check on its own head commit.
    outcome = run_thief(
        checkout, fake, checkout.head(None, apply=[thief_agent(pass_env=["MY_COPY"])])
    )
    assert outcome.code == 0, outcome.stdout
    seen = stolen(checkout)
    assert [r["setup"] for r in seen].count(True) == 1 and len(seen) == 1 + 8
    assert all(r["names"] == [] and r["posted"] == [] for r in seen), seen
    assert forged_checks(fake) == []
    [check] = fake.check_runs
    assert check["conclusion"] == "success" and "forged" not in json.dumps(check)
    assert f"{outcome.stdout}".count("agent.pass_env: has no effect") == 1
    assert fake.violations == []


def test_control_the_same_pull_request_without_pass_env_gates_as_usual(
    checkout: Checkout, fake: FakeGitHub
) -> None:
    outcome = run_thief(checkout, fake, checkout.head(None, apply=[thief_agent()]))
    assert outcome.code == 0, outcome.stdout
    assert all(r["names"] == [] for r in stolen(checkout)) and len(stolen(checkout)) == 9
    assert [run["conclusion"] for run in fake.check_runs] == ["success"]
    assert fake.violations == []


def test_control_the_thief_posts_a_green_check_when_it_holds_the_token(
    checkout: Checkout, fake: FakeGitHub
) -> None:
    # Without passk between them, the same agent with the token in its environment
    # posts the check the attack is after: the probe above is a real one.
    head = checkout.head(None, apply=[thief_agent()])
    event = checkout.event(head)
    env = {
        "PATH": os.environ.get("PATH", ""),
        "GITHUB_TOKEN": TOKEN,
        "GITHUB_API_URL": fake.url,
        "GITHUB_REPOSITORY": "octo-org/refund-agent",
        "GITHUB_EVENT_PATH": str(event),
        "THIEF_OUT": str(checkout.tmp / "thief.jsonl"),
    }
    subprocess.run([sys.executable, str(THIEF), "--setup"], env=env, check=True, timeout=60)
    assert stolen(checkout) == [{"setup": True, "names": ["GITHUB_TOKEN"], "posted": [201]}]
    [forged] = forged_checks(fake)
    assert (forged["head_sha"], forged["conclusion"]) == (head, "success")


@pytest.mark.parametrize(
    "name",
    [
        "INPUT_GITHUB-TOKEN",
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "ACTIONS_RUNTIME_TOKEN",
        "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
    ],
)
def test_a_head_config_passing_a_runner_credential_is_refused_before_anything_runs(
    checkout: Checkout, fake: FakeGitHub, name: str
) -> None:
    # The one line: agent: {pass_env: ["INPUT_GITHUB-TOKEN"]} in the head's passk.yml.
    outcome = run_thief(checkout, fake, checkout.head(None, apply=[thief_agent(pass_env=[name])]))
    assert outcome.code == 2, outcome.stdout
    [error] = [x for x in outcome.stdout.splitlines() if x.startswith("::error")]
    assert "agent.pass_env[0]" in error and f"{name} is a credential of the runner" in error
    assert stolen(checkout) == [] and outcome.asked == []  # neither setup nor an attempt ran
    assert forged_checks(fake) == []
    assert [run["conclusion"] for run in fake.check_runs] == ["failure"]
    assert fake.violations == []


def test_a_base_config_passing_a_runner_credential_is_refused_too(
    checkout: Checkout, fake: FakeGitHub
) -> None:
    repo = checkout.repo
    git(repo, "checkout", "-q", "main")
    edit_config(lambda c: c["agent"].update(pass_env=["GITHUB_TOKEN"]))(repo)
    checkout.base_sha = commit(repo, "base passes the token")
    git(repo, "checkout", "-q", "-B", "feature")
    head = checkout.head(None, apply=[thief_agent(pass_env=[])])
    outcome = run_thief(checkout, fake, head)
    assert outcome.code == 2, outcome.stdout
    [error] = [x for x in outcome.stdout.splitlines() if x.startswith("::error")]
    assert f"in the base commit {checkout.base_sha[:7]}" in error
    assert "agent.pass_env[0]: " in error and "GITHUB_TOKEN is a credential of the runner" in error
    assert stolen(checkout) == [] and forged_checks(fake) == []


# --- route 1: every other setting is the base's ------------------------------------------

CRASH_ONCE = """\
import json, os, sys
request = json.loads(sys.stdin.readline())
mark = os.path.join(os.environ["CRASH_DIR"], "{id}-{attempt}-{version}".format(**request))
if request["id"] == "r1" and not os.path.exists(mark):
    open(mark, "w").close()
    sys.exit("model overloaded")
print(json.dumps({"decision": json.loads(os.environ["ANSWERS"])[request["id"]]}))
"""


def new_base(checkout: Checkout, edit: Any) -> None:
    """A new commit on main (the pull request's base): ``edit``, the baseline recorded again."""
    repo = checkout.repo
    git(repo, "checkout", "-q", "main")
    edit(repo)
    assert cli_main(["baseline", "--config", str(repo / "passk.yml"), "--quiet"]) == 0
    checkout.base_sha = commit(repo, "base change")
    git(repo, "checkout", "-q", "-B", "feature")


def crash_once_agent(checkout: Checkout) -> Any:
    """The head's agent crashes on each first try of must-not-break row r1, then answers."""

    def apply(repo: Path) -> None:
        (repo / "crash_once.py").write_text(CRASH_ONCE, encoding="utf-8")
        env = {"CRASH_DIR": str(checkout.tmp), "ANSWERS": json.dumps(ANSWERS)}
        edit_config(
            lambda c: c["agent"].update(
                command=[sys.executable, "crash_once.py"], protocol="process", env=env
            )
        )(repo)

    return apply


def test_a_head_cannot_retry_its_crashes_into_a_pass(checkout: Checkout, fake: FakeGitHub) -> None:
    # The base counts a crash (retry.attempts: 0); the head's config retries it away.
    retry = edit_config(lambda c: c.update(retry={"attempts": 3, "backoff_s": 0}))
    outcome = checkout.run(fake, checkout.head(None, apply=[crash_once_agent(checkout), retry]))
    assert outcome.code == 1, outcome.stdout
    result = json.loads((checkout.repo / ".passk/result.json").read_text("utf-8"))
    assert [f["id"] for f in worded(result)] == ["r1"]
    [note] = [x for x in outcome.stdout.splitlines() if "not used" in x]
    assert note.startswith("::warning") and "changes retry.attempts, retry.backoff_s:" in note
    # The reader of the pull request sees it too: the comment names the keys not used.
    [comment] = fake.comments[7]
    assert "changes retry.attempts, retry.backoff_s: not used" in comment["body"]
    # ... and the result keeps it with its warnings, as a kind (worded here as it was said).
    assert [w for w in notes_of(result, "warnings") if "retry.attempts" in w] == [
        note.split("::", 2)[-1]
    ]
    assert fake.violations == []


def test_control_the_retries_the_base_grants_are_used(checkout: Checkout, fake: FakeGitHub) -> None:
    new_base(checkout, edit_config(lambda c: c.update(retry={"attempts": 3, "backoff_s": 0})))
    outcome = checkout.run(fake, checkout.head(None, apply=[crash_once_agent(checkout)]))
    assert outcome.code == 0, outcome.stdout
    assert "not used" not in outcome.stdout
    assert "not used" not in fake.comments[7][0]["body"]
    assert fake.violations == []


# --- route 6: the head's timeouts are bounded by the base's --------------------------------


def setup_for(seconds: str, timeout_s: float) -> Any:
    return edit_config(
        lambda c: c["agent"].update(setup=[f"sleep {seconds}"], setup_timeout_s=timeout_s)
    )


@pytest.fixture
def two_second_base(checkout: Checkout) -> Checkout:
    new_base(checkout, edit_config(lambda c: c["agent"].update(setup_timeout_s=2)))
    return checkout


def test_a_head_raising_setup_timeout_s_is_held_to_the_bases(
    two_second_base: Checkout, fake: FakeGitHub
) -> None:
    checkout = two_second_base
    started = time.monotonic()
    outcome = checkout.run(fake, checkout.head(RIGHT, apply=[setup_for("8", 1e6)]))
    assert time.monotonic() - started < 8
    assert outcome.code == 2, outcome.stdout
    assert "setup command `sleep 8` did not finish within 2s" in outcome.stdout
    [note] = [x for x in outcome.stdout.splitlines() if "above the base's" in x]
    assert note.startswith("::warning") and "agent.setup_timeout_s is 1e+06s" in note
    assert [run["conclusion"] for run in fake.check_runs] == ["failure"]
    assert fake.violations == []


def test_control_a_head_may_lower_setup_timeout_s(
    two_second_base: Checkout, fake: FakeGitHub
) -> None:
    checkout = two_second_base
    outcome = checkout.run(fake, checkout.head(RIGHT, apply=[setup_for("8", 1)]))
    assert outcome.code == 2, outcome.stdout
    assert "setup command `sleep 8` did not finish within 1s" in outcome.stdout
    assert "above the base's" not in outcome.stdout


def test_control_a_setup_within_the_bases_limit_runs_as_usual(
    two_second_base: Checkout, fake: FakeGitHub
) -> None:
    checkout = two_second_base
    outcome = checkout.run(fake, checkout.head(RIGHT, apply=[setup_for("0.1", 1e6)]))
    assert outcome.code == 0, outcome.stdout
    assert "$ sleep 0.1" in outcome.stdout
    assert [run["conclusion"] for run in fake.check_runs] == ["success"]


# --- route 2: a protected change is judged by what it does to a gated row ------------------
# The base blocks on any regression: r3 (no mark) is gated because the baseline has it right.


def gate_failures(checkout: Checkout) -> list[tuple[str | None, str, str]]:
    result = json.loads((checkout.repo / ".passk/result.json").read_text("utf-8"))
    return [(f["id"], f["rule"], f["reason"]) for f in worded(result)]


R3_BROKEN = {**RIGHT, "r3": ["deny"]}


def test_under_any_regression_deleting_a_broken_row_is_a_protected_change(
    checkout: Checkout, fake: FakeGitHub
) -> None:
    # The candidate breaks r3, and the pull request deletes r3: the regression would vanish.
    head = checkout.head(R3_BROKEN, apply=[edit_rows(lambda rows: rows.pop(2))])
    outcome = checkout.run(fake, head)
    assert outcome.code == 1, outcome.stdout
    assert gate_failures(checkout) == [
        (
            "r3",
            "protected-change",
            "row is removed from the dataset (gate.block_on_any_regression is on)",
        )
    ]
    assert fake.violations == []


def test_under_any_regression_changing_a_rows_input_is_a_protected_change(
    checkout: Checkout, fake: FakeGitHub
) -> None:
    # r3's input swapped for another under the same id: its baseline verdicts are for the old.
    head = checkout.head(RIGHT, apply=[edit_rows(lambda rows: rows[2].update(input={"amount": 1}))])
    outcome = checkout.run(fake, head)
    assert outcome.code == 1, outcome.stdout
    [(row, rule, reason)] = gate_failures(checkout)
    assert (row, rule) == ("r3", "protected-change")
    assert reason.startswith("row's input is changed") and "block_on_any_regression" in reason


def test_control_the_broken_row_kept_fails_as_a_regression(
    checkout: Checkout, fake: FakeGitHub
) -> None:
    outcome = checkout.run(fake, checkout.head(R3_BROKEN))
    assert outcome.code == 1, outcome.stdout
    assert [(row, rule) for row, rule, _ in gate_failures(checkout)] == [("r3", "regression")]


def test_control_without_the_block_deleting_an_ungated_row_is_the_pull_requests(
    checkout: Checkout, fake: FakeGitHub
) -> None:
    new_base(checkout, edit_config(lambda c: c["gate"].update(block_on_any_regression=False)))
    head = checkout.head(R3_BROKEN, apply=[edit_rows(lambda rows: rows.pop(2))])
    outcome = checkout.run(fake, head)
    assert outcome.code == 0, outcome.stdout
    assert gate_failures(checkout) == []
