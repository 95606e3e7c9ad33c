"""An output written in place keeps no file beside it: ``--out /dev/null`` makes no journal
in ``/dev``.

A run keeps its journal (and pending Retry-Afters, and a comparison's
journal) beside its output while it runs, so an interrupted run resumes.
``/dev/null``, ``/dev/stdout`` and a FIFO have no folder of their own: as
root, passk created ``/dev/null.journal.jsonl`` in ``/dev`` (as another
user the run failed).  The agent here lists the output's folder while it
runs, so a side file made and removed again is still seen.  Beside each
attack, its control: an output in a folder has its journal beside it while
the run lasts, as resuming needs.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

from passk_action.cli import main

LISTING_AGENT = (
    "import json, os, sys; json.load(sys.stdin); "
    "open(sys.argv[2], 'a').write(json.dumps(sorted(os.listdir(sys.argv[1]))) + '\\n'); "
    "print(json.dumps({'decision': 'deny'}))"
)


def project(tmp_path: Path, watch: Path) -> Path:
    """Two rows, k = 2; the agent appends what ``watch`` holds to ``seen`` at each attempt."""
    folder = tmp_path / "project"
    folder.mkdir()
    rows = [{"id": f"r{i}", "input": {"n": i}, "expected": "deny"} for i in range(2)]
    (folder / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    command = [sys.executable, "-c", LISTING_AGENT, str(watch), str(folder / "seen")]
    config = {"dataset": "data.jsonl", "k": 2, "agent": {"command": command}}
    (folder / "passk.yml").write_text(yaml.safe_dump(config))
    return folder


def seen(folder: Path) -> set[str]:
    """Every name the agent saw in the folder it watched, over the whole run."""
    lines = (folder / "seen").read_text().splitlines()
    return {name for line in lines for name in json.loads(line)}


def beside_null(names: set[str]) -> set[str]:
    return {name for name in names if name.startswith("null.")}


@pytest.mark.parametrize("command", ["run", "compare"])
def test_an_output_to_dev_null_keeps_no_file_in_dev(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    folder = project(tmp_path, Path("/dev"))
    monkeypatch.chdir(folder)
    if command == "compare":
        assert main(["baseline", "--quiet"]) == 0
        (folder / "seen").unlink()
        argv = ["compare", "--quiet", "--candidate-out", "/dev/null", "--markdown", "r.md"]
    else:
        argv = ["run", "--quiet", "--out", "/dev/null"]
    assert main(argv) == 0
    assert beside_null(seen(folder)) == set()
    assert beside_null(set(os.listdir("/dev"))) == set()
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def _drain(fifo: Path, into: list[bytes]) -> threading.Thread:
    def read() -> None:
        with open(fifo, "rb") as handle:
            into.append(handle.read())

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def test_an_output_to_a_fifo_keeps_no_file_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outputs = tmp_path / "outputs"
    outputs.mkdir()
    fifo = outputs / "run.json"
    os.mkfifo(fifo)
    folder = project(tmp_path, outputs)
    monkeypatch.chdir(folder)
    got: list[bytes] = []
    reader = _drain(fifo, got)
    assert main(["run", "--quiet", "--out", str(fifo)]) == 0
    reader.join(10)
    assert seen(folder) == {"run.json"}
    assert sorted(os.listdir(outputs)) == ["run.json"] and stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert len(json.loads(got[0])["attempts"]) == 4


def test_control_an_output_in_a_folder_has_its_journal_beside_it_while_it_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outputs = tmp_path / "outputs"
    outputs.mkdir()
    folder = project(tmp_path, outputs)
    monkeypatch.chdir(folder)
    assert main(["run", "--quiet", "--out", str(outputs / "run.json")]) == 0
    assert "run.json.journal.jsonl" in seen(folder)
    assert sorted(os.listdir(outputs)) == ["run.json"]  # the journal is gone once it is written


def test_resuming_a_run_written_in_place_is_refused_before_anything_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = project(tmp_path, Path("/dev"))
    monkeypatch.chdir(folder)
    assert main(["run", "--quiet", "--resume", "--out", "/dev/null"]) == 2
    err = capsys.readouterr().err
    [error] = [line for line in err.splitlines() if line.startswith("passk: error:")]
    assert "--resume: /dev/null is written in place" in error and "--out run.json" in error
    assert not (folder / "seen").exists()  # the agent was never asked
    # Control: a file resumes (nothing was interrupted, so it runs from the start).
    assert main(["run", "--quiet", "--resume", "--out", "run.json"]) == 0


@pytest.mark.skipif(not os.path.islink("/dev/stdout"), reason="/dev/stdout is not a link here")
def test_dev_stdout_pointing_at_a_file_is_written_through_and_stays_a_link(
    tmp_path: Path,
) -> None:
    """``passk run --out /dev/stdout > log``: stdout is a regular file, so only the name says
    the output is a descriptor.  The artifact is appended to the log after what came before;
    ``/dev/stdout`` stays ``/dev``'s link, and nothing lands in ``/dev``."""
    folder = project(tmp_path, Path("/dev"))
    log = tmp_path / "log"
    log.write_text("before\n")
    with open(log, "a") as handle:
        done = subprocess.run(
            [sys.executable, "-m", "passk_action", "run", "--quiet", "--out", "/dev/stdout"],
            cwd=folder,
            stdout=handle,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    assert done.returncode == 0, done.stderr
    assert os.path.islink("/dev/stdout")
    text = log.read_text()
    assert text.startswith("before\n")
    run, _ = json.JSONDecoder().raw_decode(text[len("before\n") :])
    assert len(run["attempts"]) == 4
    assert {name for name in seen(folder) if name.startswith("stdout.")} == set()
