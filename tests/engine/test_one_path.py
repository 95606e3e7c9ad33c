"""A comparison from ``passk compare --base main`` and from the action take one path.

Both shells hand the same preparation (``passk_action.sides``) and the same
engine (``passk_action.engine``) what they read; this records every function
of those two parts that runs, with ``sys.setprofile``, for one branch gated
both ways (a changed row topped up, a lost row confirmed on both versions), and
compares the two sets.  What only one shell does is named below, with why.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from passk_action.program import main as passk
from support.fakegithub import FakeGitHub
from support.paths import REPO
from support.pull_request_repo import (
    RIGHT,
    Checkout,
    checkout,  # noqa: F401 - the shared fixtures
    edit_rows,
    fake,  # noqa: F401
    template,  # noqa: F401
)

SRC = REPO / "src" / "passk_action"
WATCHED = (SRC / "sides", SRC / "engine")

ONLY_THE_ACTION = {
    # Agents may run as their own user there: the job's token is hidden from them and
    # the candidate gets its own export of HEAD (a no-op without an agent user).
    "sides.credentials.credentials_hidden",
    "sides.prepare._say_users",  # which user each side runs as
    "sides.prepare._say_shared_places",  # the step's places both agent users could write
    "sides.exports.head_export",
    "sides.exports.HeadExport.announce",
    # The head is the checked-out commit; the record of this content is keyed by its tree.
    "sides.trusted.checked_out_commit",
    "sides.gitrepo.GitRepo.tree_sha",
}
ONLY_THE_LAPTOP = {
    # The head is the working tree, and the base a ref to resolve (and to say when it
    # has moved on); a token on disk is only warned about.
    "sides.trusted.working_tree_copies",
    "sides.gitrepo.GitRepo.working_tree",
    "sides.gitrepo.GitRepo._ignored_untracked",
    "sides.gitrepo.GitRepo._beyond_link",
    "sides.gitrepo.GitRepo.resolve",
    "sides.gitrepo.GitRepo.commits_between",
    "sides.credentials.warn_persisted_token",
    # The candidate's run records the working tree's commit and whether it is dirty (the
    # action's is the pull request's head commit, from the event).
    "sides.provenance.working_tree_provenance",
    "sides.gitrepo.GitRepo.head_sha",
    "sides.gitrepo.GitRepo.is_dirty",
}


@contextmanager
def calls() -> Iterator[set[str]]:
    """The functions of sides/ and engine/ that run in this thread, by qualified name."""
    seen: set[str] = set()
    files: dict[str, str | None] = {}

    def name_of(filename: str) -> str | None:
        if filename not in files:
            path = Path(filename)
            inside = any(path.is_relative_to(folder) for folder in WATCHED)
            files[filename] = (
                ".".join(path.relative_to(SRC).with_suffix("").parts) if inside else None
            )
        return files[filename]

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            module = name_of(frame.f_code.co_filename)
            name = frame.f_code.co_qualname
            if module is not None and "<" not in name:  # not a comprehension or lambda
                seen.add(f"{module}.{name}")

    previous: Callable[..., Any] | None = sys.getprofile()
    sys.setprofile(profile)
    try:
        yield seen
    finally:
        sys.setprofile(previous)


def test_the_laptop_and_the_action_run_the_same_preparation_and_engine(
    checkout: Checkout,  # noqa: F811
    fake: FakeGitHub,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # r4's input changes (the baseline is topped up on it), r3 breaks (it is confirmed on both).
    head = checkout.head(
        {**RIGHT, "r3": ["deny"]}, apply=[edit_rows(lambda rows: rows[3].update(input={"n": 6}))]
    )
    monkeypatch.chdir(checkout.repo)
    with calls() as laptop:
        code = passk(["compare", "--config", "passk.yml", "--base", "main", "--quiet"])
    assert code == 1, capsys.readouterr().err
    with calls() as action:
        outcome = checkout.run(fake, head, base_ref="main")
    assert outcome.code == 1, outcome.stdout

    engine = {name for name in laptop | action if name.startswith("engine.")}
    assert {n for n in laptop if n.startswith("engine.")} == engine
    assert {n for n in action if n.startswith("engine.")} == engine
    for phase in (
        "baseline.top_up",
        "confirm.again",
        "candidate.candidate_side",
        "asking.Asker.ask",
    ):
        assert f"engine.{phase}" in engine
    assert "sides.prepare.prepare" in laptop & action
    assert "sides.prepare.LazyAgents.get" in laptop & action
    assert action - laptop == ONLY_THE_ACTION
    assert laptop - action == ONLY_THE_LAPTOP
