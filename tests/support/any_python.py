"""The ``any_python`` mark, where ``.ci/fresh-venv`` looks for it: in the test's own file.

``.ci/fresh-venv`` collects only the test files that name the mark (``grep -l``): a
mark put on from anywhere else (a ``conftest.py``, a helper) would leave its tests out
of that run without a word, so the collection refuses it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

MARK = "any_python"


def check_marked_in_their_files(items: list[pytest.Item]) -> None:
    """Stop the run when a test carries ``any_python`` but its test file never names it."""
    named: dict[Path, bool] = {}
    for item in items:
        if item.get_closest_marker(MARK) is None:
            continue
        path = Path(item.path)
        if path not in named:
            named[path] = path.name.startswith("test_") and MARK in path.read_text("utf-8")
        if not named[path]:
            raise pytest.UsageError(
                f"{item.nodeid}: marked {MARK} from outside its test file; .ci/fresh-venv "
                f"runs the test_*.py files that name the mark: put it there "
                f"(pytestmark = pytest.mark.{MARK}, or on the test)"
            )
