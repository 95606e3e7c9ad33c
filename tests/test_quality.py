"""The house rules that tools can check: ruff and strict mypy are clean, core and report are
pure."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "passk_action"
# The math and rules, and the renderers: data in, data out.
PURE = sorted([*(PACKAGE / "core").glob("*.py"), *(PACKAGE / "report").glob("*.py")])

# What the pure core may import: no IO, environment, clock or subprocess.
FORBIDDEN_IN_CORE = {
    "os",
    "sys",
    "subprocess",
    "socket",
    "requests",
    "time",
    "datetime",
    "random",
    "threading",
    "signal",
    "shutil",
    "tempfile",
    "pathlib",
    "io",
    "urllib",
    "http",
}


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: `pip install -e '.[dev]'` installs it")
    return found


def test_ruff_is_clean() -> None:
    proc = subprocess.run(
        [_tool("ruff"), "check", "src", "tests", "bench", "examples"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_strict_is_clean() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("module", PURE, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_core_and_report_modules_do_no_io(module: Path) -> None:
    tree = ast.parse(module.read_text(encoding="utf-8"))
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            imported.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            assert node.func.id != "open", f"{module.name} calls open()"
    assert not imported & FORBIDDEN_IN_CORE, f"{module.name} imports {imported & FORBIDDEN_IN_CORE}"

