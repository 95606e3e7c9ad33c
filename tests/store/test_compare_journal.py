"""The comparison's journal: the rounds' attempts of both versions, kept for ``--resume``."""

from __future__ import annotations

from pathlib import Path

import pytest

from passk_action.core.model import Attempt, Phase, Version
from passk_action.errors import ArtifactError
from passk_action.store.compare_journal import (
    CompareJournal,
    compare_journal_path,
    discard_compare_journal,
    read_compare_journal,
)

FOR = {"dataset": "sha256:abc", "candidate": "python agent.py", "base_commit": None}


def attempt(row: str, n: int, decision: str | None = "deny") -> Attempt:
    error = None if decision is not None else "timeout"
    return Attempt(row, n, Phase.CONFIRM, decision, error=error, duration_s=0.5)


def journaled(out: Path) -> CompareJournal:
    with CompareJournal.open(out, FOR) as journal:
        journal.append(Version.BASELINE, attempt("r1", 4))
        journal.append(Version.CANDIDATE, attempt("r1", 4, "approve"))
        journal.append_try(Version.CANDIDATE, "r2", 5, "exit 3: overloaded")
    return journal


def test_nothing_asked_leaves_no_file(tmp_path: Path) -> None:
    out = tmp_path / "candidate.json"
    with CompareJournal.open(out, FOR):
        pass
    assert not compare_journal_path(out).exists()


def test_resume_gives_back_every_attempt_and_pending_try_by_version(tmp_path: Path) -> None:
    out = tmp_path / "candidate.json"
    journaled(out)
    with CompareJournal.open(out, FOR, resume=True) as again:
        recorded = again.recorded
        assert recorded.attempts[Version.BASELINE] == (attempt("r1", 4),)
        assert recorded.attempts[Version.CANDIDATE] == (attempt("r1", 4, "approve"),)
        assert recorded.tries[Version.CANDIDATE] == {("r2", 5): ("exit 3: overloaded",)}
        assert again.answered
        again.append(Version.CANDIDATE, attempt("r2", 5))
    final = read_compare_journal(compare_journal_path(out), FOR)
    assert final.attempts[Version.CANDIDATE][-1] == attempt("r2", 5)
    assert final.tries[Version.CANDIDATE] == {}, "a recorded attempt's tries are in it already"
    discard_compare_journal(out)
    assert not compare_journal_path(out).exists()


def test_a_torn_last_line_is_dropped_with_a_warning(tmp_path: Path) -> None:
    out = tmp_path / "candidate.json"
    journaled(out)
    path = compare_journal_path(out)
    path.write_bytes(path.read_bytes() + b'{"version":"baseline","row":"r')
    warnings: list[str] = []
    with CompareJournal.open(out, FOR, resume=True, warn=warnings.append) as again:
        assert len(again.recorded.attempts[Version.BASELINE]) == 1
    assert [w.split(": ", 1)[1] for w in warnings] == [
        "dropped a torn last line (the run was killed mid-write)"
    ]
    assert path.read_bytes().endswith(b"\n"), "rewritten without its torn tail"


def test_starting_anew_over_recorded_attempts_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "candidate.json"
    journaled(out)
    with pytest.raises(ArtifactError, match="interrupted comparison with 2 recorded attempt"):
        CompareJournal.open(out, FOR)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"candidate": "python other.py"}, "its candidate differ"),
        ({"base_commit": "f" * 40}, "its base_commit differ"),
    ],
)
def test_a_resume_of_another_comparison_is_refused(
    tmp_path: Path, change: dict[str, str], message: str
) -> None:
    out = tmp_path / "candidate.json"
    journaled(out)
    with pytest.raises(ArtifactError, match=message) as caught:
        CompareJournal.open(out, {**FOR, **change}, resume=True)
    assert "without --resume" in str(caught.value)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"version":"nobody","row":"r1","n":9,"phase":"confirm","decision":"deny"}', "version"),
        ('{"tried":{"row":"r1","n":9},"retry":"x"}', "a failed try"),
        ('{"version":"baseline","row":"r1","n":4,"phase":"confirm","decision":"deny",'
         '"duration_s":0.5}', "recorded twice"),
        ("not json", "damaged journal line"),
    ],
    ids=["version", "try", "twice", "garbage"],
)  # fmt: skip
def test_an_edited_line_is_an_error_naming_it(tmp_path: Path, line: str, message: str) -> None:
    out = tmp_path / "candidate.json"
    journaled(out)
    path = compare_journal_path(out)
    path.write_text(path.read_text() + line + "\n" + path.read_text().splitlines()[1] + "\n")
    with pytest.raises(ArtifactError, match=message) as caught:
        read_compare_journal(path, FOR)
    assert str(caught.value).startswith(f"{path}:5: ")


def test_a_newer_journal_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "candidate.json"
    journaled(out)
    path = compare_journal_path(out)
    path.write_text(path.read_text().replace('"schema_version":1', '"schema_version":2', 1))
    with pytest.raises(ArtifactError, match="schema_version 2 is not one this passk reads"):
        read_compare_journal(path, FOR)
