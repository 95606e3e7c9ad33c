"""The whole suite's pytest setup: tests/support's asserts report like a test's; workers."""

from __future__ import annotations

import os

import pytest

# The shared helpers in tests/support assert what they build (a recorded baseline, a
# loaded YAML file); rewritten, a failing assert there shows its values, as it did
# when the helpers lived in test modules.
pytest.register_assert_rewrite("support")

# `@pytest.mark.shares(resource)` into pytest-xdist's groups (tests/support/shared_resources.py).
from support.shared_resources import pytest_collection_modifyitems  # noqa: E402, F401


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """How many workers `-n auto` (pyproject's addopts) starts.

    None: pytest-xdist's own count, one per core (PYTEST_XDIST_AUTO_NUM_WORKERS
    overrides it). A run that rewrites golden files (PASSK_UPDATE_GOLDEN=1) runs in
    this one process: a test that reads a golden file another test rewrites must
    run after it, as it does in file order.
    """
    if os.environ.get("PASSK_UPDATE_GOLDEN") == "1":
        return 0
    return None
