"""``passk compare --base main`` on a laptop gives the pull request's verdict.

One repository, two gates: the action in gate mode against the fake GitHub,
and the command its comment's "Reproduce locally" line suggests, run by the
CLI in the same checkout.  For each way a branch could weaken the gate (drop
a row's must-not-break mark or tag, relabel such a row, loosen a gate
setting or the gated-row rule), both fail with the same blocking reasons, protected change
included; the laptop catches it before the commit too (the head is the
working tree); the same branch without the trick passes in both.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from passk_action.cli import main as cli_main
from support.fakegithub import FakeGitHub
from support.pull_request_repo import (
    RIGHT,
    Checkout,
    checkout,  # noqa: F401 - the shared fixtures
    commit,
    edit_config,
    edit_rows,
    fake,  # noqa: F401
    git,
    template,  # noqa: F401
    write_script,
)
from support.words import gate_warnings_of, worded

ALLOW = "passk-allow-baseline-change"  # gate.allow_label's default


def gate_section(report: str) -> list[str]:
    """The report's "## Gate" section: the verdict and every blocking reason, as rendered."""
    lines = report.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("## Gate"))
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), None)
    return lines[start:end]


def failures(result: dict[str, Any]) -> list[tuple[str | None, str, str]]:
    return [(f["id"], f["rule"], f["reason"]) for f in worded(result)]


def protected_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("passk: protected change:")]


def reproduce_command(comment: str) -> list[str]:
    """The arguments of the comment's "Reproduce locally" ``passk compare`` command."""
    found = re.search(r"\*\*Reproduce locally:\*\* `(passk compare [^`]+)`", comment)
    assert found is not None, comment
    words = shlex.split(found.group(1))
    assert words[:2] == ["passk", "compare"]
    return words[1:]


def comparable(comment: str) -> list[str]:
    """A comment's visible lines, less the hidden record, the link to the workflow run and
    the candidate's p95 latency (wall time: each run has its own)."""
    lines = comment.rstrip("\n").splitlines()
    assert lines[0] == "<!-- passk:sticky-comment -->" and lines[-1].startswith("<!-- passk:record")
    return [
        re.sub(
            r"(p95 [^→]+ → )[^·]+",
            r"\1<p95> ",
            re.sub(r"\[this workflow run\]\([^)]*\)", "this workflow run", line),
        )
        for line in lines[1:-1]
    ]


def why_block(text: str) -> list[str]:
    """The lines of "Why it failed" up to the three numbers (or the next heading)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("**Why it failed**")), None)
    if start is None:
        return []
    end = next(
        i
        for i in range(start + 1, len(lines))
        if lines[i].startswith(("| ", "- **Baseline:**", "#", "⚠️", "> ⚠️"))
    )
    return [line for line in lines[start:end] if line]


Edit = Callable[[Path], None]

TRICKS: dict[str, tuple[list[Edit], dict[str, Any], list[tuple[str | None, str, str]]]] = {
    # r1 breaks, and the branch drops its must-not-break mark.
    "mark removed": (
        [edit_rows(lambda rows: rows[0].update(must_not_break=False))],
        {**RIGHT, "r1": ["approve", "deny"]},
        [
            ("r1", "protected-change", "must-not-break row's own mark is removed"),
            (
                "r1",
                "must-not-break",
                "must-not-break row was stable-correct on the baseline and is flip on the "
                "candidate (confirmed-regression)",
            ),
        ],
    ),
    # r2 is must-not-break by its tag `vip`: it breaks, and the branch drops the tag.
    "tag removed": (
        [edit_rows(lambda rows: rows[1].update(tags=[]))],
        {**RIGHT, "r2": ["approve"]},
        [
            ("r2", "protected-change", "must-not-break row loses the protecting tag(s) vip"),
            (
                "r2",
                "must-not-break",
                "must-not-break row was stable-correct on the baseline and is stable-wrong on "
                "the candidate (confirmed-regression)",
            ),
        ],
    ),
    # r1 now answers deny, and the branch makes deny its expected label.
    "label changed": (
        [edit_rows(lambda rows: rows[0].update(expected="deny"))],
        {**RIGHT, "r1": ["deny"]},
        [
            (
                "r1",
                "protected-change",
                "must-not-break row's expected label changes from 'approve' to 'deny'",
            ),
            (
                "r1",
                "must-not-break",
                "must-not-break row was stable-correct on the baseline and is stable-wrong on "
                "the candidate (confirmed-regression)",
            ),
        ],
    ),
    # r1 now answers in a sentence, and the branch reads its answers with a regex.
    "scoring loosened": (
        [edit_config(lambda c: c.update(scoring={"extract": {"regex": "(approve|deny)"}}))],
        {**RIGHT, "r1": ["I would approve it"]},
        [
            (
                None,
                "protected-change",
                "scoring.extract is set to {regex: '(approve|deny)'}",
            ),
            (
                "r1",
                "must-not-break",
                "must-not-break row was stable-correct on the baseline and is stable-wrong on "
                "the candidate (confirmed-regression)",
            ),
        ],
    ),
    # r3 (not must-not-break) breaks, and the branch turns the regression block off.
    "gate setting loosened": (
        [edit_config(lambda c: c["gate"].update(block_on_any_regression=False))],
        {**RIGHT, "r3": ["deny"]},
        [
            (None, "protected-change", "gate.block_on_any_regression is turned off"),
            (
                "r3",
                "regression",
                "row was stable-correct on the baseline and is stable-wrong on the candidate "
                "(confirmed-regression) (gate.block_on_any_regression is on)",
            ),
        ],
    ),
    # r1 answers wrong once, then right: the strict rule (the base's) blocks it, the default
    # rule would pass it (within chance), and the branch switches to the default rule.
    "gate rule loosened": (
        [edit_config(lambda c: c["gate"].update(rule="sequential"))],
        {**RIGHT, "r1": ["approve", "deny", "approve"]},
        [
            (
                None,
                "protected-change",
                "gate.rule changes from strict to sequential (a wrong answer no longer blocks)",
            ),
            (
                "r1",
                "must-not-break",
                "must-not-break row was stable-correct on the baseline and is flip on the "
                "candidate (right on every re-run; under the strict rule a wrong answer blocks)",
            ),
        ],
    ),
}


def laptop(
    clone: Checkout, capsys: pytest.CaptureFixture[str], args: list[str]
) -> tuple[int, dict[str, Any], str, str]:
    """``passk compare`` run in the checkout: exit code, result JSON, report, stderr."""
    capsys.readouterr()
    out = clone.repo / ".passk" / "result.json"
    out.unlink(missing_ok=True)
    code = cli_main([*args, "--quiet"])
    captured = capsys.readouterr()
    result = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}
    return code, result, captured.out, captured.err


@pytest.mark.parametrize("trick", sorted(TRICKS))
def test_the_laptop_and_the_pull_request_block_the_same_trick_for_the_same_reasons(
    checkout: Checkout,  # noqa: F811
    fake: FakeGitHub,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    trick: str,
) -> None:
    edits, script, expected = TRICKS[trick]
    monkeypatch.chdir(checkout.repo)
    args = ["compare", "--config", "passk.yml", "--base", "main", "--json", ".passk/result.json"]

    # Before the commit: the working tree is the head the laptop gates.
    (checkout.repo / "script.json").write_text(json.dumps({"rows": script}), encoding="utf-8")
    for edit in edits:
        edit(checkout.repo)
    assert git(checkout.repo, "status", "--porcelain", "--untracked-files=no") != ""
    code, uncommitted, report, err = laptop(checkout, capsys, args)
    assert code == 1, report
    assert failures(uncommitted) == expected

    # Pushed: the action gates the pull request into main.
    head = checkout.head()
    action = checkout.run(fake, head, base_ref="main")
    assert action.code == 1, action.stdout
    action_result = json.loads((checkout.repo / ".passk/result.json").read_text("utf-8"))
    assert failures(action_result) == expected
    [comment] = fake.comment_bodies(7)
    assert action.outputs["passed"] == "false"

    # The comment's "Reproduce locally" command, pasted on the laptop.
    reproduce = reproduce_command(comment)
    assert reproduce == args
    code, local, report, err = laptop(checkout, capsys, reproduce)
    assert code == 1
    assert failures(local) == failures(action_result) == failures(uncommitted)
    assert local["protected_changes"] == action_result["protected_changes"]
    # Same renderer as the job summary: the same gate section, line for line.
    assert gate_section(report) == gate_section(action.summary)
    # The console names the protected change as the action's log does.
    assert protected_lines(err) == protected_lines(action.stdout) != []
    # --comment previews the comment the pull request got, and the report and the job
    # summary start with its "Why it failed" block.
    code, _, report, _ = laptop(checkout, capsys, [*reproduce, "--comment", "comment.md"])
    preview = (checkout.repo / "comment.md").read_text(encoding="utf-8")
    assert comparable(preview) == comparable(comment)
    why = why_block(comment)
    assert why and why_block(report) == why_block(action.summary) == why
    assert fake.violations == []


def test_the_same_branch_without_a_trick_passes_in_both(
    checkout: Checkout,  # noqa: F811
    fake: FakeGitHub,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # An honest branch: a new row, a tag on a row, k raised (not used: the base's k holds).
    # (Every row of the base is gated here, block_on_any_regression: its input is not the
    # branch's to change.)  Main's agent answers the new row too: the baseline is topped up.
    git(checkout.repo, "checkout", "-q", "main")
    write_script(checkout.repo, {**RIGHT, "r5": ["deny"]})
    checkout.base_sha = commit(checkout.repo, "main's agent answers r5")
    git(checkout.repo, "checkout", "-q", "-B", "feature")
    new_row = {"id": "r5", "input": {"amount": 7}, "expected": "deny"}
    edits: list[Edit] = [
        edit_rows(lambda rows: rows.append(new_row)),
        edit_rows(lambda rows: rows[3].update(tags=["smoke"])),
        edit_config(lambda c: c.update(k=3)),
    ]
    monkeypatch.chdir(checkout.repo)
    head = checkout.head({**RIGHT, "r5": ["deny"]}, apply=edits)
    action = checkout.run(fake, head, base_ref="main")
    assert action.code == 0, action.stdout
    reproduce = reproduce_command(fake.comment_bodies(7)[0])
    code, local, report, err = laptop(checkout, capsys, reproduce)
    assert code == 0, report
    assert local["gate"] == {"passed": True, "failures": [], "warnings": []}
    assert local["protected_changes"] == [] and protected_lines(err) == []
    assert gate_section(report) == gate_section(action.summary)


@pytest.mark.parametrize(
    ("trick", "verdict"),
    [("label changed", 0), ("scoring loosened", 0), ("gate setting loosened", 1)],
)
def test_the_allow_label_counts_on_the_laptop_as_on_the_pull_request(
    checkout: Checkout,  # noqa: F811
    fake: FakeGitHub,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    trick: str,
    verdict: int,
) -> None:
    edits, script, expected = TRICKS[trick]
    monkeypatch.chdir(checkout.repo)
    # Allowed, r1's new label (or the new scoring rule that reads its new answer) stands,
    # so its new answer is right; the other gate settings still come from the base, so
    # r3's regression still blocks.
    head = checkout.head(script, apply=edits)
    action = checkout.run(fake, head, labels=(ALLOW,), base_ref="main")
    assert action.code == verdict, action.stdout
    action_result = json.loads((checkout.repo / ".passk/result.json").read_text("utf-8"))
    reproduce = reproduce_command(fake.comment_bodies(7)[0])

    code, local, _, err = laptop(checkout, capsys, [*reproduce, "--label", ALLOW])
    assert code == verdict
    assert local["gate"] == action_result["gate"]
    assert failures(local) == expected[1:] * verdict
    assert [w for w in gate_warnings_of(local) if expected[0][2] in w]
    assert protected_lines(err) == protected_lines(action.stdout) != []
    assert all(line.endswith(f"allowed by the label {ALLOW!r}") for line in protected_lines(err))

    # Without the label the laptop blocks the change, as the pull request would.
    code, local, _, _ = laptop(checkout, capsys, reproduce)
    assert code == 1
    assert failures(local) == expected


def test_base_with_baseline_or_label_without_base_is_a_usage_error(
    checkout: Checkout,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(checkout.repo)
    both = ["compare", "--base", "main", "--baseline", ".passk/baseline.json"]
    assert cli_main(both) == 2
    assert "--baseline cannot be used with --base" in capsys.readouterr().err
    assert cli_main(["compare", "--label", ALLOW]) == 2
    assert "--label needs --base" in capsys.readouterr().err


# --- the working tree as the head ----------------------------------------------------


def test_an_uncommitted_baseline_edit_is_named_before_it_is_pushed(
    checkout: Checkout,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(checkout.repo)
    args = ["compare", "--base", "main", "--json", ".passk/result.json"]
    artifact = checkout.repo / ".passk" / "baseline.json"
    artifact.write_text(artifact.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    code, result, _, err = laptop(checkout, capsys, args)
    assert code == 1
    changed = "the committed baseline artifact (baseline.json) is changed by this pull request"
    assert failures(result) == [(None, "protected-change", changed)]
    assert protected_lines(err) == [f"passk: protected change: {changed}"]

    artifact.unlink()
    code, result, _, _ = laptop(checkout, capsys, args)
    assert code == 1
    assert failures(result) == [
        (None, "protected-change", changed.replace("is changed", "is deleted"))
    ]

    git(checkout.repo, "checkout", "--", ".passk/baseline.json")
    code, result, _, err = laptop(checkout, capsys, args)
    assert code == 0 and result["protected_changes"] == [] and err == ""


def test_line_endings_a_gitattributes_rewrites_are_no_edit_on_the_laptop_either(
    checkout: Checkout,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (checkout.repo / ".gitattributes").write_text("* text eol=crlf\n", encoding="utf-8")
    checkout.head()
    for name in ("passk.yml", "data.jsonl", ".passk/baseline.json"):
        (checkout.repo / name).unlink()
    git(checkout.repo, "checkout", "--", ".")
    assert b"\r\n" in (checkout.repo / ".passk/baseline.json").read_bytes()
    monkeypatch.chdir(checkout.repo)
    args = ["compare", "--base", "main", "--json", ".passk/result.json"]
    code, result, _, err = laptop(checkout, capsys, args)
    assert code == 0, err
    assert result["protected_changes"] == [] and "protected change" not in err


def test_the_working_tree_is_what_a_commit_of_those_paths_would_hold(tmp_path: Path) -> None:
    from passk_action.sides.gitrepo import GitRepo

    root = tmp_path / "repo"
    (root / "folder").mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "Dev")
    git(root, "config", "user.email", "dev@example.com")
    (root / ".gitignore").write_text("ignored*\n", encoding="utf-8")
    for name in ("kept", "edited", "deleted", "folder/inner"):
        (root / name).write_text(name, encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "files")
    (root / "edited").write_text("new", encoding="utf-8")
    (root / "deleted").unlink()
    (root / "ignored.json").write_text("not pushed", encoding="utf-8")
    (root / "untracked").write_text("pushed", encoding="utf-8")
    (root / "link").symlink_to("folder")
    repo = GitRepo(root.resolve())

    paths = ["kept", "edited", "deleted", "ignored.json", "untracked", "link/inner", "gone"]
    tree = repo.working_tree(paths)

    def blob(path: str) -> bytes | None:
        entry = repo.entry(tree, path)
        return None if entry is None else repo.run(("cat-file", "blob", entry.oid), what="read")

    assert blob("kept") == b"kept" and blob("edited") == b"new"
    assert blob("untracked") == b"pushed"
    # Gone from a commit: deleted, ignored, or reached through a symlinked folder.
    assert blob("deleted") is None and blob("ignored.json") is None
    assert blob("link/inner") is None and blob("gone") is None
    assert blob("folder/inner") == b"folder/inner"  # untouched paths keep HEAD's
    assert git(root, "status", "--porcelain") != ""  # the real index is left alone
    assert "edited" not in git(root, "diff", "--cached", "--name-only")


def test_a_base_that_moved_on_since_the_branch_left_it_is_named(
    checkout: Checkout,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The pull request's check runs on the merge commit, which holds what the
    # base gained since the branch left it; the laptop's HEAD does not.
    monkeypatch.chdir(checkout.repo)
    checkout.head(RIGHT)
    args = ["compare", "--config", "passk.yml", "--json", ".passk/result.json", "--base"]
    code, _, _, err = laptop(checkout, capsys, [*args, checkout.base_sha])
    assert code == 0 and "commit(s) this branch does not" not in err
    branch = git(checkout.repo, "rev-parse", "--abbrev-ref", "HEAD")
    git(checkout.repo, "checkout", "-q", "-b", "moved-on", checkout.base_sha)
    for n in range(2):
        git(checkout.repo, "commit", "-q", "--allow-empty", "-m", f"base change {n}")
    git(checkout.repo, "checkout", "-q", branch)
    code, _, _, err = laptop(checkout, capsys, [*args, "moved-on"])
    assert code == 0
    assert (
        "passk: warning: moved-on has 2 commit(s) this branch does not; the pull request's "
        "check runs on the merge of both, so its verdict can differ: merge or rebase onto "
        "moved-on to reproduce it exactly"
    ) in err.splitlines()
