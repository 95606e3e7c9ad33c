"""``passk action`` in gate mode, end to end: a real git repository, the scripted agent
as a real process, and the local fake GitHub (never a patched ``requests``).

The base commit holds a config, a 4-row dataset and a baseline recorded with
the scripted agent; each test adds head commits that change the agent's
script (or the protected files) and runs the action on a patched copy of
GitHub's own ``pull_request`` event payload.
"""

from __future__ import annotations

import base64
import gzip
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from passk_action.cli import main as cli_main
from passk_action.github.sticky_comment import MARKER, decode_record, encode_record, without_record
from passk_action.store.results import read_result
from support.fakegithub import FakeGitHub
from support.pull_request_repo import (
    CONFIG,
    REPO,
    RIGHT,
    ROWS,
    TOKEN,
    Checkout,
    Outcome,
    checkout,
    commit,
    edit_config,
    edit_rows,
    fake,
    flip_r1,
    git,
    template,
    write_config,
    write_rows,
    write_script,
)
from support.words import gate_warnings_of, notes_of, worded

__all__ = ["checkout", "fake", "template"]  # the shared fixtures, used by name


def assert_token_never_leaked(
    checkout: Checkout, fake: FakeGitHub | None, *outcomes: Outcome
) -> None:
    texts = []
    for outcome in outcomes:
        # The mask registration is the one line that must carry the token.
        texts += [outcome.stdout.replace(f"::add-mask::{TOKEN}\n", "", 1)]
        texts += [outcome.stderr, outcome.summary]
        texts += [p.read_text(encoding="utf-8") for p in outcome.files if p.exists()]
    for path in checkout.repo.rglob("*"):
        if path.is_file() and ".git" not in path.parts:
            texts.append(path.read_text(encoding="utf-8", errors="replace"))
    for path in checkout.tmp.glob("asked-*.jsonl"):
        texts.append(path.read_text(encoding="utf-8"))
    if fake is not None:
        texts += [json.dumps(r.body) for r in fake.requests]
    leaked = [t for t in texts if TOKEN in t]
    assert leaked == []
    # The mask is registered, once, before anything else is printed.
    for outcome in outcomes:
        assert outcome.stdout.startswith(f"::add-mask::{TOKEN}\n")
        assert outcome.stdout.count(TOKEN) == 1


def all_candidate_attempts(k: int = 2) -> list[tuple[str, int, str]]:
    return sorted((r["id"], n, "candidate") for r in ROWS for n in range(1, k + 1))


# --- the gate on a pull request ------------------------------------------------------


def test_first_run_posts_one_comment_and_one_check(checkout: Checkout, fake: FakeGitHub) -> None:
    head = checkout.head(RIGHT)
    outcome = checkout.run(fake, head)
    assert outcome.code == 0, outcome.stdout
    assert outcome.asked == all_candidate_attempts()  # the baseline is reused, not re-run
    latency = outcome.outputs.pop("latency-p95")
    assert float(latency) > 0  # the attempts' wall time, whatever this machine's speed
    assert outcome.outputs == {
        "cost-per-decision": "",  # this agent reports no usage
        "passed": "true",
        "mean-accuracy": "1.0000",
        "pass-k": "1.0000",
        "flip-rate": "0.0000",
        "gained": "0",
        "lost": "0",
        "result": ".passk/result.json",
        "reused": "false",
        "report": ".passk/report.md",
        "comment-url": fake.comments[7][0]["html_url"],
        "check-url": fake.check_runs[0]["html_url"],
    }
    bodies = fake.comment_bodies(7)
    assert len(bodies) == 1 and bodies[0].startswith(MARKER)
    record = decode_record(bodies[0])
    assert (record.head_sha, record.base_sha, record.passed) == (head, checkout.base_sha, True)
    assert record.candidate_attempts is not None and len(record.candidate_attempts) == 8
    assert len(fake.check_runs) == 1
    check = fake.check_runs[0]
    assert (check["name"], check["head_sha"], check["conclusion"]) == ("passk", head, "success")
    assert check["output"]["title"] == (
        f"passed: 0 gained, 0 lost · vs master at {checkout.base_sha[:12]}"
    )
    assert "passk:record" not in check["output"]["summary"]
    assert "# ✅ passk: gate passed" in outcome.summary
    result = json.loads((checkout.repo / ".passk/result.json").read_text(encoding="utf-8"))
    assert result["gate"]["passed"] is True
    assert "::group::passk: gate" in outcome.stdout
    assert fake.violations == []
    assert_token_never_leaked(checkout, fake, outcome)


def test_the_sequential_rule_confirms_gated_rows_in_rounds_and_a_rerun_replays_them(
    checkout: Checkout, fake: FakeGitHub
) -> None:
    """``gate.rule: sequential`` on the base commit: every gated row gets the
    answers its test needs, a broken one is confirmed on both versions in rounds, and a
    re-run of the same commit replays every round without asking either agent."""
    git(checkout.repo, "checkout", "-q", "main")
    gate = {"rule": "sequential", "block_on_any_regression": True}
    write_config(checkout.repo, {**CONFIG, "gate": gate})
    checkout.base_sha = commit(checkout.repo, "passk: the sequential gate rule")
    git(checkout.repo, "checkout", "-q", "-b", "sequential")
    # All four rows are gated (r1, r2 must-not-break; r3, r4 stable-correct on the
    # baseline under block_on_any_regression): 7 right answers pass a row, so 5 more each.
    clean = checkout.run(fake, checkout.head(RIGHT))
    assert clean.code == 0, clean.stdout
    assert clean.asked == sorted((r["id"], n, "candidate") for r in ROWS for n in range(1, 8))
    head = checkout.head(flip_r1())
    first = checkout.run(fake, head)
    assert first.code == 1
    # r1: right, then wrong; round 1 asks what one wrong answer needs (18 answers), the
    # third wrong ends the candidate's test; round 2 asks the baseline for 23 more.
    r1 = [(n, version) for row_id, n, version in first.asked if row_id == "r1"]
    assert [n for n, v in r1 if v == "candidate"] == list(range(1, 19))
    assert [n for n, v in r1 if v == "baseline"] == list(range(3, 26))
    path = checkout.repo / ".passk/result.json"
    result = json.loads(path.read_text("utf-8"))
    assert [(f["id"], f["rule"]) for f in worded(result)] == [("r1", "must-not-break")]
    verdicts = {r["id"]: r["verdict"]["finding"] for r in result["rows"]}
    assert verdicts == {
        "r1": "regression", "r2": "reliable", "r3": "reliable", "r4": "reliable"
    }  # fmt: skip
    body = fake.comments[7][0]["body"]
    assert "- **evidence:** 17 wrong of 18 attempts; baseline 0 of 25;" in body
    again = checkout.run(fake, head)
    assert (again.code, again.asked, again.outputs["reused"]) == (1, [], "true")
    assert json.loads(path.read_text("utf-8"))["gate"] == result["gate"]
    assert cli_main(["gate", str(path)]) == 1  # the audit recomputes the same verdicts
    assert read_result(path).consistent
    assert fake.violations == []


@pytest.mark.parametrize("allowed", [False, True], ids=["attack", "control-allowed"])
def test_under_the_sequential_rule_a_pr_cannot_make_wrong_answers_right_by_its_scoring_rules(
    checkout: Checkout, fake: FakeGitHub, allowed: bool
) -> None:
    """Attack: ``gate.rule: sequential`` on the base; the branch's agent answers the
    must-not-break row r1 in a sentence and its config reads the sentence with a regex.
    Every answer of every round is judged by the base's rules (no extractor), so r1 is
    wrong on the candidate, its rounds end in a regression, and the scoring change is a
    protected change.  Control: with the allow label the head's rules stand, the same
    answers are right in every round, and the gate passes."""
    git(checkout.repo, "checkout", "-q", "main")
    gate = {"rule": "sequential", "block_on_any_regression": True}
    write_config(checkout.repo, {**CONFIG, "gate": gate})
    checkout.base_sha = commit(checkout.repo, "passk: the sequential gate rule")
    git(checkout.repo, "checkout", "-q", "-b", "sentences")
    regex = edit_config(lambda c: c.update(scoring={"extract": {"regex": "(approve|deny)"}}))
    head = checkout.head({**RIGHT, "r1": ["I would approve it"]}, apply=[regex])
    labels = ("passk-allow-baseline-change",) if allowed else ()
    outcome = checkout.run(fake, head, labels=labels)
    path = checkout.repo / ".passk/result.json"
    result = json.loads(path.read_text("utf-8"))
    verdict = {r["id"]: r["verdict"] for r in result["rows"]}["r1"]
    r1 = [a for a in result["candidate"]["run"]["attempts"] if a["row"] == "r1"]
    changes = [c["kind"] for c in result["protected_changes"]]
    assert changes == ["scoring-rules-changed"]
    assert verdict["rule"] == "sequential"
    if allowed:
        assert outcome.code == 0, outcome.stdout
        assert worded(result) == []
        assert verdict["finding"] == "reliable"
        # The regex read every round's answer: the decision beside the sentence it came from.
        assert {(a["decision"], a["answer"]) for a in r1} == {("approve", "I would approve it")}
        assert len(r1) >= 7  # the rule's rounds, judged by the same rules as the gate
    else:
        assert outcome.code == 1, outcome.stdout
        failures = [(f["id"], f["rule"]) for f in worded(result)]
        assert failures == [(None, "protected-change"), ("r1", "must-not-break")]
        assert verdict["finding"] == "regression"
        assert {a["decision"] for a in r1} == {"I would approve it"}
        body = fake.comments[7][0]["body"]
        assert f"- **evidence:** {len(r1)} wrong of {len(r1)} attempts; baseline 0 of" in body
    assert cli_main(["gate", str(path)]) == outcome.code  # the audit judges alike
    assert fake.violations == []


def test_new_head_updates_the_same_comment(checkout: Checkout, fake: FakeGitHub) -> None:
    first = checkout.run(fake, checkout.head(RIGHT))
    assert first.code == 0
    comment_id = fake.comments[7][0]["id"]
    head = checkout.head(flip_r1())
    second = checkout.run(fake, head, extra_env={"INPUT_COMMENT": ""})  # blank: the default
    assert second.code == 1
    assert len(fake.comments[7]) == 1 and fake.comments[7][0]["id"] == comment_id
    assert "### ❌ passk: 1 must-not-break row broke: `r1`" in fake.comments[7][0]["body"]
    assert decode_record(fake.comments[7][0]["body"]).head_sha == head
    assert [c["conclusion"] for c in fake.check_runs] == ["success", "failure"]
    assert second.outputs["passed"] == "false" and second.outputs["lost"] == "1"
    # r1 was confirmed on both versions: the base agent ran in an export of the base commit.
    assert ("r1", 3, "baseline") in second.asked and ("r1", 4, "candidate") in second.asked
    assert "::error title=passk gate::r1: must-not-break row" in second.stdout
    assert git(checkout.repo, "worktree", "list").count("\n") == 0  # the worktree is gone
    assert fake.violations == []


def test_rerun_on_the_same_head_replays_the_record(checkout: Checkout, fake: FakeGitHub) -> None:
    head = checkout.head(flip_r1())
    first = checkout.run(fake, head)
    assert first.code == 1 and first.asked
    again = checkout.run(fake, head, extra_env={"GITHUB_EVENT_NAME": "pull_request"})
    assert again.code == 1
    assert again.asked == []  # no agent at all: neither version
    assert "passk: 0 agent execution(s) now" in again.stdout
    assert again.outputs["reused"] == "true"
    assert again.outputs["passed"] == "false"
    first_result = json.loads((checkout.repo / ".passk/result.json").read_text("utf-8"))
    assert first_result["reused"] is True
    assert first_result["gate"]["failures"][0]["id"] == "r1"
    body = fake.comments[7][0]["body"]
    assert "Re-run of the same commit: the verdicts recorded by the first run were replayed" in body
    assert len(fake.comments[7]) == 1
    assert fake.violations == []
    assert_token_never_leaked(checkout, fake, first, again)


def test_a_commit_with_the_same_files_reuses_the_recorded_verdicts(
    checkout: Checkout, fake: FakeGitHub
) -> None:
    head = checkout.head(flip_r1())
    first = checkout.run(fake, head)
    assert first.code == 1 and first.asked
    tree = git(checkout.repo, "rev-parse", f"{head}^{{tree}}")
    assert decode_record(fake.comments[7][0]["body"]).head_tree == tree
    # An empty commit (and then an amend of it) is new to GitHub but the same code:
    # the agent is not asked again, and the failure stands.
    for make in (
        lambda: checkout.head(),
        lambda: (
            git(checkout.repo, "commit", "-q", "--amend", "--allow-empty", "-m", "reworded"),
            git(checkout.repo, "rev-parse", "HEAD"),
        )[1],
    ):
        same = make()
        assert same != head and git(checkout.repo, "rev-parse", f"{same}^{{tree}}") == tree
        again = checkout.run(fake, same)
        assert again.code == 1
        assert again.asked == []
        assert again.outputs["reused"] == "true" and again.outputs["passed"] == "false"
        result = json.loads((checkout.repo / ".passk/result.json").read_text("utf-8"))
        assert [(f["id"], f["rule"]) for f in worded(result)] == [("r1", "must-not-break")]
        assert any("which has the same files as this one" in n for n in notes_of(result))
        record = decode_record(fake.comments[7][0]["body"])
        assert (record.head_sha, record.head_tree, record.passed) == (same, tree, False)
        assert [c["head_sha"] for c in fake.check_runs][-1] == same
    # A real change is measured afresh.
    changed = checkout.head(RIGHT)
    fresh = checkout.run(fake, changed)
    assert fresh.code == 0 and fresh.outputs["reused"] == "false"
    assert fresh.asked == all_candidate_attempts()
    assert fake.violations == []


def test_a_moved_base_is_measured_again_though_the_head_commit_is_the_same(
    checkout: Checkout, fake: FakeGitHub
) -> None:
    """The record pins the files the agent ran (the checkout), not just the PR head."""
    head = checkout.head(flip_r1())
    assert checkout.run(fake, head).code == 1
    # The default checkout of a pull_request is the merge with the base: when the
    # base branch moves, the checkout's files change while the head commit stays.
    (checkout.repo / "NOTES.md").write_text("merged from main\n", encoding="utf-8")
    git(checkout.repo, "add", "NOTES.md")
    git(checkout.repo, "commit", "-q", "-m", "merge of the moved base")
    again = checkout.run(fake, head)
    assert again.outputs["reused"] == "false"
    assert set(all_candidate_attempts()) <= set(again.asked)  # every main attempt, afresh
    assert fake.violations == []


def test_an_old_record_without_a_tree_still_pins_its_own_commit(
    checkout: Checkout, fake: FakeGitHub
) -> None:
    from dataclasses import replace

    head = checkout.head(flip_r1())
    assert checkout.run(fake, head).code == 1
    comment = fake.comments[7][0]
    old = encode_record(replace(decode_record(comment["body"]), head_tree=None))
    assert '"head_tree"' not in gzip.decompress(base64.b64decode(old.split()[3])).decode()
    start = comment["body"].index("<!-- passk:record")
    comment["body"] = comment["body"][:start] + old
    again = checkout.run(fake, head)
    assert again.asked == [] and again.code == 1 and again.outputs["reused"] == "true"
    # Re-posted with the tree: from now on an empty commit is pinned too.
    assert decode_record(fake.comments[7][0]["body"]).head_tree is not None
    comment = fake.comments[7][0]
    start = comment["body"].index("<!-- passk:record")
    comment["body"] = comment["body"][:start] + old
    # An old record knows only its commit: a new commit is measured afresh.
    fresh = checkout.run(fake, checkout.head())
    assert fresh.asked and fresh.outputs["reused"] == "false"
    assert fake.violations == []


CRASH = {"crash": "model overloaded"}
CRASHING_R1 = {**RIGHT, "r1": [CRASH, CRASH, "approve", CRASH]}
"""One valid answer in r1's four attempts (main and confirmation): too few to classify."""


def test_a_rerun_replays_errored_attempts_as_errors(checkout: Checkout, fake: FakeGitHub) -> None:
    # r1 (must-not-break) answers once in four attempts: unclassified, so the gate fails.
    head = checkout.head(CRASHING_R1)
    first = checkout.run(fake, head)
    assert first.code == 1
    failures = json.loads((checkout.repo / ".passk/result.json").read_text("utf-8"))["gate"]
    # The agent would now answer (same files: the script is not committed), but a
    # re-run asks it nothing: the error stays an error and the gate stays failed.
    write_script(checkout.repo, RIGHT)
    again = checkout.run(fake, head)
    assert again.asked == []
    assert again.code == 1 and again.outputs["reused"] == "true"
    result = json.loads((checkout.repo / ".passk/result.json").read_text("utf-8"))
    assert result["gate"]["failures"] == failures["failures"]
    assert "passk: 0 agent execution(s) now" in again.stdout
    assert fake.violations == []


def test_the_remeasure_label_measures_the_same_content_again(
    checkout: Checkout, fake: FakeGitHub
) -> None:
    head = checkout.head(CRASHING_R1)
    assert checkout.run(fake, head).code == 1
    write_script(checkout.repo, RIGHT)
    # A maintainer asks for a new measurement with the base config's label.
    remeasured = checkout.run(fake, head, labels=("passk:remeasure",))
    assert remeasured.code == 0, remeasured.stdout
    assert remeasured.asked == all_candidate_attempts()
    assert remeasured.outputs["reused"] == "false"
    body = fake.comments[7][0]["body"]
    assert "re-measured on request: the label 'passk:remeasure' is on the pull request" in body
    assert fake.check_runs[-1]["output"]["title"].startswith("re-measured on request · ")
    assert len(fake.comments[7]) == 1
    # Without the label, re-runs replay the new measurement.
    again = checkout.run(fake, head)
    assert again.code == 0 and again.asked == [] and again.outputs["reused"] == "true"
    # The label's name is the base config's: the pull request cannot rename it.
    edit = edit_config(lambda c: c["gate"].update(remeasure_label="bug"))
    renamed = checkout.head(None, apply=[edit])
    assert checkout.run(fake, renamed).code == 0
    assert checkout.run(fake, renamed, labels=("bug",)).asked == []
    assert fake.violations == []


def test_comment_new_replaces_the_old_comment(checkout: Checkout, fake: FakeGitHub) -> None:
    head = checkout.head(RIGHT)
    checkout.run(fake, head)
    old_id = fake.comments[7][0]["id"]
    fake.add_comment(7, "LGTM, nice work")
    outcome = checkout.run(fake, head, extra_env={"INPUT_COMMENT": "new"})
    assert outcome.code == 0
    bodies = fake.comment_bodies(7)
    assert bodies[0] == "LGTM, nice work" and len(bodies) == 2
    assert fake.comments[7][1]["id"] != old_id and bodies[1].startswith(MARKER)
    assert fake.violations == []


def test_the_check_run_is_in_progress_then_says_why_with_annotations_on_the_dataset_lines(
    checkout: Checkout, fake: FakeGitHub
) -> None:
    # The pull request moves r1 to line 3 of the dataset: the annotation follows it.
    moved = [ROWS[1], ROWS[2], ROWS[0], *ROWS[3:]]
    head = checkout.head(flip_r1(), apply=[lambda repo: write_rows(repo, moved)])
    outcome = checkout.run(fake, head)
    assert outcome.code == 1, outcome.stdout
    [run] = fake.check_runs
    assert fake.check_run_history == [
        ("create", run["id"], "in_progress"),
        ("update", run["id"], "completed"),
    ]
    assert (run["conclusion"], run["head_sha"]) == ("failure", head)
    assert run["output"]["title"] == (
        f"1 must-not-break row broke: r1 · vs master at {checkout.base_sha[:12]}"
    )
    body = fake.comment_bodies(7)[0]
    summary = run["output"]["summary"]
    assert summary.startswith(without_record(body).strip())  # the comment, less its record
    [note] = fake.annotations[run["id"]]
    assert (note["path"], note["start_line"], note["end_line"]) == ("data.jsonl", 3, 3)
    assert note["annotation_level"] == "failure"
    assert note["title"] == "passk: must-not-break row broke: r1"
    assert note["message"].splitlines()[1] == (
        "expected approve · baseline approve ×4 · candidate deny ×3, approve ×1"
    )
    # The comment shows r1's input from the dataset, and what to do next.
    assert "<details><summary>input: {&quot;amount&quot;: 900}</summary>" in body
    assert "**Reproduce locally:** `passk compare --config passk.yml" in body
    assert fake.violations == []


def test_comment_changes_is_quiet_when_green_and_marks_a_fixed_failure_resolved(
    checkout: Checkout, fake: FakeGitHub
) -> None:
    quiet = {"INPUT_COMMENT": "changes"}
    green = checkout.run(fake, checkout.head(RIGHT), extra_env=quiet)
    assert green.code == 0
    assert fake.comments.get(7, []) == []  # never failed: no comment at all
    assert green.outputs["comment-url"] == "" and green.outputs["check-url"] != ""
    assert "re-runs are not pinned" not in green.stdout
    broken = checkout.head(flip_r1())
    red = checkout.run(fake, broken, extra_env=quiet)
    assert red.code == 1
    [comment] = fake.comments[7]
    assert comment["body"].splitlines()[1].startswith("### ❌ passk: 1 must-not-break row broke")
    fixed = checkout.run(fake, checkout.head(RIGHT), extra_env=quiet)
    assert fixed.code == 0
    assert [c["id"] for c in fake.comments[7]] == [comment["id"]]  # edited, not a new one
    lines = fake.comment_bodies(7)[0].splitlines()
    assert lines[1] == "### ✅ passk: passed: 0 gained, 0 lost"
    assert lines[3] == (
        f"**Resolved:** the earlier run on `{broken[:12]}` failed; this one passes."
    )
    assert fixed.outputs["comment-url"] == comment["html_url"]
    assert [c["conclusion"] for c in fake.check_runs] == ["success", "failure", "success"]
    assert fake.violations == []


def test_a_named_step_says_which_step_in_its_comment_heading(
    checkout: Checkout, fake: FakeGitHub
) -> None:
    outcome = checkout.run(fake, checkout.head(RIGHT), extra_env={"INPUT_CHECK-NAME": "refunds"})
    assert outcome.code == 0
    [body] = fake.comment_bodies(7)
    assert body.splitlines()[1] == "### ✅ passk · refunds (passk.yml): passed: 0 gained, 0 lost"
    assert [run["name"] for run in fake.check_runs] == ["refunds"]
    assert fake.violations == []


def test_forbidden_check_run_falls_back_to_a_commit_status(
    checkout: Checkout, fake: FakeGitHub
) -> None:
    head = checkout.head(flip_r1())
    fake.fail_not_accessible("checks/create", times=2)  # when starting, and again at the end
    outcome = checkout.run(fake, head)
    assert outcome.code == 1
    assert fake.check_runs == []
    [status] = fake.statuses[head]
    assert (status["state"], status["context"]) == ("failure", "passk")
    assert status["description"] == (
        f"1 must-not-break row broke: r1 · vs master at {checkout.base_sha[:12]}"
    )
    assert len(fake.comments[7]) == 1
    assert fake.violations == []


def test_server_errors_and_secondary_limits_are_retried(
    checkout: Checkout, fake: FakeGitHub
) -> None:
    head = checkout.head(RIGHT)
    fake.fail_next("issues/create-comment", 502, times=2)
    fake.fail_secondary_rate_limit("checks/create", retry_after=7)
    waits: list[float] = []
    outcome = checkout.run(fake, head, sleep=waits.append)
    assert outcome.code == 0
    # The check run starts first (GitHub's retry-after), then the comment backs off twice.
    assert waits == [7.0, 1.0, 2.0]
    assert len(fake.comments[7]) == 1 and len(fake.check_runs) == 1
    assert "::warning" not in outcome.stdout
    assert fake.violations == []


def test_github_outage_past_the_retry_budget_never_changes_the_gate(
    checkout: Checkout, fake: FakeGitHub
) -> None:
    head = checkout.head(RIGHT)
    fake.fail_next("issues/create-comment", 503, times=50)
    fake.fail_next("checks/create", 500, times=50)
    outcome = checkout.run(fake, head)
    assert outcome.code == 0 and outcome.outputs["passed"] == "true"
    warnings = [line for line in outcome.stdout.splitlines() if line.startswith("::warning")]
    assert len(warnings) == 3
    assert "no comment posted" in warnings[0] and "no check run" in warnings[1]
    assert warnings[2] == (
        "::warning title=passk::re-runs are not pinned: the comment that holds passk's record "
        "could not be posted, so re-running this job asks the agent again and may get a "
        "different result"
    )
    assert fake.violations == []


def test_fork_pull_request_still_gates_with_a_read_only_token(checkout: Checkout) -> None:
    head = checkout.head(flip_r1())
    with FakeGitHub(token=TOKEN, repository=REPO, read_only=True) as fake:
        outcome = checkout.run(fake, head, fork=True)
        assert fake.violations == []
        assert fake.comments == {} and fake.check_runs == [] and fake.statuses == {}
    assert outcome.code == 1
    assert outcome.outputs["passed"] == "false"
    assert "# ❌ passk: gate failed" in outcome.summary
    assert (
        "::warning title=passk::read-only token (pull request from a fork): no comment posted; "
        "the report is in the job summary"
    ) in outcome.stdout.splitlines()
    # Nothing holds the record, so a re-run is not pinned: the log and the summary say so.
    unpinned = (
        "re-runs are not pinned: a fork's read-only token cannot post the comment that holds "
        "passk's record, so re-running this job asks the agent again and may get a different "
        "result"
    )
    assert f"::warning title=passk::{unpinned}" in outcome.stdout.splitlines()
    assert outcome.summary.endswith(f"\n> ⚠️ R{unpinned[1:]}.\n")
    assert_token_never_leaked(checkout, None, outcome)


def test_a_pinned_run_does_not_warn_about_reruns(checkout: Checkout, fake: FakeGitHub) -> None:
    outcome = checkout.run(fake, checkout.head(RIGHT))
    assert outcome.code == 0 and len(fake.comments[7]) == 1
    assert "not pinned" not in outcome.stdout and "not pinned" not in outcome.summary


def test_without_a_token_the_log_says_reruns_are_not_pinned(checkout: Checkout) -> None:
    outcome = checkout.run(None, checkout.head(RIGHT), extra_env={"INPUT_GITHUB-TOKEN": ""})
    assert outcome.code == 0
    assert (
        "::warning title=passk::re-runs are not pinned: nothing could be posted to the pull "
        "request, so re-running this job asks the agent again and may get a different result"
    ) in outcome.stdout.splitlines()
    assert "> ⚠️ Re-runs are not pinned: nothing could be posted" in outcome.summary


def forged_passing_record(checkout: Checkout, head: str) -> str:
    """A comment body as passk writes it, claiming every attempt of ``head`` was right."""
    with FakeGitHub(token=TOKEN, repository=REPO) as first_fake:
        first = checkout.run(first_fake, head)
        genuine = decode_record(first_fake.comments[7][0]["body"])
    assert first.code == 1 and genuine.candidate_attempts is not None
    from dataclasses import replace

    from passk_action.github.sticky_comment import attempts_digest

    right = tuple(
        replace(a, decision="approve" if a.row_id in ("r1", "r3") else "deny")
        for a in genuine.candidate_attempts
    )
    forged = replace(
        genuine,
        passed=True,
        failures=0,
        candidate_attempts=right,
        attempts_digest=attempts_digest(right),
    )
    return f"{MARKER}\n### ✅ passk: gate passed\n\n{encode_record(forged)}"


def test_another_apps_record_is_not_trusted(checkout: Checkout) -> None:
    head = checkout.head(flip_r1())
    body = forged_passing_record(checkout, head)
    with FakeGitHub(token=TOKEN, repository=REPO) as fake:
        # A renovate-like app (a Bot account, not the one passk posts as) holds the record.
        fake.add_comment(7, body, login="renovate[bot]", user_type="Bot")
        outcome = checkout.run(fake, head)
        assert fake.violations == []
        assert fake.comment_bodies(7)[0] == body and len(fake.comments[7]) == 2
    assert outcome.code == 1
    assert outcome.outputs["reused"] == "false" and outcome.asked
    assert (
        "ignored a passk record in comment 1002 by renovate[bot]: only comments by "
        "github-actions[bot] (input `comment-author`) are trusted"
    ) in outcome.stdout


def test_comment_author_names_the_login_passk_posts_as(checkout: Checkout) -> None:
    head = checkout.head(flip_r1())
    app = {"login": "passk-ci[bot]", "id": 7001, "type": "Bot"}
    author = {"INPUT_COMMENT-AUTHOR": "passk-ci[bot]"}
    with FakeGitHub(token=TOKEN, repository=REPO, actor=app) as fake:
        first = checkout.run(fake, head, extra_env=author)
        assert first.code == 1 and "comment-author" not in first.stdout
        again = checkout.run(fake, head, extra_env=author)
        assert again.code == 1 and again.asked == [] and again.outputs["reused"] == "true"
        assert len(fake.comments[7]) == 1
        # Left at the default, passk's own record is not trusted, and the log says why.
        default = checkout.run(fake, head)
        assert default.asked and default.outputs["reused"] == "false"
        assert (
            "::warning title=passk::the comment was posted as passk-ci[bot], but passk trusts "
            "only records by github-actions[bot]: set the input `comment-author: passk-ci[bot]`"
        ) in default.stdout.splitlines()
        assert fake.violations == []
    bad = checkout.run(None, head, extra_env={"INPUT_COMMENT-AUTHOR": "a b"})
    assert bad.code == 2 and "input `comment-author`" in bad.stdout


def test_a_human_authored_record_is_ignored(checkout: Checkout, tmp_path: Path) -> None:
    head = checkout.head(flip_r1())
    with FakeGitHub(token=TOKEN, repository=REPO) as first_fake:
        first = checkout.run(first_fake, head)
        genuine = decode_record(first_fake.comments[7][0]["body"])
    assert first.code == 1 and genuine.candidate_attempts is not None
    # Forge a record for the same commit whose candidate was right every time.
    from dataclasses import replace

    from passk_action.github.sticky_comment import attempts_digest

    right = tuple(
        replace(a, decision="approve" if a.row_id in ("r1", "r3") else "deny")
        for a in genuine.candidate_attempts
    )
    forged = replace(
        genuine,
        passed=True,
        failures=0,
        candidate_attempts=right,
        attempts_digest=attempts_digest(right),
    )
    body = f"{MARKER}\n### ✅ passk: gate passed\n\n{encode_record(forged)}"
    with FakeGitHub(token=TOKEN, repository=REPO) as fake:
        fake.add_comment(7, body, login="mallory")
        outcome = checkout.run(fake, head)
        assert fake.violations == []
        # The human's comment is left alone; passk posts its own.
        assert fake.comment_bodies(7)[0] == body and len(fake.comments[7]) == 2
    assert outcome.code == 1
    assert outcome.outputs["reused"] == "false"
    assert outcome.asked  # the agent ran again: the forged verdicts were not used
    assert "ignored a passk record in comment" in outcome.stdout


def test_a_damaged_record_is_ignored_with_a_warning(checkout: Checkout, fake: FakeGitHub) -> None:
    head = checkout.head(RIGHT)
    checkout.run(fake, head)
    comment = fake.comments[7][0]
    comment["body"] = comment["body"].replace(
        "<!-- passk:record v1 H4sI", "<!-- passk:record v1 H4sX"
    )
    outcome = checkout.run(fake, head)
    assert outcome.code == 0
    assert outcome.asked == all_candidate_attempts()
    assert "ignored the record in passk's comment" in outcome.stdout
    assert fake.violations == []


def test_a_failed_record_without_attempts_keeps_the_gate_failed(
    checkout: Checkout, fake: FakeGitHub
) -> None:
    head = checkout.head(flip_r1())
    checkout.run(fake, head)
    comment = fake.comments[7][0]
    record = decode_record(comment["body"])
    from dataclasses import replace

    too_large = encode_record(replace(record, candidate_attempts=None, baseline_attempts=None))
    start = comment["body"].index("<!-- passk:record")
    comment["body"] = comment["body"][:start] + too_large
    # Even if the agent now behaves, a re-run of the same commit cannot pass.
    write_script(checkout.repo, RIGHT)
    outcome = checkout.run(fake, head)
    assert outcome.code == 1
    result = json.loads((checkout.repo / ".passk/result.json").read_text("utf-8"))
    reasons = [f["reason"] for f in worded(result)]
    assert reasons[-1] == (
        "a re-run cannot overturn the recorded failure for this content; push a commit that "
        "changes a file (an empty or amended commit with the same files keeps the failure)"
    )
    assert worded(result)[-1]["rule"] == "recorded-failure"
    # The standing failure is part of the result's inputs: an audit agrees with it.
    from passk_action.cli import main as cli_main

    assert cli_main(["gate", str(checkout.repo / ".passk/result.json")]) == 1
    assert read_result(checkout.repo / ".passk/result.json").consistent
    assert fake.violations == []


# --- protected changes -------------------------------------------------------------


def new_base(checkout: Checkout, edit: Callable[[Path], None], *, record: bool = True) -> None:
    """A new commit on main (the PR's base): ``edit``, then the baseline recorded again."""
    repo = checkout.repo
    git(repo, "checkout", "-q", "main")
    edit(repo)
    if record:
        assert cli_main(["baseline", "--config", str(repo / "passk.yml"), "--quiet"]) == 0
    checkout.base_sha = commit(repo, "base change")
    git(repo, "checkout", "-q", "-B", "feature")


def _touch_baseline(repo: Path) -> None:
    path = repo / ".passk/baseline.json"
    path.write_text(path.read_text(encoding="utf-8") + "\n", encoding="utf-8")


PROTECTED_EDITS: dict[str, tuple[Callable[[Path], None], dict[str, Any], str]] = {
    "baseline artifact": (_touch_baseline, RIGHT, "baseline artifact (baseline.json) is changed"),
    "row removed": (
        edit_rows(lambda rows: rows.pop(0)),
        RIGHT,
        "must-not-break row is removed from the dataset",
    ),
    "row relabeled": (
        edit_rows(lambda rows: rows[0].update(expected="deny")),
        {**RIGHT, "r1": ["deny"]},
        "expected label changes from 'approve' to 'deny'",
    ),
    "own mark removed": (
        edit_rows(lambda rows: rows[0].update(must_not_break=False)),
        RIGHT,
        "own mark is removed",
    ),
    "input changed": (
        edit_rows(lambda rows: rows[0].update(input={"amount": 5})),
        RIGHT,
        "must-not-break row's input is changed (its baseline verdicts are for the old input)",
    ),
    "protecting tag removed from row": (
        edit_rows(lambda rows: rows[1].update(tags=[])),
        RIGHT,
        "loses the protecting tag(s) vip",
    ),
    "tag unprotected": (
        edit_config(lambda c: c["must_not_break"].update(tags=[])),
        RIGHT,
        "the tag 'vip' is removed from must_not_break.tags",
    ),
    "k lowered": (edit_config(lambda c: c.update(k=2)), RIGHT, "k is lowered from 3 to 2"),
    "confirm lowered": (
        edit_config(lambda c: c["confirm"].update(must_not_break_attempts=1)),
        RIGHT,
        "confirm.must_not_break_attempts is lowered from 2 to 1",
    ),
    "regression block off": (
        edit_config(lambda c: c["gate"].update(block_on_any_regression=False)),
        RIGHT,
        "gate.block_on_any_regression is turned off",
    ),
    "normalize changed": (
        edit_config(lambda c: c.update(scoring={"normalize": ["casefold"]})),
        RIGHT,
        "scoring.normalize changes from [] to ['casefold']",
    ),
}


@pytest.mark.parametrize("kind", sorted(PROTECTED_EDITS))
def test_each_protected_change_fails_unless_allowed_by_label(
    checkout: Checkout, fake: FakeGitHub, kind: str
) -> None:
    edit, script, detail = PROTECTED_EDITS[kind]
    if kind == "k lowered":  # k is at least 2, so the base needs a larger one to lower
        new_base(checkout, edit_config(lambda c: c.update(k=3)))
    head = checkout.head(script, apply=[edit])
    blocked = checkout.run(fake, head)
    assert blocked.code == 1, blocked.stdout
    result = json.loads((checkout.repo / ".passk/result.json").read_text("utf-8"))
    protected = [f for f in worded(result) if f["rule"] == "protected-change"]
    assert [f["reason"] for f in protected if detail in f["reason"]], protected
    errors = [x for x in blocked.stdout.splitlines() if x.startswith("::error title=passk gate::")]
    assert any(detail in x for x in errors), errors

    allowed = checkout.run(fake, head, labels=("passk-allow-baseline-change", "bug"))
    assert allowed.code == 0, allowed.stdout
    result = json.loads((checkout.repo / ".passk/result.json").read_text("utf-8"))
    assert worded(result) == []
    assert any(detail in w for w in gate_warnings_of(result))
    assert fake.violations == []


def test_the_allow_label_comes_from_the_base_config(checkout: Checkout, fake: FakeGitHub) -> None:
    # The PR renames the allow label to one it carries: the base's label still rules.
    edit = edit_config(lambda c: c["gate"].update(allow_label="bug", block_on_any_regression=False))
    head = checkout.head(RIGHT, apply=[edit])
    outcome = checkout.run(fake, head, labels=("bug",))
    assert outcome.code == 1
    assert fake.violations == []


def test_base_marks_and_labels_protect_rows_the_head_weakens(
    checkout: Checkout, fake: FakeGitHub
) -> None:
    # The head drops r1's mark and breaks r1: the base's mark still makes it block.
    edit = edit_rows(lambda rows: rows[0].update(must_not_break=False))
    head = checkout.head(flip_r1(), apply=[edit])
    outcome = checkout.run(fake, head)
    assert outcome.code == 1
    result = json.loads((checkout.repo / ".passk/result.json").read_text("utf-8"))
    rules = {(f["id"], f["rule"]) for f in worded(result)}
    assert ("r1", "must-not-break") in rules
    assert fake.violations == []


def test_a_ratchet_locked_rows_input_is_protected_after_its_mark_is_gone(
    checkout: Checkout, fake: FakeGitHub
) -> None:
    # r3 is marked and recorded (it enters the ratchet), then unmarked on main with the
    # baseline recorded again: the ratchet still locks it, so its input stays protected.
    # Main does not block on any regression (then every row's input would be protected).
    new_base(checkout, edit_rows(lambda rows: rows[2].update(must_not_break=True)))
    unmark = edit_rows(lambda rows: rows[2].update(must_not_break=False))
    new_base(checkout, lambda repo: (unmark(repo), edit_config(_block_off)(repo)))
    base = json.loads((checkout.repo / ".passk/baseline.json").read_text(encoding="utf-8"))
    assert "r3" in base["ratchet"]
    head = checkout.head(RIGHT, apply=[edit_rows(lambda rows: rows[2].update(input={"a": 1}))])
    blocked = checkout.run(fake, head)
    assert blocked.code == 1, blocked.stdout
    result = json.loads((checkout.repo / ".passk/result.json").read_text("utf-8"))
    assert [(f["id"], f["rule"], f["reason"]) for f in worded(result)] == [
        (
            "r3",
            "protected-change",
            "ratchet-locked row's input is changed (its baseline verdicts are for the old input)",
        )
    ]
    allowed = checkout.run(fake, head, labels=("passk-allow-baseline-change",))
    assert allowed.code == 0, allowed.stdout
    # An unprotected row's input may change freely (r3's own input is restored).
    restore = edit_rows(lambda rows: rows[2].update(input=ROWS[2]["input"]))
    head = checkout.head(RIGHT, apply=[restore, edit_rows(lambda r: r[3].update(input={"b": 2}))])
    unprotected = checkout.run(fake, head)
    assert unprotected.code == 0, unprotected.stdout
    assert "protected change" not in unprotected.stdout
    assert fake.violations == []


def _block_off(config: dict[str, Any]) -> None:
    config["gate"]["block_on_any_regression"] = False


def test_a_ratchet_locked_row_cannot_be_relabeled_after_its_mark_is_gone(
    checkout: Checkout, fake: FakeGitHub
) -> None:
    # The route: r3 is marked and recorded (the ratchet locks it), then unmarked on
    # main, which does not block on any regression.  The pull request breaks r3 and
    # relabels it to what its candidate now answers.
    new_base(
        checkout,
        lambda repo: (
            edit_config(_block_off)(repo),
            edit_rows(lambda rows: rows[2].update(must_not_break=True))(repo),
        ),
    )
    new_base(checkout, edit_rows(lambda rows: rows[2].update(must_not_break=False)))
    base = json.loads((checkout.repo / ".passk/baseline.json").read_text(encoding="utf-8"))
    assert "r3" in base["ratchet"]
    relabel = edit_rows(lambda rows: rows[2].update(expected="deny"))
    head = checkout.head({**RIGHT, "r3": ["deny"]}, apply=[relabel])
    blocked = checkout.run(fake, head)
    assert blocked.code == 1, blocked.stdout
    result = json.loads((checkout.repo / ".passk/result.json").read_text(encoding="utf-8"))
    assert {(f["id"], f["rule"]) for f in worded(result)} == {
        ("r3", "protected-change"),
        ("r3", "ratchet"),  # judged by the base's label, the candidate broke it
    }
    assert any(
        "ratchet-locked row's expected label changes from 'approve' to 'deny'" in f["reason"]
        for f in worded(result)
    )
    allowed = checkout.run(fake, head, labels=("passk-allow-baseline-change",))
    assert allowed.code == 0, allowed.stdout
    # Control: the same relabel of a row nothing locks is the pull request's to make.
    unlocked = edit_rows(lambda rows: (rows[2].update(expected="approve"),
                                       rows[3].update(expected="approve")))  # fmt: skip
    head = checkout.head({**RIGHT, "r4": ["approve"]}, apply=[unlocked])
    control = checkout.run(fake, head)
    assert control.code == 0, control.stdout
    assert "protected change" not in control.stdout
    assert fake.violations == []


def test_blocking_on_any_regression_keeps_every_base_label(
    checkout: Checkout, fake: FakeGitHub
) -> None:
    # r4 is neither must-not-break nor locked; the base blocks on any regression.
    relabel = edit_rows(lambda rows: rows[3].update(expected="approve"))
    head = checkout.head({**RIGHT, "r4": ["approve"]}, apply=[relabel])
    blocked = checkout.run(fake, head)
    assert blocked.code == 1, blocked.stdout
    result = json.loads((checkout.repo / ".passk/result.json").read_text(encoding="utf-8"))
    first = worded(result)[0]
    assert (first["id"], first["rule"], first["reason"]) == (
        "r4",
        "protected-change",
        "row's expected label changes from 'deny' to 'approve' "
        "(gate.block_on_any_regression is on)",
    )
    assert ("r4", "regression") in {(f["id"], f["rule"]) for f in worded(result)}
    # Control: a base that does not block on any regression lets the relabel through.
    new_base(checkout, edit_config(_block_off))
    head = checkout.head({**RIGHT, "r4": ["approve"]}, apply=[relabel, edit_config(_block_off)])
    control = checkout.run(fake, head)
    assert control.code == 0, control.stdout
    assert fake.violations == []


# --- refusals and bad input ------------------------------------------------------------


def test_pull_request_target_is_refused(checkout: Checkout, fake: FakeGitHub) -> None:
    head = checkout.head(RIGHT)
    outcome = checkout.run(fake, head, event_name="pull_request_target")
    assert outcome.code == 2
    [line] = [x for x in outcome.stdout.splitlines() if x.startswith("::error")]
    assert "pull_request_target" in line and "pwn request" in line
    assert outcome.asked == [] and fake.requests == []


def test_push_in_gate_mode_has_nothing_to_gate(checkout: Checkout, fake: FakeGitHub) -> None:
    outcome = checkout.run(fake, checkout.head(RIGHT), event_name="push")
    assert outcome.code == 2
    assert "nothing to gate on a 'push' event" in outcome.stdout


@pytest.mark.parametrize(
    ("name", "value"),
    [("comment", "sometimes"), ("mode", "audit"), ("baseline-update", "email")],
)
def test_an_invalid_input_exits_2_naming_it(
    checkout: Checkout, fake: FakeGitHub, name: str, value: str
) -> None:
    outcome = checkout.run(fake, checkout.head(RIGHT), extra_env={f"INPUT_{name.upper()}": value})
    assert outcome.code == 2
    errors = [x for x in outcome.stdout.splitlines() if x.startswith("::error")]
    assert len(errors) == 1 and f"input `{name}`" in errors[0] and repr(value) in errors[0]
    assert fake.requests == []


def test_a_base_without_baseline_artifact_asks_to_record_one(
    checkout: Checkout, fake: FakeGitHub
) -> None:
    new_base(checkout, lambda repo: (repo / ".passk/baseline.json").unlink(), record=False)
    outcome = checkout.run(fake, checkout.head(RIGHT))
    assert outcome.code == 2
    assert "base commit has no baseline artifact" in outcome.stdout
    assert "mode: baseline" in outcome.stdout


def test_the_agent_never_sees_the_token(checkout: Checkout, fake: FakeGitHub) -> None:
    spy = checkout.repo / "spy.py"
    spy.write_text(
        "import json, os, sys\n"
        "req = json.loads(sys.stdin.readline())\n"
        "with open(os.environ['SPY_OUT'], 'a') as f:\n"
        "    f.write(json.dumps(dict(os.environ)) + '\\n')\n"
        "right = {'r1': 'approve', 'r3': 'approve'}.get(req['id'], 'deny')\n"
        "print(json.dumps({'decision': right}))\n",
        encoding="utf-8",
    )
    edit = edit_config(
        lambda c: c["agent"].update(command=[sys.executable, "spy.py"], protocol="process")
    )
    head = checkout.head(None, apply=[edit])
    seen = checkout.tmp / "spy.jsonl"
    outcome = checkout.run(
        fake,
        head,
        extra_env={"SPY_OUT": str(seen), "GITHUB_TOKEN": TOKEN, "MY_COPY": f"x{TOKEN}x"},
    )
    assert outcome.code == 0, outcome.stdout
    envs = [json.loads(line) for line in seen.read_text(encoding="utf-8").splitlines()]
    assert len(envs) == 8
    assert all(TOKEN not in json.dumps(env) for env in envs)
    assert all("SPY_OUT" in env for env in envs)  # the rest of the environment is passed
    assert fake.violations == []


def test_the_passk_action_command_reads_the_process_environment(
    checkout: Checkout, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GITHUB_EVENT_NAME", "pull_request_target")
    monkeypatch.setenv("GITHUB_WORKSPACE", str(checkout.repo))
    monkeypatch.setenv("INPUT_GITHUB-TOKEN", TOKEN)
    from passk_action.program import main as passk

    assert passk(["action"]) == 2
    out = capsys.readouterr().out
    assert out.startswith(f"::add-mask::{TOKEN}\n::error title=passk::")
    assert "pwn request" in out and out.count(TOKEN) == 1


def test_a_broken_base_config_is_named_as_the_base_commit(
    checkout: Checkout, fake: FakeGitHub
) -> None:
    new_base(checkout, lambda repo: (repo / "passk.yml").write_text("k: [\n"), record=False)
    outcome = checkout.run(fake, checkout.head(RIGHT, apply=[lambda r: write_config(r, CONFIG)]))
    assert outcome.code == 2
    [error] = [x for x in outcome.stdout.splitlines() if x.startswith("::error")]
    assert f"in the base commit {checkout.base_sha[:7]}: invalid YAML" in error


def test_an_agent_that_cannot_be_built_is_an_input_error_naming_its_key(
    checkout: Checkout, fake: FakeGitHub
) -> None:
    """Built on first use, in the comparison's own thread: its error is the one line the
    CLI prints too (where, what, the fix), and the check fails with it."""
    http = {"url": "http://127.0.0.1:9/agent", "headers": {"X-Key": "${PASSK_UNSET_KEY}"}}
    head = checkout.head(RIGHT, apply=[edit_config(lambda c: c.update(agent={"http": http}))])
    outcome = checkout.run(fake, head)
    assert outcome.code == 2, outcome.stdout
    [error] = [x for x in outcome.stdout.splitlines() if x.startswith("::error")]
    assert "headers.X-Key: header 'X-Key' references ${PASSK_UNSET_KEY}, which is not set" in error
    [check] = fake.check_runs
    assert check["conclusion"] == "failure"
    assert "which is not set" in check["output"]["title"]


# --- a recorded candidate run (merged shards) ------------------------------------------


def test_candidate_run_input_gates_a_recorded_run_without_running_the_candidate(
    checkout: Checkout, fake: FakeGitHub
) -> None:
    from passk_action.cli import main as cli_main

    head = checkout.head(flip_r1())
    merged = checkout.repo / "merged.json"
    code = cli_main(
        ["run", "--config", str(checkout.repo / "passk.yml"), "--out", str(merged), "--quiet"]
    )
    assert code == 0
    outcome = checkout.run(fake, head, extra_env={"INPUT_CANDIDATE-RUN": "merged.json"})
    assert outcome.code == 1
    # No main attempt of the candidate was asked: they came from the file. Only
    # the lost row's confirmation ran, on both versions.
    assert {(row, version) for row, n, version in outcome.asked} == {
        ("r1", "baseline"),
        ("r1", "candidate"),
    }
    assert all(n > 2 for _, n, _ in outcome.asked)
    result = json.loads((checkout.repo / ".passk/result.json").read_text(encoding="utf-8"))
    assert [f["id"] for f in worded(result)] == ["r1"]
    assert any("recorded earlier" in note for note in notes_of(result))
    # A re-run of the same commit reuses the recorded verdicts, whatever file is given.
    merged.write_text("not even JSON", encoding="utf-8")
    again = checkout.run(fake, head, extra_env={"INPUT_CANDIDATE-RUN": "merged.json"})
    assert again.code == 1 and again.outputs["reused"] == "true"
    assert "input `candidate-run` is ignored" in again.stdout
    assert fake.violations == []


def test_comment_off_posts_nothing_and_warns_that_reruns_are_not_pinned(
    checkout: Checkout, fake: FakeGitHub
) -> None:
    head = checkout.head(RIGHT)
    outcome = checkout.run(fake, head, extra_env={"INPUT_COMMENT": "off"})
    assert outcome.code == 0
    assert fake.comment_bodies(7) == []
    assert len(fake.check_runs) == 1  # the check still passes or fails with the gate
    assert "::warning title=passk::comment: off keeps no record" in outcome.stdout
    assert fake.violations == []


# --- trust: routes around the gate (issue 12) ------------------------------------------


def test_comments_that_cannot_be_listed_fail_closed_and_keep_the_record(
    checkout: Checkout, fake: FakeGitHub
) -> None:
    head = checkout.head(flip_r1())
    first = checkout.run(fake, head)
    assert first.code == 1
    pinned = fake.comment_bodies(7)
    # The agent now behaves, but the failing record cannot be read: no fresh pass.
    write_script(checkout.repo, RIGHT)
    fake.fail_next("issues/list-comments", 502, times=5)  # every retry the client makes
    outcome = checkout.run(fake, head)
    assert outcome.code == 2, outcome.stdout
    [error] = [x for x in outcome.stdout.splitlines() if x.startswith("::error")]
    assert "cannot read the recorded verdicts; re-run later" in error
    assert outcome.asked == []  # no agent ran
    assert fake.comment_bodies(7) == pinned  # the record is not replaced
    # The check this run started is not left spinning: it fails with the reason.
    assert [c["conclusion"] for c in fake.check_runs] == ["failure", "failure"]
    title = fake.check_runs[1]["output"]["title"]
    assert title.startswith("passk could not finish: GitHub API GET /repos/")
    assert "cannot read the recorded verdicts; re-run later" in title
    # Once GitHub answers again, the recorded failure stands.
    again = checkout.run(fake, head)
    assert again.code == 1 and again.asked == []
    assert fake.violations == []


def test_comment_off_reads_no_record(checkout: Checkout, fake: FakeGitHub) -> None:
    head = checkout.head(RIGHT)
    fake.fail_next("issues/list-comments", 502, times=50)
    outcome = checkout.run(fake, head, extra_env={"INPUT_COMMENT": "off"})
    assert outcome.code == 0, outcome.stdout
    assert "::warning title=passk::comment: off keeps no record" in outcome.stdout
    assert not [r for r in fake.requests if "comments" in r.path]


def _loose_setup(repo: Path) -> None:
    """A second, laxer passk setup on the base branch: r1 unmarked, nothing tag-protected."""
    loose_rows = [dict(r, must_not_break=False, tags=[]) for r in ROWS]
    (repo / "loose.jsonl").write_text("".join(json.dumps(r) + "\n" for r in loose_rows), "utf-8")
    loose = dict(
        CONFIG,
        dataset="loose.jsonl",
        baseline={"artifact": ".passk/loose.json"},
        must_not_break={"tags": []},
        gate={"block_on_any_regression": False},
    )
    (repo / "loose.yml").write_text(yaml.safe_dump(loose, sort_keys=False), encoding="utf-8")
    (repo / ".gitignore").write_text(
        ".passk/*\n!.passk/baseline.json\n!.passk/loose.json\n", encoding="utf-8"
    )
    assert cli_main(["baseline", "--config", str(repo / "loose.yml"), "--quiet"]) == 0


def _symlink(path: str, target: str) -> Callable[[Path], None]:
    def apply(repo: Path) -> None:
        (repo / path).unlink()
        (repo / path).symlink_to(target)

    return apply


def test_a_config_symlinked_to_a_laxer_base_file_is_not_trusted(
    checkout: Checkout, fake: FakeGitHub
) -> None:
    new_base(checkout, _loose_setup, record=False)
    # Without the trick the broken row fails the gate.
    plain = checkout.run(fake, checkout.head(flip_r1()))
    assert plain.code == 1
    # The trick: passk.yml becomes a symlink to the base branch's laxer loose.yml.
    head = checkout.head(flip_r1(), apply=[_symlink("passk.yml", "loose.yml")])
    assert git(checkout.repo, "ls-tree", head, "passk.yml").startswith("120000")
    outcome = checkout.run(fake, head)
    assert outcome.code == 1, outcome.stdout
    result = json.loads((checkout.repo / ".passk/result.json").read_text("utf-8"))
    failures = {(f["id"], f["rule"]) for f in worded(result)}
    assert ("r1", "must-not-break") in failures
    reasons = [f["reason"] for f in worded(result) if f["rule"] == "protected-change"]
    assert reasons[0] == "passk.yml changes from a regular file to a symlink"
    assert fake.violations == []


def test_a_dataset_and_baseline_symlinked_to_base_files_are_not_trusted(
    checkout: Checkout, fake: FakeGitHub
) -> None:
    new_base(checkout, _loose_setup, record=False)
    trick = [_symlink("data.jsonl", "loose.jsonl"), _symlink(".passk/baseline.json", "loose.json")]
    head = checkout.head(flip_r1(), apply=trick)
    outcome = checkout.run(fake, head)
    assert outcome.code == 1, outcome.stdout
    result = json.loads((checkout.repo / ".passk/result.json").read_text("utf-8"))
    failures = {(f["id"], f["rule"]) for f in worded(result)}
    assert ("r1", "must-not-break") in failures
    reasons = [f["reason"] for f in worded(result) if f["rule"] == "protected-change"]
    assert "data.jsonl changes from a regular file to a symlink" in reasons
    assert ".passk/baseline.json changes from a regular file to a symlink" in reasons
    assert fake.violations == []


def test_an_executable_bit_on_the_dataset_is_a_protected_change(
    checkout: Checkout, fake: FakeGitHub
) -> None:
    head = checkout.head(RIGHT, apply=[lambda repo: (repo / "data.jsonl").chmod(0o755)])
    blocked = checkout.run(fake, head)
    assert blocked.code == 1, blocked.stdout
    result = json.loads((checkout.repo / ".passk/result.json").read_text("utf-8"))
    assert [f["reason"] for f in worded(result)] == [
        "data.jsonl changes from a regular file to an executable file"
    ]
    allowed = checkout.run(fake, head, labels=("passk-allow-baseline-change",))
    assert allowed.code == 0, allowed.stdout


def test_a_gitattributes_that_changes_line_endings_is_not_a_baseline_change(
    checkout: Checkout, fake: FakeGitHub
) -> None:
    def crlf(repo: Path) -> None:
        (repo / ".gitattributes").write_text("* text eol=crlf\n", encoding="utf-8")

    head = checkout.head(RIGHT, apply=[crlf])
    # A fresh checkout of the head, as actions/checkout makes: the files get CRLF.
    for name in ("passk.yml", "data.jsonl", ".passk/baseline.json"):
        (checkout.repo / name).unlink()
    git(checkout.repo, "checkout", "--", ".")
    assert b"\r\n" in (checkout.repo / ".passk/baseline.json").read_bytes()
    outcome = checkout.run(fake, head)
    assert outcome.code == 0, outcome.stdout
    assert "protected change" not in outcome.stdout
    assert fake.violations == []


def test_candidate_run_with_no_agent_gates_the_recorded_runs_and_runs_nothing(
    checkout: Checkout, fake: FakeGitHub
) -> None:
    """passk.yml without `agent:` (e.g. imported runs): nothing runs, and the report says so."""
    from passk_action.cli import main as cli_main

    no_agent = {key: value for key, value in CONFIG.items() if key != "agent"}
    new_base(checkout, lambda repo: write_config(repo, no_agent), record=False)
    head = checkout.head(flip_r1())
    # The candidate was recorded elsewhere (here: by the scripted agent, from a side config).
    side = checkout.repo / "recorder.yml"
    side.write_text(json.dumps(CONFIG), encoding="utf-8")
    recorded = checkout.repo / "candidate-run.json"
    assert cli_main(["run", "--config", str(side), "--out", str(recorded), "--quiet"]) == 0
    outcome = checkout.run(fake, head, extra_env={"INPUT_CANDIDATE-RUN": "candidate-run.json"})
    assert outcome.code == 1
    assert outcome.asked == []  # no agent was asked anything, not even to confirm
    result = json.loads((checkout.repo / ".passk/result.json").read_text(encoding="utf-8"))
    assert [f["id"] for f in worded(result)] == ["r1"]
    assert any(
        "both runs are recorded and the config names no agent" in note for note in notes_of(result)
    )


def _mark_r3_unrecorded(checkout: Checkout, config: dict[str, Any] | None = None) -> None:
    """Base: r3 becomes must-not-break after the baseline was recorded (not ratchet-locked)."""

    def edit(repo: Path) -> None:
        edit_rows(lambda rows: rows[2].update(must_not_break=True))(repo)
        if config is not None:
            write_config(repo, config)

    new_base(checkout, edit, record=False)


FLIP_R3 = {**RIGHT, "r3": {"candidate": ["approve", "deny"], "baseline": ["approve"]}}
"""The candidate breaks r3; the baseline (run from the base files) stays right."""
BASELINE_VARIES_R3 = {
    **RIGHT,
    "r3": {"candidate": ["approve", "deny"], "baseline": ["approve", "approve", "deny"]},
}
"""The same candidate, and a script that makes the baseline's confirmations flip on r3."""


def test_baseline_agent_runs_the_base_commits_files_not_the_prs(
    checkout: Checkout, fake: FakeGitHub
) -> None:
    config = dict(CONFIG, baseline={**CONFIG["baseline"], "agent": CONFIG["agent"]})
    _mark_r3_unrecorded(checkout, config)
    plain = checkout.run(fake, checkout.head(FLIP_R3))
    assert plain.code == 1, plain.stdout
    # The trick: the PR edits the file the baseline agent reads, so the baseline
    # looks unreliable on r3 and the regression would read as "baseline varies".
    head = checkout.head(BASELINE_VARIES_R3)
    outcome = checkout.run(fake, head)
    assert outcome.code == 1, outcome.stdout
    result = json.loads((checkout.repo / ".passk/result.json").read_text("utf-8"))
    assert [(f["id"], f["rule"]) for f in worded(result)] == [("r3", "must-not-break")]
    assert ("r3", 3, "baseline") in outcome.asked
    assert fake.violations == []


PLANT_HOOK = """\
import os, subprocess, sys
hooks = os.path.join(subprocess.check_output(
    ["git", "rev-parse", "--git-common-dir"], text=True).strip(), "hooks")
os.makedirs(hooks, exist_ok=True)
hook = os.path.join(hooks, "post-checkout")
with open(hook, "w") as f:
    f.write("#!/bin/sh\\ncp " + os.path.abspath("evil.json") + " script.json\\n")
os.chmod(hook, 0o755)
os.execv(sys.executable, [sys.executable, "-m", "passk_action.testing.scripted_agent",
                          "script.json"])
"""


def test_a_hook_the_candidate_plants_never_runs_on_the_base_side(
    checkout: Checkout, fake: FakeGitHub
) -> None:
    _mark_r3_unrecorded(checkout)

    def trick(repo: Path) -> None:
        (repo / "plant.py").write_text(PLANT_HOOK, encoding="utf-8")
        (repo / "evil.json").write_text(json.dumps({"rows": BASELINE_VARIES_R3}), "utf-8")
        edit_config(lambda c: c["agent"].update(command=[sys.executable, "plant.py"]))(repo)

    head = checkout.head(FLIP_R3, apply=[trick])
    outcome = checkout.run(fake, head)
    assert outcome.code == 1, outcome.stdout
    result = json.loads((checkout.repo / ".passk/result.json").read_text("utf-8"))
    assert [(f["id"], f["rule"]) for f in worded(result)] == [("r3", "must-not-break")]
    assert fake.violations == []


def _second_step(repo: Path) -> None:
    """Step B on the base branch: its own config and baseline, the same rows and settings."""
    config = dict(
        CONFIG,
        agent={**CONFIG["agent"], "command": [*CONFIG["agent"]["command"][:-1], "script-b.json"]},
        baseline={"artifact": ".passk/baseline-b.json"},
    )
    (repo / "passk-b.yml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    (repo / "script-b.json").write_text(json.dumps({"rows": RIGHT}), encoding="utf-8")
    (repo / ".gitignore").write_text(
        ".passk/*\n!.passk/baseline.json\n!.passk/baseline-b.json\n", encoding="utf-8"
    )
    assert cli_main(["baseline", "--config", str(repo / "passk-b.yml"), "--quiet"]) == 0


def test_two_passk_steps_keep_their_own_comment_record_and_check(
    checkout: Checkout, fake: FakeGitHub
) -> None:
    new_base(checkout, _second_step, record=False)
    step_b = {"INPUT_CONFIG": "passk-b.yml", "INPUT_CHECK-NAME": "passk / b"}
    # Step B's agent breaks r1; step A's is fine.
    head = checkout.head(
        RIGHT, apply=[lambda r: (r / "script-b.json").write_text(json.dumps({"rows": flip_r1()}))]
    )
    alone = checkout.run(None, head, extra_env={**step_b, "INPUT_GITHUB-TOKEN": ""})
    assert alone.code == 1  # without the trick (no step A before it), B fails
    a = checkout.run(fake, head)
    assert a.code == 0, a.stdout
    b = checkout.run(fake, head, extra_env=step_b)
    assert b.code == 1, b.stdout
    assert b.outputs["reused"] == "false" and b.asked  # A's verdicts were not replayed
    bodies = fake.comment_bodies(7)
    assert len(bodies) == 2 and bodies[0].startswith(MARKER)
    assert bodies[1].startswith("<!-- passk:sticky-comment step=") and MARKER not in bodies[1]
    records = [decode_record(body) for body in bodies]
    assert records[0].passed and not records[1].passed
    assert records[0].step != records[1].step
    assert [(c["name"], c["conclusion"]) for c in fake.check_runs] == [
        ("passk", "success"),
        ("passk / b", "failure"),
    ]
    # Re-runs replay each step's own record, and touch only its own comment.
    for env, code in ((None, 0), (step_b, 1)):
        again = checkout.run(fake, head, extra_env=env)
        assert again.code == code and again.asked == [] and again.outputs["reused"] == "true"
    assert [decode_record(body).passed for body in fake.comment_bodies(7)] == [True, False]
    assert fake.violations == []


def test_an_old_record_without_a_step_serves_only_the_default_step(
    checkout: Checkout, fake: FakeGitHub
) -> None:
    from dataclasses import replace

    head = checkout.head(flip_r1())
    assert checkout.run(fake, head).code == 1
    comment = fake.comments[7][0]
    old = encode_record(replace(decode_record(comment["body"]), step=None))
    start = comment["body"].index("<!-- passk:record")
    comment["body"] = comment["body"][:start] + old
    again = checkout.run(fake, head)
    assert again.asked == [] and again.outputs["reused"] == "true"
    assert len(fake.comments[7]) == 1
    assert decode_record(fake.comments[7][0]["body"]).step is not None


def test_a_record_too_large_for_one_comment_is_kept_in_part_comments(
    checkout: Checkout, fake: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    from passk_action.github import sticky_comment as record_module

    # The same split as for thousands of rows, at this test's scale.
    monkeypatch.setattr(record_module, "ATTEMPTS_LIMIT", 600)
    monkeypatch.setattr(record_module, "PART_SIZE", 400)
    head = checkout.head(CRASHING_R1)
    first = checkout.run(fake, head)
    assert first.code == 1
    bodies = fake.comment_bodies(7)
    parts = [b for b in bodies if b.startswith("<!-- passk:record-parts step=")]
    assert len(parts) >= 2 and len(bodies) == len(parts) + 1
    assert decode_record(bodies[-1]).candidate_attempts is None  # the sticky one, split
    write_script(checkout.repo, RIGHT)
    again = checkout.run(fake, head)
    assert again.code == 1 and again.asked == [] and again.outputs["reused"] == "true"
    assert fake.comment_bodies(7) == [*parts, fake.comment_bodies(7)[-1]]  # edited in place
    assert fake.violations == []
