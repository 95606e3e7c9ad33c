"""A git repository whose commits are versions of a baseline artifact, written by hand."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

from passk_action.core.model import RowRecord, Version
from passk_action.store.artifact import dump_run
from support.runs import attempts, record, run_of

ARTIFACT = ".passk/baseline.json"
RIGHT = ["deny"] * 3
FLIP = ["deny", "approve", "deny"]
WRONG = ["approve"] * 3


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def baseline(rows: dict[str, Sequence[str]], *, locked: Sequence[str] = (), mnb: str = "") -> str:
    """A baseline artifact's text: each row's k = 3 decisions (expected: deny)."""
    records: list[RowRecord] = []
    made = []
    for row_id, decisions in rows.items():
        made += attempts(row_id, decisions)
        records.append(record(row_id, "deny", row_id in mnb))
    return dump_run(run_of(records, made, version=Version.BASELINE, ratchet=locked))


class Repo:
    def __init__(self, root: Path):
        self.root = root
        root.mkdir()
        git(root, "init", "-q", "-b", "main")
        git(root, "config", "user.name", "Dev")
        git(root, "config", "user.email", "dev@example.com")
        self.commits: list[str] = []

    def commit(self, text: str | None, message: str, path: str = ARTIFACT) -> str:
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if text is None:
            target.unlink()
        else:
            target.write_text(text, encoding="utf-8")
        git(self.root, "add", "-A")
        git(self.root, "commit", "-q", "-m", message)
        sha = git(self.root, "rev-parse", "HEAD")
        self.commits.append(sha)
        return sha
