"""The action's pure parts: inputs, the gate record, protected changes."""

from __future__ import annotations

import base64
import contextlib
import gzip
import io
import json
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from passk_action.action.inputs import read_inputs
from passk_action.core.model import Attempt, EvalSettings, Phase
from passk_action.errors import GitError, UsageError
from passk_action.github.sticky_comment import (
    MARKER,
    RECORD_PREFIX,
    GateRecord,
    RecordError,
    attempts_digest,
    decode_record,
    encode_record,
    find_record,
)
from passk_action.github.workflow import (
    Workflow,
)
from passk_action.inputs.config import parse_config
from passk_action.inputs.dataset import parse_dataset
from passk_action.report.protected import change_said as said
from passk_action.sides import protect
from passk_action.sides.gitrepo import GitRepo
from passk_action.sides.protect import ProtectedInputs, protected_changes
from passk_action.sides.trusted import authoritative_dataset, effective_config

# --- inputs and event ---------------------------------------------------------------------


def test_inputs_take_defaults_when_blank(tmp_path: Path) -> None:
    inputs = read_inputs({"GITHUB_WORKSPACE": str(tmp_path), "INPUT_COMMENT": " "}, tmp_path)
    assert (inputs.config, inputs.comment, inputs.mode, inputs.check_name) == (
        "passk.yml",
        "update",
        "gate",
        "passk",
    )
    assert inputs.baseline_update == "pull-request" and inputs.token == ""
    assert "token" not in repr(inputs)


def test_working_directory_must_exist_inside_the_workspace(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="input `working-directory`"):
        read_inputs({"INPUT_WORKING-DIRECTORY": "nope"}, tmp_path)
    with pytest.raises(UsageError, match="outside the workspace"):
        read_inputs({"INPUT_WORKING-DIRECTORY": ".."}, tmp_path)


# --- the gate record ------------------------------------------------------------------------


def _attempts(n: int, detail: str = "") -> tuple[Attempt, ...]:
    return tuple(
        Attempt(
            f"r{i}",
            1,
            Phase.MAIN,
            "deny" if i % 3 else None,
            error=None if i % 3 else "timeout",
            detail=detail or None,
        )
        for i in range(n)
    )


def _record(attempts: tuple[Attempt, ...]) -> GateRecord:
    return GateRecord(
        head_sha="b" * 40,
        base_sha="a" * 40,
        dataset_digest="sha256:" + "1" * 64,
        settings={"k": 2, "scoring": {"match": "exact", "normalize": []}},
        candidate_agent="python3 agent.py",
        passed=False,
        failures=1,
        attempts_digest=attempts_digest(attempts),
        candidate_attempts=attempts,
        baseline_attempts=attempts[:2],
    )


def test_record_round_trips_and_is_one_hidden_comment() -> None:
    record = _record(_attempts(5))
    text = encode_record(record)
    assert text.startswith(RECORD_PREFIX) and text.endswith(" -->") and "\n" not in text
    assert decode_record(f"{MARKER}\nbody\n{text}") == record


def test_record_keeps_the_head_tree_and_old_records_still_read() -> None:
    record = replace(_record(_attempts(3)), head_tree="c" * 40)
    assert decode_record(encode_record(record)) == record
    old = _record(_attempts(3))  # written before the tree was kept
    payload = encode_record(old).split()[3]
    assert "head_tree" not in gzip.decompress(base64.b64decode(payload)).decode()
    assert decode_record(encode_record(old)).head_tree is None
    with pytest.raises(RecordError, match="'head_tree'"):
        decode_record(
            _encoded({**json.loads(gzip.decompress(base64.b64decode(payload))), "head_tree": 7})
        )


def test_a_record_matches_on_the_tree_and_falls_back_to_the_commit() -> None:
    settings = EvalSettings(k=2)
    old = _record(_attempts(2))
    digest = old.dataset_digest
    new = replace(old, head_tree="t" * 40)
    other_sha = "e" * 40
    # Same files under a new commit (empty commit, amend, force-push): the same verdicts.
    assert new.matches(other_sha, digest, settings, head_tree="t" * 40)
    assert not new.matches(old.head_sha, digest, settings, head_tree="u" * 40)
    # Without a tree on either side only the commit itself matches.
    assert old.matches(old.head_sha, digest, settings, head_tree="t" * 40)
    assert not old.matches(other_sha, digest, settings, head_tree="t" * 40)
    assert new.matches(old.head_sha, digest, settings, head_tree=None)
    assert not new.matches(other_sha, digest, settings, head_tree=None)
    # The dataset and the settings still have to be the same.
    assert not new.matches(other_sha, "sha256:" + "2" * 64, settings, head_tree="t" * 40)
    assert not new.matches(other_sha, digest, EvalSettings(k=3), head_tree="t" * 40)


def test_a_record_matches_only_its_own_step_and_candidate_agent() -> None:
    settings = EvalSettings(k=2)
    record = replace(_record(_attempts(2)), step="a" * 12)
    digest, sha = record.dataset_digest, record.head_sha
    assert decode_record(encode_record(record)) == record
    assert record.matches(sha, digest, settings, head_tree=None, step="a" * 12)
    assert not record.matches(sha, digest, settings, head_tree=None, step="b" * 12)
    # A record from before steps were keyed serves the default step only.
    old = replace(record, step=None)
    assert old.matches(sha, digest, settings, head_tree=None, step="b" * 12, default_step=True)
    assert not old.matches(sha, digest, settings, head_tree=None, step="b" * 12, default_step=False)
    # Same step, content, dataset and settings, another candidate agent: not its record.
    mine = {"step": "a" * 12, "candidate_agent": record.candidate_agent}
    assert record.matches(sha, digest, settings, head_tree=None, **mine)
    assert not record.matches(
        sha, digest, settings, head_tree=None, step="a" * 12, candidate_agent="python3 other.py"
    )


def test_the_tree_of_a_commit_ignores_its_message_and_parents(tmp_path: Path) -> None:
    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=tmp_path, check=True, capture_output=True, text=True
        ).stdout.strip()

    git("init", "-q")
    git("config", "user.name", "Dev")
    git("config", "user.email", "dev@example.com")
    (tmp_path / "a.txt").write_text("one\n", encoding="utf-8")
    git("add", "a.txt")
    git("commit", "-q", "-m", "first")
    first = git("rev-parse", "HEAD")
    git("commit", "-q", "--allow-empty", "-m", "empty")
    empty = git("rev-parse", "HEAD")
    (tmp_path / "a.txt").write_text("two\n", encoding="utf-8")
    git("commit", "-q", "-am", "change")
    changed = git("rev-parse", "HEAD")
    repo = GitRepo.discover(tmp_path)
    assert repo.tree_sha(first) == repo.tree_sha(empty) == git("rev-parse", "HEAD~1^{tree}")
    assert repo.tree_sha(changed) != repo.tree_sha(first)
    with pytest.raises(GitError, match="read the tree of commit"):
        repo.tree_sha("0" * 40)


def test_record_drops_the_attempts_when_too_large() -> None:
    # Distinct details do not compress away.
    attempts = tuple(
        replace(a, detail=base64.b64encode(bytes([i % 256]) * 40 + str(i).encode()).decode())
        for i, a in enumerate(_attempts(3000))
    )
    text = encode_record(_record(attempts))
    assert len(text) < 2000
    decoded = decode_record(text)
    assert decoded.candidate_attempts is None and decoded.passed is False
    assert decoded.attempts_digest == attempts_digest(attempts)


def _encoded(doc: Any) -> str:
    raw = gzip.compress(json.dumps(doc).encode(), mtime=0)  # the same test ids every run
    return RECORD_PREFIX + base64.b64encode(raw).decode() + " -->"


@pytest.mark.parametrize(
    "text",
    [
        "no record here",
        RECORD_PREFIX + "!!!notbase64 -->",
        RECORD_PREFIX + base64.b64encode(b"not gzip").decode() + " -->",
        _encoded([1, 2]),
        _encoded({"v": 1, "head_sha": "x"}),
        "<!-- passk:record v2 AAAA -->",
    ],
)
def test_damaged_records_raise_record_error(text: str) -> None:
    with pytest.raises(RecordError):
        decode_record(text)


def test_edited_attempts_no_longer_match_the_digest() -> None:
    record = _record(_attempts(4))
    assert record.candidate_attempts is not None
    edited = replace(
        record,
        candidate_attempts=tuple(
            replace(a, decision="approve", error=None) for a in record.candidate_attempts
        ),
    )
    with pytest.raises(RecordError, match="digest"):
        decode_record(encode_record(edited))


@given(st.binary(max_size=300))
def test_any_payload_is_a_record_or_a_record_error(data: bytes) -> None:
    with contextlib.suppress(RecordError):
        decode_record(RECORD_PREFIX + base64.b64encode(data).decode() + " -->")


def test_only_comments_by_our_login_starting_with_the_marker_count() -> None:
    genuine = encode_record(_record(_attempts(2)))
    comments = [
        {
            "id": 1,
            "body": f"{MARKER}\n{genuine}",
            "user": {"login": "ci[bot]", "type": "Bot"},
            "created_at": "2026-01-01T00:00:00Z",
        },
        {
            "id": 2,
            "body": f"{MARKER}\n{genuine}",
            "user": {"login": "mallory", "type": "User"},
            "created_at": "2026-01-02T00:00:00Z",
        },
        {
            "id": 3,
            "body": f"quoting: {MARKER}\n{genuine}",
            "user": {"login": "ci[bot]", "type": "Bot"},
            "created_at": "2026-01-03T00:00:00Z",
        },
    ]
    other_app = dict(comments[0], id=4, user={"login": "renovate[bot]", "type": "Bot"})
    comments.append(other_app)
    record, warnings = find_record(comments, MARKER, "ci[bot]")
    assert record is not None and record.head_sha == "b" * 40
    assert len(warnings) == 2 and "comment 2 by mallory" in warnings[0]
    assert "comment 4 by renovate[bot]: only comments by ci[bot]" in warnings[1]
    assert find_record(comments[1:], MARKER, "ci[bot]")[0] is None
    # Another app's comment is never ours, whatever its account type.
    assert find_record([other_app], MARKER, "github-actions[bot]")[0] is None


# --- protected changes ------------------------------------------------------------------------

BASE_CONFIG = """
dataset: data.jsonl
k: 3
agent: {command: [python3, agent.py]}
confirm: {attempts: 3, must_not_break_attempts: 6}
must_not_break: {tags: [vip, legal]}
gate: {block_on_any_regression: true}
"""
BASE_ROWS = [
    {"id": "a", "input": 1, "expected": "approve", "must_not_break": True},
    {"id": "b", "input": 2, "expected": "deny", "tags": ["vip", "legal"]},
    {"id": "c", "input": 3, "expected": "deny"},
]


def snapshot(
    config: str = BASE_CONFIG,
    rows: list[dict[str, Any]] | None = None,
    baseline: bytes | None = b"{}",
) -> ProtectedInputs:
    cfg = parse_config(config, Path("/repo/passk.yml")).config
    text = "".join(json.dumps(r) + "\n" for r in (rows if rows is not None else BASE_ROWS))
    dataset = parse_dataset(text.encode(), "data.jsonl", "jsonl", cfg.must_not_break_tags)
    return ProtectedInputs(cfg, dataset, baseline)


def _rows(**edits: dict[str, Any]) -> list[dict[str, Any]]:
    rows = [dict(r) for r in BASE_ROWS]
    for row in rows:
        row.update(edits.get(row["id"], {}))
    return rows


@pytest.mark.parametrize(
    ("head", "kind", "row"),
    [
        (snapshot(baseline=b"{ }"), protect.BASELINE_CHANGED, None),
        (snapshot(baseline=None), protect.BASELINE_CHANGED, None),
        (snapshot(rows=BASE_ROWS[1:]), protect.ROW_REMOVED, "a"),
        (snapshot(rows=_rows(a={"expected": "deny"})), protect.ROW_RELABELED, "a"),
        (snapshot(rows=_rows(b={"expected": "approve"})), protect.ROW_RELABELED, "b"),
        (snapshot(rows=_rows(a={"must_not_break": False})), protect.MARK_REMOVED, "a"),
        (snapshot(rows=_rows(b={"tags": ["vip"]})), protect.MARK_REMOVED, "b"),
        (snapshot(rows=_rows(a={"input": 9})), protect.INPUT_CHANGED, "a"),
        (snapshot(rows=_rows(b={"input": {"amount": 2}})), protect.INPUT_CHANGED, "b"),
        (snapshot(BASE_CONFIG.replace("vip, legal", "vip")), protect.TAG_UNPROTECTED, None),
        (snapshot(BASE_CONFIG.replace("k: 3", "k: 2")), protect.K_LOWERED, None),
        (
            snapshot(BASE_CONFIG.replace("attempts: 3", "attempts: 2")),
            protect.CONFIRM_LOWERED,
            None,
        ),
        (
            snapshot(
                BASE_CONFIG.replace("must_not_break_attempts: 6", "must_not_break_attempts: 5")
            ),
            protect.CONFIRM_LOWERED,
            None,
        ),
        (
            snapshot(BASE_CONFIG.replace("regression: true", "regression: false")),
            protect.REGRESSION_BLOCK_OFF,
            None,
        ),
        (snapshot(BASE_CONFIG + "scoring: {normalize: [strip]}\n"), protect.SCORING_CHANGED, None),
        (
            snapshot(BASE_CONFIG + "scoring: {extract: {regex: '(approve|deny)'}}\n"),
            protect.SCORING_RULES_CHANGED,
            None,
        ),
        (
            snapshot(BASE_CONFIG + "scoring: {fields: {a: set}}\n"),
            protect.SCORING_RULES_CHANGED,
            None,
        ),
        (
            snapshot(BASE_CONFIG + "scoring: {checks: required}\n"),
            protect.SCORING_RULES_CHANGED,
            None,
        ),
        (
            snapshot(rows=_rows(a={"expected_checks": {"damage": "found"}})),
            protect.ROW_RELABELED,
            "a",
        ),
    ],
)
def test_each_protected_edit_is_found(head: ProtectedInputs, kind: str, row: str | None) -> None:
    [change] = protected_changes(snapshot(), head)
    assert (change.kind, change.id) == (kind, row)


LIMITED = BASE_CONFIG.replace(
    "gate: {block_on_any_regression: true}",
    "gate: {block_on_any_regression: true, max_cost_increase: 0.25, max_latency_p95_increase: 0.5}",
)


@pytest.mark.parametrize(
    ("head", "detail"),
    [
        (
            LIMITED.replace(", max_cost_increase: 0.25", ""),
            "gate.max_cost_increase +25% is removed: with the allow label this pull request is "
            "held to no limit, the new setting; without it, to the base's +25%",
        ),
        (
            LIMITED.replace("max_cost_increase: 0.25", "max_cost_increase: 3"),
            "gate.max_cost_increase +25% is raised to +300%: with the allow label this pull "
            "request is held to +300%, the new setting; without it, to the base's +25%",
        ),
        (
            LIMITED.replace(", max_latency_p95_increase: 0.5", ""),
            "gate.max_latency_p95_increase +50% is removed: with the allow label this pull "
            "request is held to no limit, the new setting; without it, to the base's +50%",
        ),
    ],
)
def test_loosening_a_spend_limit_is_a_protected_change(head: str, detail: str) -> None:
    [change] = protected_changes(snapshot(LIMITED), snapshot(head))
    assert (change.kind, said(change.what)) == (protect.SPEND_LIMIT_LOOSENED, detail)
    tighter = LIMITED.replace("0.25", "0.1").replace("0.5}", "0.2}")
    assert protected_changes(snapshot(LIMITED), snapshot(tighter)) == ()
    assert protected_changes(snapshot(), snapshot(LIMITED)) == ()  # adding one is fine


SEQUENTIAL_BASE = BASE_CONFIG.replace(
    "gate: {block_on_any_regression: true}",
    "gate: {block_on_any_regression: true, rule: sequential}",
)
STRICT_BASE = SEQUENTIAL_BASE.replace("rule: sequential", "rule: strict")


@pytest.mark.parametrize(
    ("base", "head", "detail"),
    [
        (
            STRICT_BASE,
            SEQUENTIAL_BASE,
            "gate.rule changes from strict to sequential (a wrong answer no longer blocks)",
        ),
        (
            STRICT_BASE,
            SEQUENTIAL_BASE.replace("rule: sequential", "rule: relative"),
            "gate.rule changes from strict to relative (a wrong answer no longer blocks)",
        ),
        (
            STRICT_BASE,
            BASE_CONFIG,  # no gate.rule: the default, relative
            "gate.rule changes from strict to relative (a wrong answer no longer blocks)",
        ),
        (
            SEQUENTIAL_BASE,
            SEQUENTIAL_BASE.replace(
                "rule: sequential", "rule: sequential, sequential: {beta: 0.3}"
            ),
            "gate.sequential changes (beta 0.1 -> 0.3): a gated row whose accuracy drops from "
            "99% to 80% would block 74.5% of the time, now 54.1%",
        ),
        (
            SEQUENTIAL_BASE,
            SEQUENTIAL_BASE.replace(
                "rule: sequential", "rule: sequential, sequential: {unreliable: 0.5}"
            ),
            "gate.sequential changes (unreliable 0.7 -> 0.5): a gated row whose accuracy drops "
            "from 99% to 80% would block 74.5% of the time, now 43.5%",
        ),
        (
            SEQUENTIAL_BASE,
            SEQUENTIAL_BASE.replace(
                "rule: sequential", "rule: sequential, sequential: {baseline_alpha: 0.05}"
            ),
            "gate.sequential changes (baseline_alpha 0.005 -> 0.05): a gated row whose accuracy "
            "drops from 95% to 50% would block 75.3% of the time, now 54.9%",
        ),
    ],
)
def test_loosening_the_gated_row_rule_is_a_protected_change(
    base: str, head: str, detail: str
) -> None:
    """Attack: the pull request that loosens the rule its own rows are judged by."""
    [change] = protected_changes(snapshot(base), snapshot(head))
    assert (change.kind, said(change.what)) == (protect.RULE_LOOSENED, detail)
    # Control: the same pull request without the edit changes nothing protected.
    assert protected_changes(snapshot(base), snapshot(base)) == ()


@pytest.mark.parametrize(
    ("base", "head"),
    [
        (SEQUENTIAL_BASE, STRICT_BASE),  # any wrong answer blocks: stricter
        (SEQUENTIAL_BASE, SEQUENTIAL_BASE.replace("rule: sequential", "rule: sequential, "
                                                  "sequential: {alpha: 0.01, beta: 0.05}")),
        (SEQUENTIAL_BASE, SEQUENTIAL_BASE.replace("rule: sequential", "rule: sequential, "
                                                  "sequential: {unreliable: 0.8}")),
        (STRICT_BASE, STRICT_BASE.replace("rule: strict", "rule: strict, "
                                          "sequential: {beta: 0.4}")),  # not the rule in use
    ],
)  # fmt: skip
def test_tightening_the_gated_row_rule_is_not_a_protected_change(base: str, head: str) -> None:
    assert protected_changes(snapshot(base), snapshot(head)) == ()


def test_the_gated_row_rule_comes_from_the_base() -> None:
    base = parse_config(STRICT_BASE, Path("/repo/passk.yml")).config
    head = parse_config(SEQUENTIAL_BASE, Path("/repo/passk.yml")).config
    assert effective_config(base, head).gate.policy.rule.rule == "strict"


def test_the_gate_limits_and_prices_come_from_the_base() -> None:
    base = parse_config(LIMITED + "pricing: {input_per_mtok: 1, output_per_mtok: 2}\n",
                        Path("/repo/passk.yml")).config  # fmt: skip
    head = parse_config(BASE_CONFIG + "pricing: {input_per_mtok: 0, output_per_mtok: 0}\n",
                        Path("/repo/passk.yml")).config  # fmt: skip
    effective = effective_config(base, head)
    assert effective.gate.policy.max_cost_increase == 0.25
    assert effective.gate.policy.max_latency_p95_increase == 0.5
    assert effective.pricing == base.pricing
    # Allowed by label, the head's spend limits stand (removed here); the rest stays the base's.
    allowed = effective_config(base, head, allowed=True)
    assert allowed.gate.policy.max_cost_increase is None
    assert allowed.gate.policy.max_latency_p95_increase is None
    assert allowed.pricing == base.pricing and allowed.k == base.k
    assert allowed.gate.policy.block_on_any_regression == base.gate.policy.block_on_any_regression


@pytest.mark.parametrize(
    ("base", "head", "details"),
    [
        (
            "scoring: {by: environment, threshold: 1.0}",
            "scoring: {by: environment, threshold: 0.5}",
            ["scoring.threshold changes from 1.0 to 0.5"],
        ),
        (
            "scoring: {checks: required}",
            "scoring: {checks: reported}",
            ["scoring.checks is removed (it was 'required'; the default applies)"],
        ),
        (
            "scoring: {fields: {amount: {tolerance: 1}}}",
            "scoring: {fields: {amount: {tolerance: 50}}}",
            ["scoring.fields.amount.tolerance changes from 1.0 to 50.0"],
        ),
        (
            "scoring: {extract: {json_pointer: /decision}}",
            "scoring: {extract: {json_pointer: /answer}, fields: {action: exact}}",
            [
                "scoring.extract.json_pointer changes from '/decision' to '/answer'",
                "scoring.fields is set to {action: {compare: 'exact'}}",
            ],
        ),
    ],
)
def test_any_scoring_rule_changed_is_a_protected_change(
    base: str, head: str, details: list[str]
) -> None:
    """No order says which rules are stricter: every change decides which answers count.

    Each change is said in words, leaf by leaf: no JSON object (whose quotes
    become ``&quot;`` in the comment) is printed."""
    changes = protected_changes(
        snapshot(BASE_CONFIG + base + "\n"), snapshot(BASE_CONFIG + head + "\n")
    )
    assert [(c.kind, said(c.what)) for c in changes] == [
        (protect.SCORING_RULES_CHANGED, d) for d in details
    ]
    assert not any('"' in said(c.what) for c in changes)
    same = snapshot(BASE_CONFIG + base + "\n")
    assert protected_changes(same, snapshot(BASE_CONFIG + base + "\n")) == ()


def test_the_scoring_rules_come_from_the_base_unless_the_label_allows_the_head_s() -> None:
    base = parse_config(BASE_CONFIG, Path("/repo/passk.yml")).config
    head = parse_config(BASE_CONFIG + "scoring: {extract: {regex: '(approve|deny)'}}\n",
                        Path("/repo/passk.yml")).config  # fmt: skip
    assert effective_config(base, head).scoring == base.scoring
    assert effective_config(base, head, allowed=True).scoring == head.scoring


def test_strengthening_edits_are_not_protected_changes() -> None:
    stronger = BASE_CONFIG.replace("k: 3", "k: 5").replace("attempts: 3", "attempts: 4")
    rows = _rows(c={"must_not_break": True})
    rows.append({"id": "d", "input": 4, "expected": "deny"})
    head = snapshot(stronger + "scoring: {normalize: []}\n", rows)
    assert protected_changes(snapshot(), head) == ()
    # When the base does not block on any regression, an unprotected row may be removed
    # and relabeled freely (with the block on, every row is gated: tests/sides/test_gated_rows.py).
    lax = snapshot(NO_REGRESSION_BLOCK)
    assert protected_changes(lax, snapshot(NO_REGRESSION_BLOCK, BASE_ROWS[:2])) == ()
    relabeled = snapshot(NO_REGRESSION_BLOCK, _rows(c={"expected": "approve"}))
    assert protected_changes(lax, relabeled) == ()


NO_REGRESSION_BLOCK = BASE_CONFIG.replace("regression: true", "regression: false")


def test_a_ratchet_locked_row_keeps_its_input_after_losing_its_mark() -> None:
    # The base does not block on any regression (then every row is gated).
    base = snapshot(NO_REGRESSION_BLOCK)
    head = snapshot(NO_REGRESSION_BLOCK, _rows(c={"input": 30}))
    assert protected_changes(base, head) == ()  # c is unprotected...
    [change] = protected_changes(base, head, ratchet=("c", "gone"))
    assert (change.kind, change.id) == (protect.INPUT_CHANGED, "c")  # ...unless locked
    assert said(change.what).startswith("ratchet-locked row's input is changed")


@pytest.mark.parametrize(
    ("rows", "kind", "detail"),
    [
        (
            _rows(c={"expected": "approve"}),
            protect.LOCKED_ROW_RELABELED,
            "ratchet-locked row's expected label changes from 'deny' to 'approve'",
        ),
        (
            BASE_ROWS[:2],
            protect.LOCKED_ROW_REMOVED,
            "ratchet-locked row is removed from the dataset (the ratchet locked it "
            "stable-correct on a recorded baseline)",
        ),
    ],
)
def test_a_ratchet_locked_row_keeps_its_label_and_presence_after_losing_its_mark(
    rows: list[dict[str, Any]], kind: str, detail: str
) -> None:
    # The base does not block on any regression: only the lock protects row c.
    base, head = snapshot(NO_REGRESSION_BLOCK), snapshot(NO_REGRESSION_BLOCK, rows)
    [change] = protected_changes(base, head, ratchet=("c",))
    assert (change.kind, change.id, said(change.what)) == (kind, "c", detail)
    # Control: the same edit to a row no ratchet locks is the pull request's to make.
    assert protected_changes(base, head, ratchet=("a",)) == ()
    # The label the gate judges the locked row by stays the base's.
    gated = authoritative_dataset(base, head, allowed=False, ratchet=("c",)).by_id()
    if "c" in gated:
        assert gated["c"].expected == "deny"
        assert authoritative_dataset(base, head, allowed=False).by_id()["c"].expected == "approve"
        assert (
            authoritative_dataset(base, head, allowed=True, ratchet=("c",)).by_id()["c"].expected
            == "approve"
        )


def test_blocking_on_any_regression_protects_every_label_the_base_has() -> None:
    relabeled = _rows(c={"expected": "approve"})
    [change] = protected_changes(snapshot(), snapshot(rows=relabeled))
    assert (change.kind, change.id, said(change.what)) == (
        protect.ANY_ROW_RELABELED,
        "c",
        "row's expected label changes from 'deny' to 'approve' "
        "(gate.block_on_any_regression is on)",
    )
    assert (
        authoritative_dataset(snapshot(), snapshot(rows=relabeled), False).by_id()["c"].expected
        == "deny"
    )
    # Control: without the block, the same relabel is the pull request's to make.
    lax = snapshot(NO_REGRESSION_BLOCK)
    assert protected_changes(lax, snapshot(NO_REGRESSION_BLOCK, relabeled)) == ()
    # Rows the base lacks are the pull request's, labels included.
    added = [*BASE_ROWS, {"id": "d", "input": 4, "expected": "approve"}]
    assert protected_changes(snapshot(), snapshot(rows=added)) == ()


def test_an_input_is_compared_by_content_not_by_spelling() -> None:
    rows = [dict(BASE_ROWS[0], input={"amount": 900, "reason": "late"}), *BASE_ROWS[1:]]
    base = snapshot(rows=rows)
    respelled = [dict(rows[0], input={"reason": "late", "amount": 900}), *rows[1:]]
    assert protected_changes(base, snapshot(rows=respelled)) == ()
    swapped = [dict(rows[0], input={"amount": 900, "reason": "lost"}), *rows[1:]]
    [change] = protected_changes(base, snapshot(rows=swapped))
    assert (change.kind, change.id) == (protect.INPUT_CHANGED, "a")


def test_the_base_protects_rows_the_head_weakened() -> None:
    base = snapshot()
    head = snapshot(
        BASE_CONFIG.replace("vip, legal", "legal"),
        _rows(a={"must_not_break": False, "expected": "deny"}, b={"tags": []}),
    )
    rows = authoritative_dataset(base, head, allowed=False).by_id()
    assert (rows["a"].must_not_break, rows["a"].expected) == (True, "approve")
    assert rows["b"].must_not_break and not rows["c"].must_not_break
    allowed = authoritative_dataset(base, head, allowed=True).by_id()
    assert (allowed["a"].must_not_break, allowed["a"].expected) == (False, "deny")


def test_git_paths_are_lexical_inside_the_checkout(tmp_path: Path) -> None:
    real = tmp_path / "real"
    (real / "lax").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(real)], check=True)
    (real / "strict").symlink_to("lax")
    (tmp_path / "workspace").symlink_to(real)
    repo = GitRepo.discover(real)
    # A symlink inside the checkout is the pull request's: not followed.
    assert repo.relative(real / "strict" / "passk.yml") == "strict/passk.yml"
    assert repo.relative(real / "strict" / ".." / "passk.yml") == "passk.yml"
    # A symlink leading to the checkout itself (the runner's, not the PR's) is.
    assert repo.relative(tmp_path / "workspace" / "passk.yml") == "passk.yml"
    with pytest.raises(GitError, match="outside the git repository"):
        repo.relative(tmp_path / "elsewhere.yml")


def test_the_base_export_is_the_commits_files_read_only_and_without_hooks(tmp_path: Path) -> None:
    repo_dir = tmp_path / "repo"
    run = lambda *a: subprocess.run(  # noqa: E731
        ["git", "-c", "user.name=t", "-c", "user.email=t@x", *a],
        cwd=repo_dir,
        check=True,
        capture_output=True,
    )
    repo_dir.mkdir()
    run("init", "-q")
    (repo_dir / ".gitattributes").write_text("* text eol=crlf\n", encoding="utf-8")
    (repo_dir / "sub").mkdir()
    (repo_dir / "sub" / "agent.sh").write_text("echo hi\n", encoding="utf-8")
    (repo_dir / "sub" / "agent.sh").chmod(0o755)
    (repo_dir / "link").symlink_to("sub/agent.sh")
    run("add", "-A")
    run("commit", "-q", "-m", "base")
    sha = run("rev-parse", "HEAD").stdout.decode().strip()
    hooks = repo_dir / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    (hooks / "post-checkout").write_text(f"#!/bin/sh\ntouch {tmp_path}/hooked\n")
    (hooks / "post-checkout").chmod(0o755)
    repo = GitRepo.discover(repo_dir)
    with repo.export(sha) as tree:
        assert not tree.is_relative_to(repo_dir)
        assert (tree / "sub" / "agent.sh").read_bytes() == b"echo hi\n"  # the blob, no CRLF
        assert (tree / "sub" / "agent.sh").stat().st_mode & 0o777 == 0o555
        assert (tree / "link").is_symlink() and str((tree / "link").readlink()) == "sub/agent.sh"
        assert (tree / "sub").stat().st_mode & 0o222 == 0
    assert not tree.exists()
    assert not (tmp_path / "hooked").exists()


def test_a_record_of_2000_rows_by_k_5_is_kept_across_part_comments() -> None:
    from passk_action.github.client import GitHubClient
    from passk_action.github.sticky_comment import ATTEMPTS_LIMIT, post_record_parts, split_record
    from support.fakegithub import FakeGitHub

    token = "ghs_partsTestToken0123456789abcdef"
    attempts = tuple(
        Attempt(
            f"refund-{row:05d}",
            n,
            Phase.MAIN,
            None if (row * n) % 97 == 0 else ("approve" if (row + n) % 4 else "deny"),
            error="timeout" if (row * n) % 97 == 0 else None,
            checks=(("receipt", str(row % 5)), ("return_window", "ok" if row % 3 else "late")),
            duration_s=round(0.3 + (row * 7919 + n * 104729) % 9000 / 1000, 3),
        )
        for row in range(2000)
        for n in range(1, 6)
    )
    record = replace(
        _record(attempts[:2]),
        candidate_attempts=attempts,
        attempts_digest=attempts_digest(attempts),
        baseline_attempts=attempts[:40],
        step="a" * 12,
    )
    main, parts = split_record(record)
    assert len(main) <= ATTEMPTS_LIMIT and len(parts) >= 2
    marker = "<!-- passk:record-parts step=aaaaaaaaaaaa -->"
    with FakeGitHub(token=token) as fake:
        client = GitHubClient(api_url=fake.url, token=token, repository=fake.repository)
        post_record_parts(client, 7, parts, marker, "github-actions[bot]")
        client.create_issue_comment(7, f"{MARKER}\nthe report\n{main}")
        assert all(len(body) <= 65536 for body in fake.comment_bodies(7))
        found, warnings = find_record(client.list_issue_comments(7), MARKER, "github-actions[bot]")
        assert warnings == [] and found is not None
        assert found.candidate_attempts == attempts and found.baseline_attempts == attempts[:40]
        # A smaller record later: the parts are edited in place and the rest deleted.
        post_record_parts(client, 7, parts[:1], marker, "github-actions[bot]")
        assert len(fake.comments[7]) == 2
        # A missing part: the verdict stands, the attempts are not replayed.
        comments = client.list_issue_comments(7)
        lost, warnings = find_record(comments, MARKER, "github-actions[bot]")
        assert lost is not None and lost.candidate_attempts is None and not lost.passed
        assert "part comment(s) are missing" in warnings[0]
        # Parts by someone else are not ours.
        for part in parts:
            fake.add_comment(7, f"{marker}\n{part}", login="mallory")
        forged, _ = find_record(client.list_issue_comments(7), MARKER, "github-actions[bot]")
        assert forged is not None and forged.candidate_attempts is None
        assert fake.violations == []


def test_a_recorded_failure_stands_beside_the_spend_limits(tmp_path: Path) -> None:
    """A re-run under cost and latency limits keeps the recorded failure and the limits' own."""
    from passk_action.core.gate import RECORDED_FAILURE_KIND, ProtectedChange, Rule
    from passk_action.core.protected import RecordedFailure
    from passk_action.store.results import read_result, write_result
    from support.scenarios import SPEND_LIMITS, spend_limits_scenario

    fresh = spend_limits_scenario()
    standing = ProtectedChange(RECORDED_FAILURE_KIND, RecordedFailure())
    kept = spend_limits_scenario(SPEND_LIMITS, [standing])
    assert [f.rule for f in kept.gate.failures] == [
        Rule.RECORDED_FAILURE,
        Rule.COST,
        Rule.LATENCY,
    ]
    assert kept.gate.failures[1:] == fresh.gate.failures
    write_result(kept, tmp_path / "result.json")
    assert read_result(tmp_path / "result.json").consistent  # `passk gate` agrees


def test_a_structured_relabel_and_new_checks_are_said_field_by_field() -> None:
    # Not two JSON objects full of quotes (`&quot;` in the comment): the fields that moved.
    config = BASE_CONFIG + "scoring: {fields: {action: exact, amount: {tolerance: 1}}}\n"
    row = {"id": "s", "input": 1, "must_not_break": True}
    was = {**row, "expected": {"action": "refund", "amount": 120}}
    now = {**row, "expected": {"action": "deny", "amount": 120}, "expected_checks": {"w": "ok"}}
    cfg = parse_config(config, Path("/repo/passk.yml")).config

    def inputs(record: dict[str, Any]) -> ProtectedInputs:
        text = (json.dumps(record) + "\n").encode()
        dataset = parse_dataset(text, "data.jsonl", "jsonl", cfg.must_not_break_tags, cfg.scoring)
        return ProtectedInputs(cfg, dataset, b"{}")

    changes = protected_changes(inputs(was), inputs(now))
    assert [(c.kind, c.id, said(c.what)) for c in changes] == [
        (
            protect.ROW_RELABELED,
            "s",
            "must-not-break row's expected decision changes: action 'refund' → 'deny'",
        ),
        (
            protect.ROW_RELABELED,
            "s",
            "must-not-break row's expected checks change from none to {w: 'ok'}",
        ),
    ]


def test_a_non_blocking_regression_reads_the_same_in_the_log_and_the_check_run() -> None:
    # Wrong on every main attempt, mixed with its confirmations: the log's warning and the
    # check run's annotation say the same classes (once "→ flip", elsewhere "→ stable-wrong").
    from passk_action.action.publish import annotate
    from passk_action.core.diff import Confirmation
    from passk_action.core.model import RowClass
    from passk_action.report.check_run import row_annotations
    from support.scenarios import passed_scenario

    result = passed_scenario()
    first = result.comparison.rows[0]
    moved = replace(
        first,
        must_not_break=False,
        baseline_class=RowClass.STABLE_CORRECT,
        baseline_final_class=RowClass.STABLE_CORRECT,
        candidate_class=RowClass.STABLE_WRONG,
        candidate_final_class=RowClass.FLIP,
        confirmation=Confirmation.CONFIRMED_REGRESSION,
    )
    comparison = replace(result.comparison, rows=(moved, *result.comparison.rows[1:]))
    result = replace(result, comparison=comparison)
    out = io.StringIO()
    annotate(Workflow(out, {}), result)
    words = (
        "stable-correct → stable-wrong (with confirmation attempts: baseline stable-correct, "
        "candidate flip); not blocking: the row is not must-not-break"
    )
    assert f"{first.id}: confirmed regression: {words}" in out.getvalue()
    [annotation] = [a for a in row_annotations(result) if a[0] == first.id]
    assert annotation[2].startswith(words)
