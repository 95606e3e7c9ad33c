"""The gate's sticky record: one hidden comment, found by login and marker, matched by tree."""

from __future__ import annotations

import base64
import contextlib
import gzip
import json
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from passk_action.core.model import Attempt, EvalSettings, Phase
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
