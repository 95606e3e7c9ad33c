"""Atomic writes leave devices and FIFOs as they are (issue 28, route 9).

Renaming a temporary file over ``/dev/null`` as root replaces the device
with a regular file for everyone on the machine; a FIFO named as an output
stops being a FIFO.  Such targets are written in place; a regular file is
still replaced whole (the control).
"""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

from passk_action.store.atomic import write_text_atomic


def _read_fifo(path: Path, into: list[bytes]) -> threading.Thread:
    def read() -> None:
        with open(path, "rb") as handle:
            into.append(handle.read())

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def test_a_fifo_is_written_in_place(tmp_path: Path) -> None:
    fifo = tmp_path / "out.json"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = _read_fifo(fifo, got)
    write_text_atomic(fifo, '{"a": 1}\n')
    reader.join(5)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert got == [b'{"a": 1}\n']
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_a_link_to_a_device_is_written_through_and_kept(tmp_path: Path) -> None:
    """``--out`` naming a link to /dev/null: the link (and the device) stay."""
    link = tmp_path / "null.json"
    link.symlink_to("/dev/null")
    write_text_atomic(link, "x\n")
    assert link.is_symlink() and os.readlink(link) == "/dev/null"
    assert stat.S_ISCHR(os.stat(link).st_mode)


def test_a_regular_file_is_still_replaced_whole(tmp_path: Path) -> None:
    """The control: an ordinary output is a new file (a new inode), never half written."""
    out = tmp_path / "out.json"
    out.write_text("old\n")
    before = os.stat(out).st_ino
    write_text_atomic(out, "new\n")
    assert out.read_text() == "new\n"
    assert os.stat(out).st_ino != before
    assert stat.S_ISREG(os.lstat(out).st_mode)


def test_a_descriptors_name_is_written_through_even_when_it_points_at_a_file(
    tmp_path: Path,
) -> None:
    """``--out /dev/stdout > log``: a link into ``/proc`` names a descriptor, whatever it
    points at; renaming over it would replace ``/dev``'s link with a file, as root."""
    log = tmp_path / "log"
    log.write_text("before\n")
    with open(log, "a") as handle:
        link = tmp_path / "stdout"
        link.symlink_to(f"/proc/self/fd/{handle.fileno()}")
        write_text_atomic(link, "x\n")
    assert link.is_symlink()
    assert log.read_text() == "before\nx\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["log", "stdout"]
