"""``any_python`` is put on in the test's own file, where ``.ci/fresh-venv`` looks for it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from support.paths import REPO, TESTS

MARKED = "import pytest\n\n@pytest.mark.any_python\ndef test_x():\n    pass\n"
PLAIN = "def test_x():\n    pass\n"
# A conftest.py that marks every test of its folder: the file never names the mark.
FROM_ELSEWHERE = """
import pytest

def pytest_collection_modifyitems(items):
    for item in items:
        item.add_marker(pytest.mark.any_python)
"""


def collect(folder: Path) -> subprocess.CompletedProcess[str]:
    """The suite's collection (its conftest.py, its hooks) of ``folder``, alone."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0",
         "--collect-only", str(folder)],
        cwd=folder,
        env={**os.environ, "PYTHONPATH": str(TESTS)},
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip


@pytest.mark.parametrize("attack", [False, True], ids=["control", "mark-from-a-conftest"])
def test_a_mark_the_test_file_never_names_stops_the_collection(
    tmp_path: Path, attack: bool
) -> None:
    (tmp_path / "conftest.py").write_text((TESTS / "conftest.py").read_text("utf-8"), "utf-8")
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "test_one.py").write_text(PLAIN if attack else MARKED, encoding="utf-8")
    if attack:
        (sub / "conftest.py").write_text(FROM_ELSEWHERE, encoding="utf-8")
    done = collect(tmp_path)
    said = done.stdout + done.stderr
    if attack:
        assert done.returncode != 0
        assert "sub/test_one.py::test_x: marked any_python from outside its test file" in said
    else:
        assert done.returncode == 0, said
        assert "1 test collected" in said


def test_fresh_venv_finds_the_files_by_the_marks_name() -> None:
    """The check above holds for what the script greps: the word, in test_*.py files."""
    script = (REPO / ".ci" / "fresh-venv").read_text(encoding="utf-8")
    assert "grep -rl --include='test_*.py' any_python tests" in script
    assert '-m any_python "${files[@]}"' in script
