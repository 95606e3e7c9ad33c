"""The Pythons the tests start, whatever Python runs the tests and wherever the clone lives.

The suite must pass from a system Python, pyenv, a venv or conda, in a clone under
any folder (a home directory, a private ``mktemp -d``).  Two things differ between
those and are handled here, once:

- ``python -m venv --system-site-packages`` run from inside a venv sees the *base*
  interpreter's packages, not the venv's, so a test venv made that way lacks what
  ``pip install -e '.[dev]'`` put in the venv.  :func:`venv_like_this_python`
  makes a venv that sees exactly this interpreter's packages (less some, on
  purpose), by linking them into its own site-packages;
- a Python or a checkout in a private folder cannot be run or read by the agent
  user (``nobody``).  :func:`agent_user_python` finds an interpreter that user
  can run, and :func:`copy_sources` puts passk's sources where it can read them.
"""

from __future__ import annotations

import os
import re
import shutil
import site
import stat
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src"


def site_dirs() -> list[str]:
    """This interpreter's site directories, in import order (a venv's own first)."""
    dirs = list(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        dirs.append(site.getusersitepackages())
    return [d for d in dict.fromkeys(dirs) if os.path.isdir(d)]


def _key(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name.lower())


def _hidden(entry: str, without: Iterable[str]) -> bool:
    """Whether a site-packages entry belongs to one of the distributions ``without``.

    Matches the package (``openai``), its metadata (``openai-1.40.0.dist-info``)
    and an editable install's hooks (``__editable___passk_action_0_1_0_finder.py``).
    """
    key = _key(entry)
    return any(re.search(rf"(^|_){re.escape(_key(name))}(_|$)", key) for name in without)


def venv_like_this_python(path: Path, *, without: Iterable[str] = ()) -> Path:
    """A venv at ``path`` that imports what this interpreter imports, less ``without``.

    Every entry of this interpreter's site directories is linked into the venv's
    own site-packages (``.pth`` files too, so editable installs and the like
    work), except the distributions named in ``without``: for them the venv is
    as bare as a fresh interpreter (``No module named 'openai'``).  No pip, no
    network, no build: it takes a fraction of a second.  Returns its ``bin``.
    """
    without = tuple(without)
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, timeout=120
    )
    python = path / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.strip()
    target = Path(purelib)
    target.mkdir(parents=True, exist_ok=True)
    for folder in site_dirs():
        for entry in sorted(os.listdir(folder)):
            link = target / entry
            if link.exists() or link.is_symlink() or _hidden(entry, without):
                continue  # an earlier site directory wins, as on sys.path
            link.symlink_to(Path(folder) / entry)
    return path / "bin"


def _others_may_run(path: Path) -> bool:
    """Whether a user with no rights of its own can reach and run ``path``."""
    if not path.exists():
        return False
    for place in (path, path.resolve()):
        if not all(os.stat(folder).st_mode & stat.S_IXOTH for folder in place.parents):
            return False
    mode = os.stat(path.resolve()).st_mode
    return bool(mode & stat.S_IXOTH and mode & stat.S_IROTH)


def agent_user_python() -> str:
    """A Python the agent user (``nobody``) can run: ours may sit in a private folder.

    The agents the tests start as that user need only the standard library.
    """
    candidates = [
        sys.executable,
        getattr(sys, "_base_executable", ""),
        "/usr/bin/python3",
        "/usr/local/bin/python3",
        shutil.which("python3") or "",
    ]
    for candidate in candidates:
        if candidate and _others_may_run(Path(candidate)):
            return candidate
    pytest.skip("no Python that an unprivileged user can run")


def copy_sources(folder: Path) -> Path:
    """passk's package copied under ``folder`` (readable by all); the path to put on sys.path.

    A clone in a private folder cannot be read by another user, so a test that
    runs passk's own code as that user runs this copy.
    """
    target = folder / "src"
    shutil.copytree(
        SRC / "passk_action",
        target / "passk_action",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )
    for place in [target, *target.rglob("*")]:
        place.chmod(0o755 if place.is_dir() else 0o644)
    return target


PASSK_DEPENDENCIES = (
    "yaml",
    "requests",
    "urllib3",
    "idna",
    "certifi",
    "charset_normalizer",
    "jsonschema",
    "jsonschema_specifications",
    "referencing",
    "rpds",
    "attrs",
    "attr",
    "markdown_it",
    "mdurl",
    "typing_extensions",
)
"""The packages ``passk action`` imports (pyproject's dependencies and theirs)."""


def copy_dependencies(folder: Path, python: str) -> Path:
    """passk's dependencies copied under ``folder`` for ``python`` (readable by all).

    Lets a test run the whole of ``passk action`` as the agent user, whose Python
    may not see this interpreter's site-packages.  Skips the test when a package is
    missing here or ``python`` is another minor version (compiled parts would not load).
    """
    import importlib.util

    probe = subprocess.run(
        [python, "-c", "import sys; print(*sys.version_info[:2], sep='.')"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    ours = f"{sys.version_info[0]}.{sys.version_info[1]}"
    if probe.stdout.strip() != ours:
        pytest.skip(f"{python} is not Python {ours}")
    target = folder / "deps"
    target.mkdir()
    for name in PASSK_DEPENDENCIES:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            source = Path(next(iter(spec.submodule_search_locations)))
            shutil.copytree(source, target / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif spec is not None and spec.origin and spec.origin.endswith(".py"):
            shutil.copy(spec.origin, target / Path(spec.origin).name)  # a one-file module
        else:
            pytest.skip(f"cannot copy passk's dependency {name!r}")
    for place in [target, *target.rglob("*")]:
        place.chmod(0o755 if place.is_dir() else 0o644)
    return target
