"""The rendered report golden files (tests/golden/render): compared, or rewritten on request."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "render"


def assert_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("PASSK_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="")
        return
    if not path.exists():
        pytest.fail(f"{path} is missing: run with PASSK_UPDATE_GOLDEN=1 to create it")
    expected = path.read_text(encoding="utf-8")
    assert text == expected, f"{name} differs; PASSK_UPDATE_GOLDEN=1 regenerates it"
