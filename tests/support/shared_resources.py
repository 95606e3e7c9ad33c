"""What tests cannot share at once, and how a test says it uses one: ``@pytest.mark.shares``.

The suite runs on pytest-xdist's workers (pyproject's ``addopts``), so two tests may
run at the same moment in two processes. Most tests own all they touch (``tmp_path``,
a port the kernel picks, their own processes), and a few reach something of the
machine's that two tests cannot use at once. Such a test is marked
``@pytest.mark.shares("<resource>")``, on itself, its class or its module
(``pytestmark``); :func:`group_shared` (tests/conftest.py's collection hook) turns the
mark into pytest-xdist's ``xdist_group``, and ``--dist loadgroup`` runs a group's tests
one after another on one worker. ``tests/project/test_parallel_safety.py`` fails when a
test reaches a resource below (its source shows one of the resource's ``signature``)
without the mark.

Checked and safe in parallel, so not here: HTTP servers (port 0: the kernel picks a
free one), Chromium (a profile of its own in ``tmp_path``), environment variables (each
worker is a process of its own), the golden files (each is one test's, and written
atomically: ``support.golden``), ruff's and mypy's caches (one test each), the
editable install and the repository's files (read only: the packaging test builds
from a copy).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest


@dataclass(frozen=True)
class Resource:
    name: str
    why: str
    """Why two tests cannot use it at once."""
    signature: re.Pattern[str]
    """What a test's source shows when it reaches the resource."""


RESOURCES = {
    r.name: r
    for r in (
        Resource(
            "agent-users",
            "agents started as the machine's other users (nobody, passk-baseline): the "
            "attack tests' candidates, as those users, plant files in every agent home "
            "and export they find in the shared temporary folder and signal those users' "
            "processes, so another test's agents of the same users would be hit",
            re.compile(
                r"PASSK_AGENT_USER|PASSK_BASELINE_USER|AGENT_USER_ENV|BASELINE_USER_ENV"
                r"|\bspawn_as_agent\b|\bagent_user\(|\bagent_user_env\b|\bagent_user_python\b"
                r"|[\"']nobody[\"']"
            ),
        ),
        Resource(
            "docker",
            "the Docker engine and the action's image tag: each worker would build the "
            "image again, under the same tag, and runs its containers on the host's network",
            re.compile(r"[\[(]\s*[\"']docker[\"']\s*,|\bDOCKER_HOST\b"),
        ),
    )
}
"""Every resource a test may name in ``@pytest.mark.shares``."""


def group_of(item: pytest.Item) -> str | None:
    """The xdist group for a test's ``shares`` marks; a name not in RESOURCES is an error."""
    names = set()
    for mark in item.iter_markers("shares"):
        if len(mark.args) != 1 or mark.kwargs or mark.args[0] not in RESOURCES:
            raise pytest.UsageError(
                f"{item.nodeid}: @pytest.mark.shares{mark.args!r} names no resource; "
                f"write one of {', '.join(sorted(RESOURCES))} (tests/support/shared_resources.py)"
            )
        names.add(mark.args[0])
    if len(names) > 1:
        # A test is in one xdist group: with two, it would run beside either's tests.
        raise pytest.UsageError(
            f"{item.nodeid}: shares {' and '.join(sorted(names))}; a test may share one "
            "resource: make the two one resource in tests/support/shared_resources.py"
        )
    return names.pop() if names else None


def group_shared(items: list[pytest.Item]) -> None:
    """Map ``shares`` to ``xdist_group`` (before pytest-xdist reads the groups: the hook
    that calls this runs first)."""
    for item in items:
        group = group_of(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
