"""The suite runs on parallel workers only where that is safe (issue 32).

pyproject's ``addopts`` runs the tests on pytest-xdist's workers. A test that reaches
something of the machine's that two tests cannot use at once is marked
``@pytest.mark.shares("<resource>")`` (tests/support/shared_resources.py names them
and says why), and its resource's tests run one after another on one worker. Here
the rule is held, not hoped: a test whose source reaches a resource carries the mark
(on itself, its class or its module), and the mark does what it says in a real
parallel run.
"""

from __future__ import annotations

import ast
import itertools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from support.paths import REPO, TESTS
from support.shared_resources import RESOURCES, Resource


class Segments:
    """``ast.get_source_segment`` with the module split into lines once: the standard
    one splits the whole source again at every call, quadratic in a module's length
    (105 of 111 CPU s when every module was read for one resource)."""

    def __init__(self, source: str) -> None:
        self.lines = [line.encode("utf-8") for line in source.splitlines(keepends=True)]

    def __call__(self, node: ast.stmt | ast.expr) -> str:
        first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
        start, end = node.col_offset, node.end_col_offset
        if first == last:
            return self.lines[first][start:end].decode("utf-8")
        middle = b"".join(self.lines[first + 1 : last])
        return (self.lines[first][start:] + middle + self.lines[last][:end]).decode("utf-8")


def marked(node: ast.stmt | ast.expr, segment: Segments, resource: str) -> bool:
    """Whether a decorator list or a ``pytestmark`` holds ``shares(resource)``."""
    text = segment(node)
    return re.search(rf"\bmark\.shares\(\s*[\"']{re.escape(resource)}[\"']\s*\)", text) is not None


def defined_names(node: ast.stmt) -> set[str]:
    """The names a module-level statement defines: a helper, a fixture, a constant."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {node.name}
    targets = node.targets if isinstance(node, ast.Assign) else []
    if isinstance(node, ast.AnnAssign):
        targets = [node.target]
    return {
        name.id for target in targets for name in ast.walk(target) if isinstance(name, ast.Name)
    }


def is_test(node: ast.stmt) -> bool:
    tests = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
    return isinstance(node, tests) and node.name.lower().startswith("test")


def unmarked_uses(source: str, resource: Resource) -> list[str]:
    """Where ``source`` (a test module) reaches ``resource`` without the mark covering it.

    A test reaches it when its source shows the resource's signature, or names a
    helper, fixture or constant of the module that reaches it (and so on, through
    helpers that name helpers); such a test carries the mark, or its class or its
    module does. Module-level code that is none of those (a call at import time)
    needs the mark on the module. Imports and docstrings only name things. A module
    that only seems to reach it says why on a line of its own:
    ``# parallel-safe(<resource>): <why>``.
    """
    if re.search(rf"^\s*# parallel-safe\({re.escape(resource.name)}\): \S", source, re.M):
        return []
    tree = ast.parse(source)
    segment = Segments(source)
    module_mark = any(
        marked(node, segment, resource.name)
        for node in tree.body
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets)
    )
    if module_mark:
        return []
    statements = [
        node
        for node in tree.body
        if not isinstance(node, ast.Import | ast.ImportFrom)
        and not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))
    ]
    text = {id(node): segment(node) for node in statements}
    tainted: set[str] = set()

    def reaches(node: ast.stmt) -> bool:
        words = set(re.findall(r"\w+", text[id(node)]))
        return bool(resource.signature.search(text[id(node)]) or words & tainted)

    helpers = [node for node in statements if not is_test(node)]
    grown = True
    while grown:  # a helper that names a helper that reaches it reaches it too
        grown = False
        for node in helpers:
            names = defined_names(node) - {"pytestmark"}
            if names and not names <= tainted and reaches(node):
                tainted |= names
                grown = True
    found = []
    for node in statements:
        if is_test(node) and reaches(node):
            if not any(marked(d, segment, resource.name) for d in node.decorator_list):  # type: ignore[attr-defined]
                found.append(f"line {node.lineno}: {node.name}")  # type: ignore[attr-defined]
        elif not is_test(node) and not defined_names(node) and reaches(node):
            found.append(f"line {node.lineno}: the module")
    return found


def modules_of_tests() -> list[Path]:
    """Every test module, this one aside: it spells the signatures out to test them."""
    return sorted(
        path
        for path in TESTS.rglob("test_*.py")
        if "data" not in path.relative_to(TESTS).parts and path != Path(__file__).resolve()
    )


@pytest.mark.parametrize("resource", sorted(RESOURCES))
def test_every_test_that_reaches_a_shared_resource_is_marked(resource: str) -> None:
    offenders = [
        f"{path.relative_to(REPO)} {where}: add @pytest.mark.shares({resource!r})"
        for path in modules_of_tests()
        for where in unmarked_uses(path.read_text(encoding="utf-8"), RESOURCES[resource])
    ]
    assert offenders == []


HELPER = """
import pytest

def run_as(user):
    return {"PASSK_AGENT_USER": user}

def as_nobody():
    return run_as("nobody")

def test_through_helpers():
    as_nobody()

def test_plain():
    assert 1
"""
MARKED_TEST = """
import pytest

@pytest.mark.shares("agent-users")
def test_as_nobody():
    env = {"PASSK_AGENT_USER": "nobody"}

def test_plain():
    assert 1
"""


def test_the_check_finds_an_unmarked_use_and_accepts_a_marked_one() -> None:
    agent_users = RESOURCES["agent-users"]
    # A test that reaches it through helpers (a helper calling a helper that does).
    assert unmarked_uses(HELPER, agent_users) == ["line 10: test_through_helpers"]
    module_marked = 'pytestmark = [pytest.mark.shares("agent-users")]\n' + HELPER
    assert unmarked_uses(module_marked, agent_users) == []
    # Module-level code run at import time: only the module's mark covers it.
    assert unmarked_uses('run({"PASSK_AGENT_USER": "nobody"})\n', agent_users) == [
        "line 1: the module"
    ]
    assert unmarked_uses(MARKED_TEST, agent_users) == []
    unmarked = MARKED_TEST.replace('@pytest.mark.shares("agent-users")\n', "")
    assert unmarked_uses(unmarked, agent_users) == ["line 4: test_as_nobody"]
    # A module that only reads about the resource says so, and why.
    said = "# parallel-safe(agent-users): reads the Dockerfile's text\n"
    assert unmarked_uses(said + unmarked, agent_users) == []
    assert unmarked_uses(said.replace("agent-users", "docker") + unmarked, agent_users)
    assert unmarked_uses('"""Runs as PASSK_AGENT_USER."""\n', agent_users) == []  # a docstring
    # Another resource's mark is not this one's.
    assert unmarked_uses(MARKED_TEST.replace("agent-users", "docker"), agent_users) != []
    docker = 'def test_build():\n    subprocess.run(["docker", "build", "."])\n'
    assert unmarked_uses(docker, RESOURCES["docker"]) == ["line 1: test_build"]


def pyproject_addopts() -> str:
    """pyproject's pytest ``addopts`` (tomllib is Python 3.11's; passk runs on 3.10)."""
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    (value,) = re.findall(r'^addopts = "([^"]*)"$', text, re.M)
    return value


def test_the_suite_runs_on_workers_that_honour_the_groups() -> None:
    addopts = pyproject_addopts().split()
    assert "-n" in addopts and "--dist" in addopts
    assert addopts[addopts.index("--dist") + 1] == "loadgroup"  # else the groups are ignored


PROBE = """
import json, os, time
import pytest

def log(name):
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    with open(os.environ["PROBE_LOG"], "a") as handle:
        handle.write(json.dumps({"test": name, "worker": worker, "start": time.time()}) + "\\n")
    time.sleep(0.3)
    with open(os.environ["PROBE_LOG"], "a") as handle:
        handle.write(json.dumps({"test": name, "end": time.time()}) + "\\n")

"""


def test_a_resources_tests_run_one_after_another_on_one_worker(tmp_path: Path) -> None:
    """Eight tests, the first four marked: on two workers the four run on one, never
    overlapping, and the other four are shared out (so the run was parallel). Unmarked,
    the first four would be dealt to both workers, two each."""
    tests = "".join(
        ('@pytest.mark.shares("agent-users")\n' if n < 4 else "")
        + f"def test_{n}():\n    log('{'shared' if n < 4 else 'free'}{n}')\n\n"
        for n in range(8)
    )
    (tmp_path / "test_probe.py").write_text(PROBE + tests, encoding="utf-8")
    (tmp_path / "conftest.py").write_text(
        (TESTS / "conftest.py").read_text(encoding="utf-8"), encoding="utf-8"
    )
    log = tmp_path / "probe.jsonl"
    env = {
        **os.environ,
        "PROBE_LOG": str(log),
        "PYTHONPATH": str(TESTS),
        "PYTEST_XDIST_AUTO_NUM_WORKERS": "2",
    }
    env.pop("PASSK_UPDATE_GOLDEN", None)
    (tmp_path / "pytest.ini").write_text(
        f"[pytest]\naddopts = {pyproject_addopts()}\nmarkers =\n    shares(resource): see passk\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    starts, ends = {}, {}
    for line in log.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        if "start" in entry:
            starts[entry["test"]] = (entry["worker"], entry["start"])
        else:
            ends[entry["test"]] = entry["end"]
    shared = sorted((starts[t][1], ends[t]) for t in starts if t.startswith("shared"))
    assert len(shared) == 4
    assert len({starts[t][0] for t in starts if t.startswith("shared")}) == 1
    assert all(end <= start for (_, end), (start, _) in itertools.pairwise(shared))
    assert {worker for worker, _ in starts.values()} == {"gw0", "gw1"}


def test_a_mark_that_names_no_resource_stops_the_run(tmp_path: Path) -> None:
    (tmp_path / "test_typo.py").write_text(
        'import pytest\n\n@pytest.mark.shares("agent-user")\ndef test_x():\n    pass\n',
        encoding="utf-8",
    )
    (tmp_path / "conftest.py").write_text(
        (TESTS / "conftest.py").read_text(encoding="utf-8"), encoding="utf-8"
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", str(tmp_path)],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(TESTS)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode != 0
    assert "@pytest.mark.shares('agent-user',) names no resource; write one of" in (
        done.stdout + done.stderr
    )
