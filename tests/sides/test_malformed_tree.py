"""Exports never follow links: a tree git itself never writes is refused (``sides/tree.py``).

In the container action root passk writes the candidate's copy of the pull
request's commit.  A hand-made tree (``git mktree`` accepts it, and a forge
may) lists ``a``, a symlink to any folder, and then ``a/x.pth``: written
path by path, root follows the link and writes a file of the pull request's
choosing outside the copy.  Each such tree is refused with one line naming
the path, beside its control, the same files in a tree git writes, which
exports as before; the writer alone, handed such a listing, never writes
through the link either.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from passk_action.errors import MalformedTree
from passk_action.sides.gitrepo import GitRepo
from passk_action.sides.tree import SYMLINK, TreeFile, check_paths, write_files
from support.agent_project import (  # noqa: F401
    AGENT,
    REPO,
    TOKEN,
    project,
    run_action,
    shared,
)
from support.fakegithub import FakeGitHub
from support.pull_request_repo import git

PTH = b"import os; open(os.path.join(os.path.dirname(__file__), 'ran'), 'w')\n"
"""What the pull request wants root to write: a .pth runs in every later Python."""


@pytest.fixture
def elsewhere() -> Iterator[Path]:
    """The folder the planted symlink points at, outside every export."""
    path = Path(tempfile.mkdtemp(prefix="passk-elsewhere-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def blob(repo: Path, data: bytes) -> str:
    proc = subprocess.run(
        ["git", "hash-object", "-w", "--stdin"], cwd=repo, input=data, capture_output=True,
        check=True,
    )  # fmt: skip
    return proc.stdout.decode().strip()


def mktree(repo: Path, entries: list[tuple[str, str, str]]) -> str:
    """A tree as ``git mktree`` writes it: whatever it is given, duplicates included."""
    kinds = {"040000": "tree", "160000": "commit"}
    text = "".join(
        f"{mode} {kinds.get(mode, 'blob')} {oid}\t{name}\n" for mode, oid, name in entries
    )
    proc = subprocess.run(
        ["git", "mktree", "--missing"], cwd=repo, input=text.encode(), capture_output=True,
        check=True,
    )  # fmt: skip
    return proc.stdout.decode().strip()


def commit_tree(repo: Path, entries: list[tuple[str, str, str]], parent: str | None = None) -> str:
    """A commit of the top-level ``entries`` added to ``parent``'s tree (or alone)."""
    if parent is not None:
        for line in git(repo, "ls-tree", parent).splitlines():
            meta, name = line.split("\t")
            mode, _, oid = meta.split()
            entries = [*entries, (mode, oid, name)]
    tree = mktree(repo, entries)
    args = ["commit-tree", tree, "-m", "crafted"] + (["-p", parent] if parent else [])
    return git(repo, *args)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.name", "Dev")
    git(path, "config", "user.email", "dev@example.com")
    return path


def through_link(repo: Path, elsewhere: Path) -> list[tuple[str, str, str]]:
    """``a`` a symlink to ``elsewhere``, and ``a/x.pth`` listed after it."""
    inner = mktree(repo, [("100644", blob(repo, PTH), "x.pth")])
    return [(SYMLINK, blob(repo, os.fsencode(elsewhere)), "a"), ("040000", inner, "a")]


def as_folder(repo: Path, elsewhere: Path) -> list[tuple[str, str, str]]:
    """The control: ``a/x.pth`` in a real folder, and a symlink ``b`` with nothing under it."""
    inner = mktree(repo, [("100644", blob(repo, PTH), "x.pth")])
    return [("040000", inner, "a"), (SYMLINK, blob(repo, os.fsencode(elsewhere)), "b")]


def test_a_tree_that_writes_through_its_own_symlink_is_refused_naming_the_path(
    repo: Path, elsewhere: Path
) -> None:
    sha = commit_tree(repo, through_link(repo, elsewhere))
    with pytest.raises(MalformedTree) as caught, GitRepo(repo).export(sha):
        pytest.fail("exported")
    assert caught.value.one_line() == (
        f"commit {sha[:12]}: the path 'a/x.pth' lies under 'a', a symlink: git never writes "
        "such a tree, so passk refuses to export it (`git fsck` names it; rewrite the commit "
        "with git itself (e.g. `git commit --amend`))"
    )
    assert list(elsewhere.iterdir()) == []


def test_control_the_same_files_in_a_tree_git_writes_export_as_they_are(
    repo: Path, elsewhere: Path
) -> None:
    sha = commit_tree(repo, as_folder(repo, elsewhere))
    with GitRepo(repo).export(sha) as tree:
        assert (tree / "a" / "x.pth").read_bytes() == PTH
        assert os.readlink(tree / "b") == str(elsewhere)
        parent = tree.parent
    assert list(elsewhere.iterdir()) == []
    assert not parent.exists()


ESCAPE = f"passk-escape-{os.getpid()}.pth"
"""Where ``../../`` from an export lands: the temporary folder itself."""


@pytest.mark.parametrize(
    ("entries", "says"),
    [
        ([("100644", "A", "f"), ("100644", "A", "f")], "the path 'f' is listed twice"),
        ([("100644", "A", "f"), ("100755", "B", "f")], "the path 'f' is listed twice"),
        ([("040000", "UP", "..")], f"the path '../../{ESCAPE}' has an empty, `.` or `..` part"),
        ([("040000", "T", ".")], "the path './x.pth' has an empty, `.` or `..` part"),
        ([("100644", "A", "a"), ("040000", "T", "a")], "the path 'a/x.pth' lies under 'a', a file"),
    ],
    ids=["twice", "twice-other-mode", "dot-dot", "dot", "under-a-file"],
)
def test_every_tree_git_never_writes_is_refused_and_nothing_lands_outside(
    repo: Path, entries: list[tuple[str, str, str]], says: str
) -> None:
    pth = blob(repo, PTH)
    oids = {
        "A": blob(repo, b"one\n"),
        "B": blob(repo, b"two\n"),
        "T": mktree(repo, [("100644", pth, "x.pth")]),
        "UP": mktree(repo, [("040000", mktree(repo, [("100644", pth, ESCAPE)]), "..")]),
    }
    sha = commit_tree(repo, [(mode, oids[oid], name) for mode, oid, name in entries])
    refused = f"^commit {sha[:12]}: {re.escape(says)}: git never"
    with pytest.raises(MalformedTree, match=refused), GitRepo(repo).export(sha):
        pytest.fail("exported")
    assert not (Path(tempfile.gettempdir()) / ESCAPE).exists()


def test_the_writer_alone_never_follows_a_link_it_wrote(tmp_path: Path, elsewhere: Path) -> None:
    """Should a listing slip past the check, the openat-style writer still refuses it."""
    root = tmp_path / "tree"
    root.mkdir()
    files = [
        TreeFile("a", SYMLINK, os.fsencode(elsewhere)),
        TreeFile("a/x.pth", "100644", PTH),
    ]
    through = re.escape("'a/x.pth' lies under 'a', which is not a folder")
    with pytest.raises(MalformedTree, match=through):
        write_files(root, files, "f" * 40)
    twice = [TreeFile("f", "100644", b"1"), TreeFile("f", "100644", b"2")]
    with pytest.raises(MalformedTree, match="'f' is listed twice"):
        write_files(root, twice, "f" * 40)
    assert list(elsewhere.iterdir()) == []
    assert (root / "f").read_bytes() == b"1"
    # Out of git's order (`git hash-object --literally` writes any): the folder first.
    with pytest.raises(MalformedTree, match="'a' is both a folder and a symlink"):
        check_paths([("100644", "a/x.pth"), (SYMLINK, "a")], "f" * 40)


def test_control_the_writer_writes_folders_files_modes_and_links(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    root.mkdir()
    files = [
        TreeFile("a/b/c.txt", "100644", b"c"),
        TreeFile("a/b/run.sh", "100755", b"#!/bin/sh\n"),
        TreeFile("a/link", SYMLINK, b"b/c.txt"),
        TreeFile("top", "100644", b"t"),
    ]
    check_paths([(f.mode, f.path) for f in files], "f" * 40)
    write_files(root, files, "f" * 40)
    assert (root / "a" / "link").read_bytes() == b"c"
    assert os.readlink(root / "a" / "link") == "b/c.txt"
    assert (root / "a" / "b" / "run.sh").stat().st_mode & 0o777 == 0o755
    assert (root / "top").stat().st_mode & 0o777 == 0o644


# -- the whole action, as root with an agent user --------------------------------------------

root_with_an_agent_user = pytest.mark.skipif(
    not sys.platform.startswith("linux") or os.geteuid() != 0,
    reason="root writes the candidate's export only in the container action (passk as root)",
)


def crafted_head(
    shared: Path,  # noqa: F811
    elsewhere: Path,
    *,
    attack: bool,
) -> tuple[Path, str, str]:
    """The pull request of ``project`` (it breaks r0), plus ``a`` as a link or a folder."""
    repo, base, head = project(shared, {"PASSK_AGENT_USER": "nobody"})
    added = through_link(repo, elsewhere) if attack else as_folder(repo, elsewhere)
    crafted = commit_tree(repo, added, parent=head)
    git(repo, "update-ref", "refs/heads/feature", crafted)
    return repo, base, crafted


@pytest.mark.shares("agent-users")
@root_with_an_agent_user
def test_a_pull_request_whose_tree_plants_a_link_is_refused_before_any_agent_runs(
    shared: Path,  # noqa: F811
    elsewhere: Path,
) -> None:
    repo, base, head = crafted_head(shared, elsewhere, attack=True)
    with FakeGitHub(token=TOKEN, repository=REPO) as fake:
        got = run_action(repo, shared, fake, base, head, {"PASSK_AGENT_USER": "nobody"})
    assert list(elsewhere.iterdir()) == []  # nothing written through the link, as root
    assert got["code"] == 2, got["log"]
    assert f"commit {head[:12]}: the path 'a/x.pth' lies under 'a', a symlink" in got["log"]
    assert "Traceback" not in got["log"]
    assert "runs in the checkout" not in got["log"]  # refused, never run from elsewhere
    assert [row for row, _, version in got["asked"] if version == "candidate"] == []


@pytest.mark.shares("agent-users")
@root_with_an_agent_user
def test_control_the_same_pull_request_with_a_folder_gates_as_usual(
    shared: Path,  # noqa: F811
    elsewhere: Path,
) -> None:
    repo, base, head = crafted_head(shared, elsewhere, attack=False)
    with FakeGitHub(token=TOKEN, repository=REPO) as fake:
        got = run_action(repo, shared, fake, base, head, {"PASSK_AGENT_USER": "nobody"})
    assert list(elsewhere.iterdir()) == []
    assert got["code"] == 1, got["log"]  # r0 broken: the gate decides
    assert got["outputs"]["lost"] == "1"
