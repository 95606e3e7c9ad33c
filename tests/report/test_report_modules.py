"""report/ is read module by module: each says in one line what it renders, stays under 900
lines, and takes what it shares from another module through public names only.

A private (underscore) name imported from a sibling is a phrase nobody named: the shared
words live in ``report/phrases.py`` and friends, public, so a reader sees what is shared.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from support.paths import REPO

PACKAGE = REPO / "src" / "passk_action"
REPORT = sorted((PACKAGE / "report").glob("*.py"))
MAX_LINES = 900


def private_imports(source: str) -> list[str]:
    """``module.name`` for every private name taken from another passk module, at any depth.

    Both ``from .x import _y`` and ``from . import x`` followed by ``x._y``
    count; ``from __future__`` and dunder names (``__version__``) do not.
    """
    tree = ast.parse(source)
    found: list[str] = []
    modules: set[str] = set()  # local names bound to a passk module or a name from one
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            ours = node.level > 0 or (node.module or "").startswith("passk_action")
            if not ours:
                continue
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(f"{node.module or '.'}.{alias.name}")
                else:
                    modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("passk_action"):
                    modules.add(alias.asname or alias.name.split(".")[0])
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ):
            found.append(f"{node.value.id}.{node.attr}")
    return found


@pytest.mark.parametrize("module", REPORT, ids=lambda p: p.name)
def test_no_report_module_imports_a_private_name(module: Path) -> None:
    found = private_imports(module.read_text(encoding="utf-8"))
    assert not found, f"report/{module.name} imports private names {found}: make them public"


def test_the_check_catches_each_way_of_reaching_a_private_name() -> None:
    # The control: the shapes report/ used before (comment.py took nine such
    # names from markdown.py), one inside a function, one through a module.
    assert private_imports("from .markdown import _sections, capped\n") == ["markdown._sections"]
    assert private_imports("def f():\n    from ..core.gate import _rank\n") == ["core.gate._rank"]
    assert private_imports("from . import charts\ncharts._pct(1.0)\n") == ["charts._pct"]
    assert private_imports("import passk_action.report.charts as c\nc._num(2)\n") == ["c._num"]
    # Not ours, or not private: fine.
    assert private_imports("from os import _exit\nfrom . import __version__\n") == []
    assert private_imports("from __future__ import annotations\nfrom .x import Public\n") == []


@pytest.mark.parametrize("module", REPORT, ids=lambda p: p.name)
def test_each_report_module_is_short_and_says_what_it_is(module: Path) -> None:
    text = module.read_text(encoding="utf-8")
    lines = text.count("\n")
    assert lines <= MAX_LINES, f"report/{module.name} has {lines} lines: split it along a seam"
    doc = ast.get_docstring(ast.parse(text))
    assert doc, f"report/{module.name} has no docstring saying what it renders"
    # One line: the first paragraph of the docstring is a single line.
    first, _, rest = doc.partition("\n")
    assert not rest or rest.startswith("\n"), f"report/{module.name}: {first!r} runs on"


def test_the_shared_words_are_defined_once() -> None:
    # _plural and ID_LEN were each defined twice (markdown.py, comment.py).
    definitions: dict[str, list[str]] = {}
    for module in REPORT:
        for node in ast.parse(module.read_text(encoding="utf-8")).body:
            names: list[str] = []
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                names = [node.name]
            elif isinstance(node, ast.Assign):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names = [node.target.id]
            for name in names:
                definitions.setdefault(name.lstrip("_").lower(), []).append(module.name)
    shared = ("plural", "id_len", "value_len", "reason_len", "detail_len", "percent", "se_text")
    twice = {n: definitions[n] for n in shared if len(definitions.get(n, [])) > 1}
    assert not twice, f"defined in more than one report module: {twice}"
