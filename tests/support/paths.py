"""Where the tests' files are, whatever folder a test sits in."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
"""``tests/``: the golden files, the data, the vendored specs."""
REPO = TESTS.parent
"""The repository's root: the README, the docs, ``src/``, ``examples/``, ``bench/``."""
