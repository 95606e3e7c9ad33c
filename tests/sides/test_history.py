"""Each row's history on a branch, from the git history of the committed baseline artifact.

The repository is built here, commit by commit: six versions of the baseline
on ``main`` (the oldest in schema version 1, one that is not JSON, one that
reverts to an earlier blob), with a row that joined, one that left the
dataset and the ratchet, one whose input changed under the same id, and a
branch merged in whose own versions are not the branch's history.
"""

from __future__ import annotations

import json
import random
import subprocess
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from passk_action.core.history import (
    CODES,
    History,
    HistoryBuilder,
    history_of,
    summarize_version,
)
from passk_action.core.model import EvalSettings, Phase, RowClass, Scoring, Version
from passk_action.core.stats import compute_metrics, summarize_run
from passk_action.report.history import MOVED_TITLE, history_json, history_text, mark, notes
from passk_action.report.history_html import render_history_html
from passk_action.sides.gitrepo import GitRepo
from passk_action.sides.history import base_history, read_history
from passk_action.store import blob
from support.history_repo import ARTIFACT, FLIP, RIGHT, WRONG, Repo, baseline, git
from support.runs import attempts, record, run_of


def other_input(text: str, row_id: str) -> str:
    """The same artifact with ``row_id`` recorded for another input."""
    doc = json.loads(text)
    for row in doc["rows"]:
        if row["id"] == row_id:
            row["input_digest"] = "sha256:" + "e" * 64
    return json.dumps(doc, indent=1)


V1 = baseline({"a": RIGHT, "b": FLIP, "d": RIGHT}, locked=["d"], mnb="d").replace(
    '"schema_version": 2', '"schema_version": 1', 1
)
V2 = baseline({"a": RIGHT, "b": RIGHT, "d": RIGHT, "e": RIGHT}, locked=["d"], mnb="d")
V4 = baseline({"a": RIGHT, "b": FLIP, "c": RIGHT, "e": RIGHT})
V5 = baseline({"a": RIGHT, "b": RIGHT, "c": FLIP, "e": WRONG})


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Repo:
    made = Repo(tmp_path_factory.mktemp("history") / "repo")
    made.commit("start\n", "start", path="README.md")
    made.commit(V1, "baseline 1 (schema version 1)")
    made.commit(V2, "baseline 2")
    made.commit("{not json", "baseline 3, damaged")
    made.commit(V4, "baseline 4: c joins, d leaves the dataset and the ratchet")
    # A branch whose own versions of the artifact never were main's.
    git(made.root, "checkout", "-q", "-b", "side")
    made.commit(baseline({"a": FLIP, "b": FLIP}), "a forged history on a branch")
    made.commit(V5, "the branch ends where main goes next")
    git(made.root, "checkout", "-q", "main")
    git(made.root, "merge", "-q", "--no-ff", "-m", "merge side: baseline 5", "side")
    made.commits.append(git(made.root, "rev-parse", "HEAD"))
    made.commit("unrelated\n", "a commit that does not touch the baseline", path="notes.txt")
    made.commit(other_input(V4, "e"), "baseline 6: back to baseline 4, e has a new input")
    return made


def read(repo: Repo, last: int = 10, tip: str = "main") -> History:
    return read_history(GitRepo(repo.root), tip, ARTIFACT, last=last, branch="main")


def test_each_rows_classes_come_from_every_readable_baseline_newest_first(repo: Repo) -> None:
    history = read(repo)
    # Five readable versions: 6, the merge (5), 4, 2 and 1; version 3 is listed as skipped.
    assert len(history.baselines) == 5
    assert [b.commit for b in history.baselines] == [
        repo.commits[-1],
        repo.commits[-3],
        repo.commits[4],
        repo.commits[2],
        repo.commits[1],
    ]
    codes = {r.id: r.codes for r in history.rows.values()}
    assert codes == {"a": "CCCCC", "b": "FCFCF", "c": "CFC--", "e": "C----", "d": "---CC"}
    assert [s.commit for s in history.skipped] == [repo.commits[3]]
    assert "invalid JSON" in history.skipped[0].reason
    assert (history.more, history.shallow, history.problem) == (False, False, None)


def test_rows_that_flipped_joined_and_left_the_ratchet(repo: Repo) -> None:
    history = read(repo)
    assert [r.id for r in history.flipped()] == ["b", "c"]
    # c joined three baselines ago; e's new input makes it a new row too.
    assert {r.id: r.since for r in history.joined()} == {"c": 3, "e": 1}
    assert [r.id for r in history.left()] == ["d"]
    (exit_,) = history.ratchet_exits
    assert (exit_.id, exit_.commit, exit_.left_dataset) == ("d", repo.commits[4], True)
    assert history.baselines[-1].locked == 1 and history.baselines[0].locked == 0
    assert history.unmeasured(["a", "c", "z"]) == ["z"]


def test_the_three_numbers_of_each_baseline(repo: Repo) -> None:
    history = read(repo)
    newest, *_, oldest = history.baselines
    # Baseline 6: a, b (flip), c, e right: 11 of 12 decisions, 3 of 4 rows right every time.
    assert newest.metrics.mean_accuracy == pytest.approx(11 / 12)
    assert newest.metrics.flip_rate == pytest.approx(1 / 4)
    assert oldest.metrics.rows == 3 and oldest.metrics.pass_k == pytest.approx(2 / 3)


def test_the_window_holds_the_last_n_readable_baselines(repo: Repo) -> None:
    history = read(repo, last=2)
    assert len(history.baselines) == 2 and history.more
    assert {r.id: r.codes for r in history.rows.values()} == {
        "a": "CC",
        "b": "FC",
        "c": "CF",
        "e": "C-",
    }


def test_each_blob_is_read_once(repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    read_blobs: list[str] = []
    real = GitRepo.blobs

    def counting(self: GitRepo, oids: Sequence[str]):  # type: ignore[no-untyped-def]
        for oid, data in real(self, oids):
            read_blobs.append(oid)
            yield oid, data

    monkeypatch.setattr(GitRepo, "blobs", counting)
    parsed: list[str] = []
    real_read = blob.RunReader.read

    def reading(self: blob.RunReader, data: bytes, where: str):  # type: ignore[no-untyped-def]
        parsed.append(where)
        return real_read(self, data, where)

    monkeypatch.setattr(blob.RunReader, "read", reading)
    read(repo)
    assert len(read_blobs) == len(set(read_blobs)) == 6
    assert len(parsed) == 6


def test_a_revert_to_an_earlier_blob_reuses_its_summary(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo")
    repo.commit(V4, "one")
    repo.commit(V5, "two")
    repo.commit(V4, "revert")
    history = read(repo)
    assert history.rows["c"].codes == "CFC"
    assert [b.commit for b in history.baselines] == repo.commits[::-1]


def test_a_row_whose_class_changed_without_a_flip_is_listed(tmp_path: Path) -> None:
    # Right, then always wrong twice, then right again: never a flip, yet it moved.
    repo = Repo(tmp_path / "repo")
    for n, answer in enumerate((RIGHT, WRONG, ("escalate",) * 3, RIGHT)):
        repo.commit(baseline({"a": answer, "steady": RIGHT}), f"baseline {n}")
    history = read(repo)
    assert history.rows["a"].codes == "CWWC"
    assert [r.id for r in history.moved()] == ["a"]
    text = history_text(history)
    assert (
        f"{MOVED_TITLE} (1):\n  a {' ' * 23}CWWC  stable-wrong in 2 of the last 4 baselines" in text
    )
    assert "steady" not in text
    html = render_history_html(history)
    assert f"<h3>{MOVED_TITLE} (1)</h3>" in html and "<code>a</code>" in html
    assert history_json(history)["moved"] == ["a"]


def test_a_shallow_clone_says_how_many_baselines_it_could_read(repo: Repo, tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "3", f"file://{repo.root}", str(clone)],
        check=True,
        capture_output=True,
    )
    history = read_history(GitRepo(clone), "HEAD", ARTIFACT, last=10, branch="main")
    assert history.shallow and history.cut_short
    assert 1 <= len(history.baselines) < 5
    (note,) = notes(history)
    assert note == (
        f"{len(history.baselines)} baseline{'s' if len(history.baselines) > 1 else ''} "
        "readable on main in this shallow clone; fetch-depth: 0 gives all"
    )


def test_git_failing_is_a_history_that_says_why_never_an_error(repo: Repo) -> None:
    history = base_history(GitRepo(repo.root), "0" * 40, ARTIFACT, branch="main")
    assert history.problem is not None and not history.baselines
    assert notes(history)[0].startswith("the history of the baseline on main could not be read")
    assert mark(history, "a") is None


def test_no_baseline_yet(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo")
    repo.commit("x\n", "start", path="README.md")
    history = read(repo)
    assert history.baselines == () and history.problem is None
    assert notes(history) == ["no version of the baseline artifact is committed on main"]
    assert mark(history, "a") is None


# --- the marks ---------------------------------------------------------------------


def test_marks_tell_new_trouble_from_old(repo: Repo) -> None:
    history = read(repo)
    digest = history.rows["a"].input_digest
    assert mark(history, "a", digest) == (
        "stable-correct in each of the last 5 baselines on main (new trouble)"
    )
    assert mark(history, "b") == "flip in 3 of the last 5 baselines on main (old trouble)"
    assert mark(history, "c") == (
        "flip in 1 of the 3 baselines on main since it joined (old trouble)"
    )
    assert mark(history, "e") == (
        "stable-correct in the one baseline on main since it joined (new trouble)"
    )
    assert mark(history, "z") == "in none of the last 5 baselines on main: a new row"
    # The gated row's input is not the one the baselines measured.
    assert mark(history, "a", "sha256:" + "f" * 64) == (
        "its input is new: no baseline on main measured it"
    )


def test_marks_with_one_baseline_and_with_gaps() -> None:
    rows = [record("a"), record("b")]
    one = run_of(rows, attempts("a", WRONG) + attempts("b", FLIP), version=Version.BASELINE)
    history = history_of([("c1", "2024-01-01", one)], wanted=10, branch="main")
    assert mark(history, "a") == "stable-wrong in the last baseline on main (old trouble)"
    assert mark(history, "b") == "flip in the last baseline on main (old trouble)"
    only_a = run_of([record("a")], attempts("a", RIGHT), version=Version.BASELINE)
    gaps = history_of(
        [("c3", "d", one), ("c2", "d", only_a), ("c1", "d", one)], wanted=10, branch=None
    )
    assert gaps.rows["b"].codes == "F-F"
    assert mark(gaps, "b") == (
        "flip in 2 of the 2 of the last 3 baselines on the base branch that held it (old trouble)"
    )
    mixed = run_of(rows, attempts("a", [None, "deny", "deny"]) + attempts("b", FLIP))
    history = history_of([("c2", "d", mixed), ("c1", "d", one)], wanted=5, branch="main")
    assert mark(history, "a") == (
        "unclassified in 1, stable-wrong in 1 of the last 2 baselines on main (old trouble)"
    )


# --- the maths, without git ---------------------------------------------------------


def test_a_version_summary_classifies_main_attempts_only() -> None:
    confirm = attempts("a", ["approve"], start=4, phase=Phase.CONFIRM)
    run = run_of([record("a", mnb=True)], attempts("a", RIGHT) + confirm, version=Version.BASELINE)
    summary = summarize_version(run)
    assert summary.rows == (("a", record("a").input_digest, "C"),)
    assert summary.metrics.classes[RowClass.STABLE_CORRECT] == 1


def test_the_builder_refuses_more_than_it_wants() -> None:
    builder = HistoryBuilder(1)
    run = run_of([record("a")], attempts("a", RIGHT), version=Version.BASELINE)
    builder.add("c1", "d", summarize_version(run))
    with pytest.raises(ValueError):
        builder.add("c0", "d", summarize_version(run))
    with pytest.raises(ValueError):
        HistoryBuilder(0)


# --- passk history's outputs -------------------------------------------------------------


def test_history_text_lists_flips_new_rows_and_ratchet_exits(repo: Repo) -> None:
    history = read(repo)
    text = history_text(history, ["a", "b", "c", "e", "z"])
    short = {i: sha[:7] for i, sha in enumerate(repo.commits)}
    assert text.splitlines()[0] == f"5 baselines of {ARTIFACT} on main, newest first"
    assert f"{MOVED_TITLE} (2):" in text
    assert "  b                        FCFCF  flip in 3 of the last 5 baselines on main" in text
    assert f"  c                        CFC--  joined 3 baselines ago, at {short[4]}" in text
    assert f"  d                        at {short[4]}: it left the dataset" in text
    assert "Rows in the dataset that no baseline measured yet (1):\n  z" in text


def test_history_json_is_the_same_history_as_data(repo: Repo) -> None:
    doc = history_json(read(repo), ["a", "z"])
    assert doc["readable"] == 5 and doc["wanted"] == 10
    assert doc["flipped"] == ["b", "c"] and doc["new"] == ["c", "e"] and doc["left"] == ["d"]
    row_c = next(r for r in doc["rows"] if r["id"] == "c")
    assert row_c["classes"] == ["stable-correct", "flip", "stable-correct", None, None]
    assert doc["unmeasured"] == ["z"]
    assert doc["ratchet_exits"] == [{"id": "d", "commit": doc["baselines"][2]["commit"],
                                     "left_dataset": True}]  # fmt: skip
    json.dumps(doc)


def test_a_version_summary_is_what_summarize_run_says_whatever_the_attempt_order() -> None:
    """The one-pass fold agrees with the report's summaries: shuffled attempts, errors,
    confirmations (left out), normalization, rows without attempts."""
    rng = random.Random(24)
    for case in range(50):
        rows = [record(f"r{i}", rng.choice(["deny", "Deny "]), i % 3 == 0) for i in range(8)]
        made = []
        for row in rows[:-1]:
            answers = [
                rng.choice(["deny", "approve", "DENY", None]) for _ in range(rng.randint(1, 4))
            ]
            made += attempts(row.id, answers)
            made += attempts(row.id, ["approve"], start=10, phase=Phase.CONFIRM)
        rng.shuffle(made)
        run = replace(
            run_of(rows, made, version=Version.BASELINE),
            settings=EvalSettings(k=3, scoring=Scoring(("strip", "casefold") if case % 2 else ())),
        )
        summaries = summarize_run(run.rows, run.attempts_by_row(), 3, run.settings.scoring)
        version = summarize_version(run)
        assert [code for _, _, code in version.rows] == [CODES[s.row_class] for s in summaries]
        assert version.metrics == compute_metrics(summaries, 3)
