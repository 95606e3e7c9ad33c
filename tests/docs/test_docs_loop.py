"""docs/production-failures.md runs as written: from a production failure to a locked row.

The reader's repository is the README's five steps (``test_docs_readme``).
Then every fenced block of the page, in order: ``title="FILE"`` blocks are
files the reader writes, ``sh`` blocks commands (``passk`` through the CLI's
``main``, ``git`` as itself), and a ``text`` block right after an ``sh``
block is what its last command prints (commit ids and dates aside).  Then
the ratchet the page promises is used: the row the loop added fails a
change that breaks it.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from passk_action.cli import main
from support.paths import REPO
from support.readme_steps import git, the_five_steps_followed

PAGE = REPO / "docs" / "production-failures.md"
COMMIT = re.compile(r"\b[0-9a-f]{7}\b")
DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")


def blocks() -> list[tuple[str, str, str]]:
    """(language, info, body) of every fenced block of the page, in order."""
    tokens = MarkdownIt("commonmark").parse(PAGE.read_text(encoding="utf-8"))
    return [
        (t.info.split()[0], t.info.partition(" ")[2].strip(), t.content)
        for t in tokens
        if t.type == "fence"
    ]


def masked(text: str, ids: dict[str, str]) -> str:
    """Commit ids named by order of appearance (the same id, the same name), dates as one."""

    def name(match: re.Match[str]) -> str:
        return ids.setdefault(match[0], f"<commit {len(ids) + 1}>")

    return DATE.sub("<date>", COMMIT.sub(name, text))


def test_the_loop_from_a_production_failure_to_a_locked_row(
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo = tmp_path / "repo"
    the_five_steps_followed(repo, tmp_path_factory, monkeypatch, capsys)
    capsys.readouterr()

    ran: list[str] = []
    compared = 0
    last_output: str | None = None
    for language, info, body in blocks():
        titled = re.fullmatch(r'title="([^"]+)"', info)
        if titled:
            (repo / titled[1]).write_text(body, encoding="utf-8")
            last_output = None
            continue
        if language == "text":
            assert last_output is not None, "an output block follows no command"
            assert masked(last_output, {}) == masked(body, {})
            compared += 1
            last_output = None
            continue
        assert language == "sh", f"an untitled {language} block"
        for line in body.splitlines():
            argv = shlex.split(line)
            if argv[0] == "passk":
                code = main([*argv[1:], "--quiet"] if argv[1] == "compare" else argv[1:])
                captured = capsys.readouterr()
                assert code == 0, f"{line}: exit {code}\n{captured.err}"
                last_output = captured.out
            else:
                assert argv[0] == "git", line
                git(repo, *argv[1:])
                last_output = None
            ran.append(" ".join(argv[:2]))
    assert ran == [
        "git switch",
        "passk add",
        "passk compare",
        "git add",
        "git commit",
        "git switch",
        "git merge",
        "passk baseline",
        "git add",
        "git commit",
        "passk history",
    ]
    assert compared == 2  # what `passk add` and `passk history` print
    # Step 3's gate: the top-up measured main's agent on r-4 (it approved), the fix gained it.
    result = json.loads((repo / "result.json").read_text(encoding="utf-8"))
    rows = {r["id"]: r for r in result["rows"]}
    assert (rows["r-4"]["baseline_class"], rows["r-4"]["candidate_class"]) == (
        "stable-wrong",
        "stable-correct",
    )
    assert result["gate"]["passed"] is True and result["protected_changes"] == []
    # Step 4 locked it.
    baseline = json.loads((repo / ".passk/baseline.json").read_text(encoding="utf-8"))
    assert "r-4" in baseline["ratchet"]

    # The ratchet at work: a change that approves future-dated refunds again fails.
    agent = repo / "agent.py"
    agent.write_text(agent.read_text().replace("0 <= refund", "refund"), encoding="utf-8")
    argv = ["compare", "--config", "passk.yml", "--base", "main", "--quiet", "--json", "r.json"]
    assert main(argv) == 1
    failures = json.loads((repo / "r.json").read_text(encoding="utf-8"))["gate"]["failures"]
    assert {(f["id"], f["rule"]) for f in failures} >= {("r-4", "must-not-break")}
    # The report says the loss is new: main's baselines had r-4 right since it joined.
    out, err = capsys.readouterr()
    assert "history" not in err  # nothing limited it: the report says the rest
    mark = "stable-correct in the one baseline on main since it joined (new trouble)"
    assert f"- history: {mark}" in out.splitlines()  # under "Why it failed"


def test_masking_keeps_which_commit_is_which() -> None:
    ids: dict[str, str] = {}
    assert masked("abc1234 then 5d1e0a7 then abc1234 on 2026-12-01", ids) == (
        "<commit 1> then <commit 2> then <commit 1> on <date>"
    )
