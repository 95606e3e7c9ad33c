"""The whole suite's pytest setup: tests/support's asserts report like a test's; workers."""

from __future__ import annotations

import compileall
import os
import sys
from pathlib import Path

import pytest

# Bytecode for this checkout's modules, even where the machine sets
# PYTHONDONTWRITEBYTECODE (this one and its CI do): otherwise every pytest worker
# compiles the whole suite as it collects (10 CPU s, not 4) and each of the suite's
# thousands of agent and passk processes compiles the passk modules it imports anew.
# The processes the tests start keep the variable: they read this bytecode and write
# none into the folders the tests lay out. bench/suite_speed.md has the figures.
sys.dont_write_bytecode = False
SOURCE = Path(__file__).resolve().parents[1] / "src"
if "PYTEST_XDIST_WORKER" not in os.environ and SOURCE.is_dir():  # once, before the workers
    compileall.compile_dir(SOURCE, quiet=1)

# The shared helpers in tests/support assert what they build (a recorded baseline, a
# loaded YAML file); rewritten, a failing assert there shows its values, as it did
# when the helpers lived in test modules.
pytest.register_assert_rewrite("support")

from support.any_python import check_marked_in_their_files  # noqa: E402
from support.shared_resources import group_shared  # noqa: E402


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """``shares`` into pytest-xdist's groups."""
    group_shared(items)


def pytest_collection_finish(session: pytest.Session) -> None:
    """``any_python`` where .ci/fresh-venv finds it, whatever hook put it on."""
    check_marked_in_their_files(session.items)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """How many workers `-n auto` (pyproject's addopts) starts: half as many again as cores.

    A third of a worker's time is spent waiting (an agent's timeout, a retry-after, a
    browser or a container starting, another process's start-up): with one worker a
    core, a core sat idle that long. On 2 cores, 3 workers ran the suite in 5 min 24 s
    where 2 took 6 min 39 s to 6 min 59 s, and 4 took 6 min 16 s
    (bench/suite_speed.md, "Three workers on two cores, and the scripted agent's
    start-up").
    PYTEST_XDIST_AUTO_NUM_WORKERS still decides when set. A run that rewrites golden
    files (PASSK_UPDATE_GOLDEN=1) runs in this one process: a test that reads a golden
    file another test rewrites must run after it, as it does in file order.
    """
    if os.environ.get("PASSK_UPDATE_GOLDEN") == "1":
        return 0
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # pytest-xdist's own hook reads it
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (cores or 1) * 3 // 2 or 1
