"""A full disk is an error (exit 2, one line), never exit 0 with truncated output.

Stdout is tested against ``/dev/full``; the journal and the artifact through
a fake writer that takes a byte budget, writes part of what it was given and
then raises ``OSError(ENOSPC)``, as a file system that fills up mid-write does.
"""

from __future__ import annotations

import errno
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from passk_action.cli import main
from passk_action.store import artifact, atomic
from passk_action.store.artifact import journal_path, read_run

K = 3
ROWS = 6
FULL = Path("/dev/full")


class FillingFile(io.TextIOBase):
    """A text file on a disk with ``budget`` bytes left (shared by every file)."""

    def __init__(self, real: Any, budget: list[int]) -> None:
        self._real = real
        self._budget = budget

    def write(self, text: str) -> int:
        data = text.encode("utf-8")
        room = self._budget[0]
        if len(data) > room:
            self._real.write(data[:room].decode("utf-8", "ignore"))
            self._real.flush()
            self._budget[0] = 0
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self._budget[0] -= len(data)
        return int(self._real.write(text))

    def flush(self) -> None:
        self._real.flush()

    def fileno(self) -> int:
        return int(self._real.fileno())

    def close(self) -> None:
        self._real.close()


def project(tmp_path: Path) -> list[str]:
    rows = [json.dumps({"id": f"r{i}", "input": {"n": i}, "expected": "deny"}) for i in range(ROWS)]
    (tmp_path / "data.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (tmp_path / "script.json").write_text(json.dumps({"default": "deny"}), encoding="utf-8")
    config = {
        "dataset": "data.jsonl",
        "k": K,
        "concurrency": 1,
        # One worker, not one process per attempt: the disk is what fills, not the agent.
        "agent": {
            "command": [sys.executable, "-m", "passk_action.testing.scripted_agent", "script.json"],
            "protocol": "worker",
        },
        "retry": {"attempts": 0, "backoff_s": 0},
    }
    (tmp_path / "passk.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return ["run", "--config", str(tmp_path / "passk.yml"), "--out", str(tmp_path / "run.json"),
            "--quiet"]  # fmt: skip


def fill_disk_after(monkeypatch: pytest.MonkeyPatch, budget: int, *, appends: bool = True) -> None:
    """Journal appends and atomic writes share ``budget`` bytes, then hit ENOSPC.

    With ``appends=False`` only the atomic writes (the journal's header, the
    finished artifact) run out of space.
    """
    left = [budget]
    real_open = Path.open
    real_fdopen = os.fdopen

    def open_(self: Path, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        handle = real_open(self, mode, *args, **kwargs)
        writes = appends and ("w" in mode or "a" in mode)
        return FillingFile(handle, left) if writes else handle

    def fdopen(fd: int, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        handle = real_fdopen(fd, mode, *args, **kwargs)
        return FillingFile(handle, left) if "w" in mode else handle

    monkeypatch.setattr(artifact.Path, "open", open_)
    monkeypatch.setattr(atomic.os, "fdopen", fdopen)


@pytest.mark.skipif(not FULL.exists(), reason="needs /dev/full")
@pytest.mark.parametrize("fmt", ["md", "json"])
def test_report_to_a_full_disk_exits_2_with_one_line(tmp_path: Path, fmt: str) -> None:
    argv = project(tmp_path)
    assert main(argv) == 0
    with FULL.open("w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "passk_action", "report", str(tmp_path / "run.json"),
             "--format", fmt],
            stdout=full, stderr=subprocess.PIPE, text=True, timeout=60,
        )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr == (
        "passk: error: stdout: cannot write the output: No space left on device"
        " (free some space, or write to a file with --out)\n"
    )


@pytest.mark.parametrize(
    ("budget", "appends"),
    [(0, True), (300, True), (700, True), (1500, True), (2500, True), (1000, False)],
    ids=["header", "header-torn", "first-appends", "mid-run", "late", "artifact"],
)
def test_a_full_disk_mid_run_exits_2_and_the_run_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    budget: int, appends: bool,
) -> None:  # fmt: skip
    argv = project(tmp_path)
    out = tmp_path / "run.json"
    with monkeypatch.context() as patch:
        fill_disk_after(patch, budget, appends=appends)
        assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1, err
    assert "No space left on device" in err and "internal error" not in err
    assert not out.exists()
    code = main([*argv, "--resume"]) if journal_path(out).exists() else main(argv)
    assert code == 0, capsys.readouterr().err
    run = read_run(out)
    assert sorted((a.row_id, a.number) for a in run.attempts) == sorted(
        (f"r{i}", n) for i in range(ROWS) for n in range(1, K + 1)
    )
