"""The one error boundary (``errors.run_guarded``): every exception an exit code and one line,
the same for the command line and the action; only how a line is printed differs."""

from __future__ import annotations

import importlib
import io
from pathlib import Path

import pytest

from passk_action.errors import (
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    REPORT_BUGS_AT,
    ArtifactError,
    Interrupted,
    run_guarded,
)

TOKEN = "ghs_boundarySecretToken0123456789abcdef"


def guarded(exc: BaseException, *, debug: bool = False) -> tuple[int, list[str], list[str]]:
    errors: list[str] = []
    tracebacks: list[str] = []

    def entry() -> int:
        raise exc

    debugging = tracebacks.append if debug else None
    code = run_guarded(entry, error=errors.append, traceback_to=debugging)
    return code, errors, tracebacks


def test_a_result_passes_through() -> None:
    assert run_guarded(lambda: 1, error=pytest.fail) == 1


def test_a_passk_error_is_its_one_line_and_its_own_code() -> None:
    exc = ArtifactError("not a run\nartifact", where="x.json", hint="record it again")
    assert guarded(exc) == (EXIT_USAGE, ["x.json: not a run artifact (record it again)"], [])
    assert guarded(Interrupted("stopped"))[0] == EXIT_INTERRUPTED


def test_an_interruption_is_130_and_a_bug_is_2_with_a_traceback_only_on_request() -> None:
    assert guarded(KeyboardInterrupt()) == (EXIT_INTERRUPTED, ["interrupted"], [])
    code, errors, tracebacks = guarded(RuntimeError("boom\n  at  line"))
    assert (code, tracebacks) == (EXIT_USAGE, [])
    assert errors == [
        "internal error: RuntimeError: boom at line "
        f"(a bug in passk: please report it at {REPORT_BUGS_AT}, "
        "with the traceback PASSK_DEBUG=1 prints)"
    ]
    _, _, tracebacks = guarded(RuntimeError("boom"), debug=True)
    assert len(tracebacks) == 1 and "Traceback" in tracebacks[0]


def test_fatal_lines_may_be_printed_apart_from_input_errors() -> None:
    errors: list[str] = []
    fatal: list[str] = []

    def entry() -> int:
        raise KeyboardInterrupt

    assert run_guarded(entry, error=errors.append, fatal=fatal.append) == EXIT_INTERRUPTED
    assert (errors, fatal) == ([], ["interrupted"])


def test_the_cli_prints_the_boundarys_lines_on_stderr(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from passk_action.cli import main

    def bug() -> int:
        raise ValueError("a bug")

    monkeypatch.delenv("PASSK_DEBUG", raising=False)
    assert main(["action"], delegated={"action": bug}) == EXIT_USAGE
    assert capsys.readouterr().err == (
        "passk: internal error: ValueError: a bug "
        f"(a bug in passk: please report it at {REPORT_BUGS_AT}, "
        "with the traceback PASSK_DEBUG=1 prints)\n"
    )

    def interrupted() -> int:
        raise KeyboardInterrupt

    assert main(["action"], delegated={"action": interrupted}) == EXIT_INTERRUPTED
    assert capsys.readouterr().err == "passk: interrupted\n"
    assert main(["report", "/nonexistent/run.json"]) == EXIT_USAGE
    assert capsys.readouterr().err.startswith("passk: error: ")


@pytest.mark.parametrize(
    ("raised", "code", "line"),
    [
        (KeyboardInterrupt(), EXIT_INTERRUPTED, "::error title=passk::interrupted"),
        (
            RuntimeError(f"boom {TOKEN}"),
            EXIT_USAGE,
            "::error title=passk::internal error: RuntimeError: boom *** "
            f"(a bug in passk: please report it at {REPORT_BUGS_AT}, "
            "with the traceback PASSK_DEBUG=1 prints)",
        ),
    ],
)
def test_the_action_prints_them_as_workflow_errors_with_the_token_scrubbed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, raised: BaseException, code: int, line: str
) -> None:
    entry = importlib.import_module("passk_action.action.main")

    def read_inputs(*args: object) -> None:
        raise raised

    monkeypatch.setattr(entry, "read_inputs", read_inputs)
    out, err = io.StringIO(), io.StringIO()
    env = {"INPUT_GITHUB-TOKEN": TOKEN, "PASSK_DEBUG": "1"}
    assert entry.main(env, stdout=out, stderr=err, cwd=tmp_path) == code
    assert out.getvalue().splitlines() == [f"::add-mask::{TOKEN}", line]
    assert TOKEN not in err.getvalue()
    if isinstance(raised, RuntimeError):
        assert "Traceback" in err.getvalue() and "boom ***" in err.getvalue()
