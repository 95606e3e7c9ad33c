"""No test module imports another: what tests share lives in tests/support (issue 19).

The tests are laid out like the package, a folder per part. A test module that
imported another would tie two folders together, run the other's module-level code,
and break when either moves; shared builders, fakes and fixtures go in
tests/support, found through pytest's ``pythonpath = ["tests"]``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from support.paths import REPO

SUPPORT = REPO / "tests" / "support"


def imports_of_test_modules(source: str) -> list[tuple[int, str]]:
    """(line, module) of every import of a ``test_*`` module in ``source``, nested ones too."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            # ``from pkg import test_x`` imports a module as surely as ``import pkg.test_x``;
            # and a test function imported elsewhere would run there a second time.
            names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        else:
            continue
        found += [
            (node.lineno, name)
            for name in names
            if any(part.startswith("test_") for part in name.split("."))
        ]
    return sorted(set(found))


def python_files() -> list[Path]:
    return sorted([*(REPO / "tests").rglob("*.py"), *(REPO / "bench").rglob("*.py")])


def test_no_module_imports_a_test_module() -> None:
    offenders = [
        f"{path.relative_to(REPO)}:{line}: imports {name}; move what it needs to tests/support"
        for path in python_files()
        for line, name in imports_of_test_modules(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_the_shared_code_is_a_package_that_holds_no_tests() -> None:
    assert (SUPPORT / "__init__.py").is_file()
    for path in SUPPORT.rglob("*.py"):
        assert not path.name.startswith("test_"), f"{path}: pytest would collect it as tests"
        docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
        assert docstring, f"{path}: say in one line what the module holds"


@pytest.mark.parametrize(
    "source",
    [
        "from test_render import failed_scenario",
        "import test_render",
        "import test_render as render",
        "from tests.test_render import failed_scenario",
        "from . import test_render",
        "from .test_render import failed_scenario",
        "from report import test_render",
        "def helper():\n    from test_render import failed_scenario\n",
        "from support.scenarios import test_the_failed_scenario",
    ],
)
def test_an_import_of_a_test_module_is_caught_however_it_is_written(source: str) -> None:
    assert imports_of_test_modules(source) != []


@pytest.mark.parametrize(
    "source",
    [
        "from support.scenarios import failed_scenario",
        "from support import fuzzing",
        "import testing_tools",
        "from passk_action.testing import scripted_agent",
        "from passk_action.core.model import RowRecord",
        "import contest_rules",
    ],
)
def test_imports_of_shared_code_pass(source: str) -> None:
    assert imports_of_test_modules(source) == []


ACROSS_PARTS = {"e2e", "docs", "project", "container"}
"""Tests of no one part: whole stories, the docs, the house rules, the container image."""
NOT_TESTS = {"support", "golden", "data", "specs", "__pycache__"}


def layout_problems(tests: Path, package: Path) -> list[str]:
    """What breaks "tests laid out like the package" in ``tests`` for ``package``."""
    parts = {p.name for p in package.iterdir() if (p / "__init__.py").is_file()}
    folders = {p.name for p in tests.iterdir() if p.is_dir()} - NOT_TESTS
    problems = [f"tests/{f}/ names no part of the package" for f in folders - parts - ACROSS_PARTS]
    problems += [f"{part}/ has no tests/{part}/" for part in parts - folders]
    # A test at the top tests a top-level module: errors.py, progress.py, program.py.
    top = {p.stem for p in package.glob("*.py")} | {"startup"}
    problems += [
        f"tests/{p.name} tests no top-level module: move it into its part's folder"
        for p in tests.glob("test_*.py")
        if p.stem.removeprefix("test_") not in top
    ]
    problems += [
        f"{p.relative_to(tests)} is nested too deep"
        for p in tests.rglob("test_*.py")
        if p.parent != tests and p.parent.parent != tests
    ]
    readme = tests / "README.md"
    words = readme.read_text(encoding="utf-8") if readme.is_file() else ""
    problems += [
        f"tests/README.md does not say what {f}/ tests" for f in folders if f"`{f}/`" not in words
    ]
    return sorted(problems)


def test_the_tests_are_laid_out_like_the_package() -> None:
    assert layout_problems(REPO / "tests", REPO / "src" / "passk_action") == []


def test_control_a_stray_folder_or_file_is_caught(tmp_path: Path) -> None:
    package, tests = tmp_path / "pkg", tmp_path / "tests"
    for part in ("core", "report"):
        (package / part).mkdir(parents=True)
        (package / part / "__init__.py").write_text("")
    (package / "errors.py").write_text("")
    for folder in ("core", "reports", "e2e"):
        (tests / folder).mkdir(parents=True)
    (tests / "test_errors.py").write_text("")
    (tests / "test_gate.py").write_text("")
    (tests / "README.md").write_text("`core/` `e2e/`")
    assert layout_problems(tests, package) == [
        "report/ has no tests/report/",
        "tests/README.md does not say what reports/ tests",
        "tests/reports/ names no part of the package",
        "tests/test_gate.py tests no top-level module: move it into its part's folder",
    ]
