"""The rule that keeps a place the environment names from both agent users (``agents/places.py``).

A place is shared when another agent user could change what is there: write
it, create it, or replace a folder or a link on the way.  Checked here on
real folders, with a uid no file here belongs to as "the other user"; the
whole story, two real users and a gate, is in ``tests/sides/test_side_identities.py``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from passk_action.agents.places import OWN_SUBFOLDER, own_env, shared

OTHER = (54321, 54321)
"""An agent user that owns nothing here and is in none of its groups."""


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A folder only this user may write, on a way only it (and root) may change."""
    tmp_path.chmod(0o755)
    return tmp_path


def test_a_folder_everyone_may_write_is_shared_and_so_is_all_in_it(root: Path) -> None:
    open_to_all = root / "cache"
    open_to_all.mkdir()
    open_to_all.chmod(0o777)
    (open_to_all / "kept").mkdir(mode=0o755)
    assert shared(str(open_to_all), [OTHER])
    assert shared(str(open_to_all / "kept"), [OTHER])  # they may rename it and put theirs there
    assert shared(str(open_to_all / "not-yet"), [OTHER])  # they may make it first


def test_in_a_sticky_folder_only_their_own_names_are_theirs(root: Path) -> None:
    tmp = root / "tmp"
    tmp.mkdir()
    tmp.chmod(0o1777)
    (tmp / "mine").mkdir(mode=0o755)
    (tmp / "file").write_bytes(b"x")
    (tmp / "file").chmod(0o644)
    assert not shared(str(tmp / "mine"), [OTHER])
    assert not shared(str(tmp / "file"), [OTHER])
    assert shared(str(tmp / "not-yet"), [OTHER])
    assert shared(str(tmp), [OTHER])


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user takes root")
def test_what_they_own_is_theirs_to_change_even_read_only(root: Path) -> None:
    theirs = root / "theirs"
    theirs.mkdir(mode=0o555)
    os.chown(theirs, *OTHER)
    assert shared(str(theirs), [OTHER])
    assert shared(str(theirs / "below"), [OTHER])
    group = root / "group"
    group.mkdir()
    os.chown(group, 0, OTHER[1])
    group.chmod(0o775)
    assert shared(str(group), [OTHER])


def test_links_are_followed_as_the_kernel_follows_them(root: Path) -> None:
    open_to_all = root / "open"
    open_to_all.mkdir()
    open_to_all.chmod(0o777)
    closed = root / "closed"
    closed.mkdir(mode=0o755)
    (root / "to-open").symlink_to("open")
    (root / "to-closed").symlink_to(closed)
    (root / "loop").symlink_to("loop")
    assert shared(str(root / "to-open" / "x"), [OTHER])
    assert not shared(str(root / "to-closed" / "x"), [OTHER])
    assert shared(str(root / "loop"), [OTHER])  # cannot be looked at: shared
    assert not shared(str(open_to_all / ".." / "closed"), [OTHER])
    assert shared(str(closed / ".." / "open" / "."), [OTHER])


def test_a_device_is_no_place_and_a_missing_name_in_a_closed_folder_is_no_ones(
    root: Path,
) -> None:
    assert not shared("/dev/null", [OTHER])
    assert not shared(str(root / "not-yet" / "deeper"), [OTHER])
    assert not shared("/", [OTHER])


def test_own_env_replaces_per_user_folders_trims_lists_and_drops_the_rest(root: Path) -> None:
    tmp = root / "tmp"
    tmp.mkdir()
    tmp.chmod(0o1777)
    private = root / "private"
    env = {
        "XDG_CACHE_HOME": f"{tmp}/cache",
        "TMPDIR": str(tmp),
        "PATH": f"/usr/bin:{tmp}/bin:/bin",
        "PYTHONPATH": f"{tmp}/lib",
        "MODEL": f"{tmp}/model.bin",
        "LOG": f"{tmp}/log",
        "KEPT": str(root),
        "WORD": "gpt-4o",
    }
    got, changed = own_env(env, [OTHER], private, frozenset({"LOG", "XDG_CACHE_HOME"}))
    assert got == {
        "XDG_CACHE_HOME": str(private / OWN_SUBFOLDER / "XDG_CACHE_HOME"),  # never on purpose
        "TMPDIR": str(private),
        "PATH": "/usr/bin:/bin",
        "LOG": f"{tmp}/log",  # shared on purpose (PASSK_SHARED_ENV)
        "KEPT": str(root),
        "WORD": "gpt-4o",
    }
    assert changed == {
        "XDG_CACHE_HOME": got["XDG_CACHE_HOME"],
        "TMPDIR": str(private),
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": None,
        "MODEL": None,
    }


def test_control_with_no_other_agent_user_nothing_changes(root: Path) -> None:
    env = {"XDG_CACHE_HOME": "/tmp/cache", "PATH": "/tmp/bin:/usr/bin"}
    assert own_env(env, [], root) == (env, {})
