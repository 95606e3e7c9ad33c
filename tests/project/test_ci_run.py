""".ci/run: the fresh-venv run beside the suite, its output after the suite's, either failure fails.

The real script runs in a copy of the repository's ``.ci`` folder, with stand-ins for
what it starts (``python3`` for the install and the suite, ``.ci/fresh-venv``) that
record when they ran and exit as told; no suite runs here.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from support.paths import REPO

# `python3 -m pip ...` and `python3 -m pytest -q`: each says when it starts and ends.
PYTHON3 = """#!/usr/bin/env bash
log=$STANDIN_LOG
case "$2" in
  pip) echo "pip start" >>"$log"; sleep 0.5; echo "pip end" >>"$log" ;;
  pytest)
    echo "suite start" >>"$log"
    echo "suite line 1"; sleep 0.5; echo "suite line 2"
    echo "suite end" >>"$log"
    exit "$SUITE_STATUS" ;;
esac
"""
FRESH_VENV = """#!/usr/bin/env bash
echo "fresh start" >>"$STANDIN_LOG"
echo "fresh line 1"; sleep 1; echo "fresh line 2"
echo "fresh end" >>"$STANDIN_LOG"
exit "$FRESH_STATUS"
"""


def run_ci(tmp_path: Path, suite: int, fresh: int, **extra_env: str) -> tuple[int, str, list[str]]:
    repo = tmp_path / "repo"
    (repo / ".ci").mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / ".ci" / "run", repo / ".ci" / "run")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for path, text in (
        (repo / ".ci" / "fresh-venv", FRESH_VENV),
        (bin_dir / "python3", PYTHON3),
        (bin_dir / "chromium", "#!/bin/sh\n"),  # found: nothing to install
    ):
        path.write_text(text, encoding="utf-8")
        path.chmod(0o755)
    log = tmp_path / "order.log"
    log.unlink(missing_ok=True)
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "STANDIN_LOG": str(log),
        "SUITE_STATUS": str(suite),
        "FRESH_STATUS": str(fresh),
        "HOME": str(tmp_path),
        **extra_env,
    }
    done = subprocess.run(
        ["bash", str(repo / ".ci" / "run")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    order = log.read_text().splitlines() if log.exists() else []
    return done.returncode, done.stdout + done.stderr, order


def test_the_fresh_venv_runs_beside_the_install_and_the_suite(tmp_path: Path) -> None:
    code, output, order = run_ci(tmp_path, suite=0, fresh=0)
    assert code == 0, output
    # Started with the install, still running when the install ended and the suite began.
    assert order.index("fresh start") < order.index("pip end"), order
    assert order.index("suite start") < order.index("fresh end"), order
    assert order.index("pip end") < order.index("suite start"), order
    # Its lines come whole, after the suite's, under a line that says what they are.
    lines = output.splitlines()
    assert lines == [
        "suite line 1",
        "suite line 2",
        "",
        "==== .ci/fresh-venv, run beside the suite: exit status 0 ====",
        "fresh line 1",
        "fresh line 2",
    ]


@pytest.mark.parametrize(
    ("suite", "fresh", "expected"),
    [(0, 1, 1), (1, 0, 1), (2, 0, 2), (1, 1, 1)],
    ids=["fresh-venv-fails", "suite-fails", "suite-input-error", "both-fail"],
)
def test_either_part_failing_fails_the_run(
    tmp_path: Path, suite: int, fresh: int, expected: int
) -> None:
    code, output, _ = run_ci(tmp_path, suite=suite, fresh=fresh)
    assert code == expected, output
    assert f"==== .ci/fresh-venv, run beside the suite: exit status {fresh} ====" in output


@pytest.mark.parametrize("suite", [0, 1])
def test_without_the_fresh_venv_run_the_suite_decides_alone(tmp_path: Path, suite: int) -> None:
    code, output, order = run_ci(tmp_path, suite=suite, fresh=1, PASSK_CI_FRESH_VENV="0")
    assert code == suite, output
    assert "fresh start" not in order and "fresh-venv" not in output
    assert output.splitlines() == ["suite line 1", "suite line 2"]
