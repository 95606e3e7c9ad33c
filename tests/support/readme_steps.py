"""The README's five steps, followed in a fresh repository as a newcomer would."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from passk_action.cli import main
from support.once import once

README = Path(__file__).resolve().parents[2] / "README.md"
WORKFLOW = ".github/workflows/passk.yml"


def five_steps() -> list[tuple[str, str, str]]:
    """(language, info, body) of every fenced block in the five steps' section."""
    text = README.read_text(encoding="utf-8")
    start = text.index("## Gate your repository in five steps")
    end = text.index("\n## ", start + 1)
    fences = MarkdownIt("commonmark").parse(text[start:end])
    return [
        (t.info.split()[0], t.info.partition(" ")[2].strip(), t.content)
        for t in fences
        if t.type == "fence"
    ]


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True)
    return done.stdout


def follow_the_five_steps(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A reader's repository made at ``repo`` and set up as the README says, run from there."""
    # The reader's repository: it exists already, with a default branch.
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.name", "Dev")
    git(repo, "config", "user.email", "dev@example.com")
    (repo / ".gitignore").write_text(".passk/*\n!.passk/baseline.json\n", encoding="utf-8")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-q", "-m", "start")
    monkeypatch.chdir(repo)

    written: list[str] = []
    ran: list[str] = []
    for language, info, body in five_steps():
        titled = re.fullmatch(r'title="([^"]+)"', info)
        if titled:
            path = repo / titled[1]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body, encoding="utf-8")
            written.append(titled[1])
            continue
        assert language == "sh", f"an untitled {language} block in the five steps"
        for line in body.splitlines():
            argv = shlex.split(line)
            if argv[0] == "passk":
                code = main(argv[1:])
                assert code == 0, f"{line}: exit {code}\n{capsys.readouterr().err}"
            else:
                assert argv[0] == "git", line
                git(repo, *argv[1:])
            ran.append(argv[0] + " " + argv[1])
    assert written == ["agent.py", "data.jsonl", "passk.yml", WORKFLOW]
    assert ran == [
        "git add", "git commit", "passk baseline", "git add", "git commit",  # steps 1-4
        "git switch", "passk compare",  # a branch, and the verdict before pushing
    ]  # fmt: skip
    assert git(repo, "branch", "--show-current") == "my-change\n"


def the_five_steps_followed(
    repo: Path,
    factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """:func:`follow_the_five_steps` once per test run (``support.once``), copied to ``repo``.

    The README's page and production-failures.md's both start from the five steps'
    repository: its baseline and compare run once, not once a page. Run from ``repo``.
    """
    made, _ = once(
        factory,
        "readme-five-steps",
        lambda folder: follow_the_five_steps(folder / "repo", monkeypatch, capsys),
    )
    shutil.copytree(made / "repo", repo, symlinks=True)
    monkeypatch.chdir(repo)
