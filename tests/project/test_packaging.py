"""The wheel and sdist build, pass `twine check`, and the installed wheel runs the demo.

Built without build isolation (no network): the build backend comes from the
dev environment.  The wheel goes into a fresh venv that sees this
interpreter's packages for its four dependencies only; passk itself must come from the
wheel, so a file missing from the package (a schema, the scripted agent)
fails here rather than for a user.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from support.paths import REPO
from support.pythons import venv_like_this_python

# .ci/run runs these again in a fresh venv, from a private folder (tests/support/pythons.py).
pytestmark = pytest.mark.any_python


pytest.importorskip("build", reason="the dev extra installs build (pip install -e '.[dev]')")
pytest.importorskip("twine", reason="the dev extra installs twine (pip install -e '.[dev]')")


def run(*args: str | Path, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in args],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
        **kwargs,  # type: ignore[arg-type]
    )


def test_wheel_and_sdist_build_check_and_run_the_demo(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    source = tmp_path / "source"
    # Build from a copy, so no egg-info or build/ is left in the checkout.
    files = run("git", "-C", REPO, "ls-files", "-co", "--exclude-standard").stdout.split()
    for name in files:
        target = source / name
        if (REPO / name).is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes((REPO / name).read_bytes())
    run(
        sys.executable,
        "-m",
        "build",
        "--no-isolation",
        "--skip-dependency-check",
        "--outdir",
        dist,
        source,
    )
    (wheel,) = dist.glob("*.whl")
    (sdist,) = dist.glob("*.tar.gz")
    run(sys.executable, "-m", "twine", "check", "--strict", wheel, sdist)
    names = zipfile.ZipFile(wheel).namelist()
    for packaged in ("schemas/config.schema.json", "schemas/run.schema.json", "py.typed"):
        assert f"passk_action/{packaged}" in names
    with tarfile.open(sdist) as archive:
        packaged_sources = archive.getnames()
    for module in ("engine/compare.py", "sides/trusted.py"):  # subpackages are found too
        assert any(n.endswith(f"src/passk_action/{module}") for n in packaged_sources)

    venv = tmp_path / "venv"
    # passk's four dependencies from this interpreter (however it was installed),
    # passk itself only from the wheel.
    python = venv_like_this_python(venv, without=["passk-action"]) / "python"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PATH"] = f"{venv / 'bin'}:{env.get('PATH', '')}"
    run(
        python,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--no-deps",
        "--no-index",
        "--force-reinstall",
        wheel,
        env=env,
    )
    located = run(python, "-c", "import passk_action; print(passk_action.__file__)", env=env)
    assert located.stdout.startswith(str(venv))  # the wheel, not the checkout
    version = run(venv / "bin" / "passk", "--version", env=env)
    assert version.stdout.startswith("passk ")
    demo = run(
        "bash",
        REPO / "examples" / "refunds" / "demo.sh",
        env={**env, "PASSK_DEMO_OUT": str(tmp_path / "demo")},
    )
    assert "Demo OK" in demo.stdout
