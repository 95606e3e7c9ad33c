"""One version everywhere: the package's, the release tag's, every pin in the docs and workflows.

``src/passk_action/__init__.py`` holds it; pyproject.toml reads it from there;
the docs and example workflows that pin passk (``passk-action==X``,
``PASSK_VERSION: "X"``, ``@vX.Y.Z``, an image tag, the action's major ``@vN``)
name that version; the release workflow refuses a tag that is not it, before
anything is built or published.
"""

from __future__ import annotations

import re
import subprocess
import sys

import yaml

from passk_action import __version__
from support.paths import REPO

CHECK = REPO / ".ci" / "release-version"
# Where a reader finds a version to copy: the docs, the example and own workflows, the actions.
PLACES = sorted(
    {
        REPO / "README.md",
        REPO / "action.yml",
        REPO / "runner" / "action.yml",
        *(REPO / "docs").glob("*.md"),
        *(REPO / "examples").rglob("*.md"),
        *(REPO / "examples").rglob("*.yml"),
        *(REPO / "examples").rglob("requirements*.txt"),
        *(REPO / ".github" / "workflows").glob("*.yml"),
    }
)
FULL = [
    re.compile(r"passk-action==(?P<v>[0-9][\w.]*)"),
    re.compile(r"PASSK_VERSION:\s*\"?(?P<v>[0-9][\w.]*)"),
    re.compile(r"passk-action(?:/runner)?@v(?P<v>\d+\.\d+\.\d+)"),
    re.compile(r"passk-action:v(?P<v>\d+\.\d+\.\d+)"),
]
MAJOR = re.compile(r"passk-dev/passk-action(?:/runner)?@v(?P<v>\d+)(?![\d.])")


def pins(text: str) -> tuple[list[str], list[str]]:
    """(full versions, major versions) a text pins passk to."""
    full = [m["v"] for pattern in FULL for m in pattern.finditer(text)]
    return full, [m["v"] for m in MAJOR.finditer(text)]


def test_the_package_reads_its_version_from_one_place() -> None:
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'^dynamic = \["version"\]$', pyproject, re.M)
    assert not re.search(r"^version\s*=\s*\"", pyproject, re.M), (
        "a second version in pyproject.toml"
    )
    assert 'version = { attr = "passk_action.__version__" }' in pyproject
    assert re.fullmatch(r"\d+\.\d+\.\d+", __version__)


def test_every_pin_in_the_docs_and_workflows_is_the_package_version() -> None:
    major = __version__.split(".")[0]
    wrong, seen = [], 0
    for path in PLACES:
        full, majors = pins(path.read_text(encoding="utf-8"))
        seen += len(full) + len(majors)
        name = path.relative_to(REPO).as_posix()
        wrong += [f"{name}: {v}" for v in full if v != __version__]
        wrong += [f"{name}: v{v}" for v in majors if v != major]
    assert not wrong, f"pins other than passk {__version__}: {wrong}"
    assert seen >= 8  # the README, the example workflows: the check looked at real pins


def test_the_pin_finder_sees_a_stale_pin() -> None:
    text = (
        'PASSK_VERSION: "0.9.0"\npip install passk-action==0.9.0\n'
        "uses: passk-dev/passk-action@v2\nuses: passk-dev/passk-action/runner@v1.0.0\n"
        "docker://ghcr.io/passk-dev/passk-action:v3.1.4\n"
    )
    assert pins(text) == (["0.9.0", "0.9.0", "1.0.0", "3.1.4"], ["2"])


def run_check(tag: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(CHECK), tag], capture_output=True, text=True, check=False, timeout=60
    )


def test_the_release_check_refuses_a_tag_that_is_not_the_version() -> None:
    assert run_check(f"v{__version__}").returncode == 0
    for tag in (f"v{__version__}.1", "v0.0.1", __version__, f"v{__version__}-rc1"):
        done = run_check(tag)
        assert done.returncode == 1, tag
        assert f"the tag {tag} is not the package's version v{__version__}" in done.stderr


def test_the_release_workflow_checks_the_tag_before_building_anything() -> None:
    workflow = yaml.safe_load((REPO / ".github" / "workflows" / "release.yml").read_text())
    jobs = workflow["jobs"]
    first = jobs["test"]["steps"]
    assert first[0]["uses"].startswith("actions/checkout@")
    assert first[1]["run"] == 'python3 .ci/release-version "$TAG"'
    assert first[1]["env"] == {"TAG": "${{ github.ref_name }}"}
    # Every job that builds or publishes waits for it.
    assert {name for name, job in jobs.items() if name != "test"} == {
        name for name, job in jobs.items() if job.get("needs") == "test"
    }
