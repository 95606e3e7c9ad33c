"""Progress output with a fake clock: whole lines compared, not substrings."""

from __future__ import annotations

import io

import pytest

from passk_action.core.model import Attempt, Phase
from passk_action.progress import (
    LiveProgress,
    NullProgress,
    PlainProgress,
    format_duration,
    make_progress,
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def ok(row: str = "r") -> Attempt:
    return Attempt(row_id=row, number=1, phase=Phase.MAIN, decision="approve")


def failed(row: str = "r", retries: tuple[str, ...] = ()) -> Attempt:
    return Attempt(
        row_id=row, number=1, phase=Phase.MAIN, decision=None, error="timeout", retries=retries
    )


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (8.4, "8s"), (59.6, "1m00s"), (125, "2m05s"), (3720, "1h02m"), (-3, "0s")],
)
def test_format_duration(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


def test_plain_progress_prints_at_most_every_interval_and_a_final_line() -> None:
    clock, out = FakeClock(), io.StringIO()
    progress = PlainProgress(out, clock, every_s=10.0)
    progress.start(10, "baseline")
    for step in range(1, 10):
        clock.now += 3.0  # an attempt every 3 s: lines at 12 s and 24 s only
        progress.advance(failed(retries=("timeout: x",)) if step == 2 else ok())
    clock.now += 3.0
    progress.advance(ok())
    progress.finish()
    assert out.getvalue().splitlines() == [
        "baseline: running 10 attempts",
        "baseline: first error, row r attempt 1: timeout",
        "baseline: 4/10 attempts, 1 error, 1 retried, 20.0/min, ETA 18s",
        "baseline: 8/10 attempts, 1 error, 1 retried, 20.0/min, ETA 6s",
        "baseline: 10/10 attempts, 1 error, 1 retried, in 30s",
    ]


def test_plain_progress_final_line_when_stopped_early() -> None:
    clock, out = FakeClock(), io.StringIO()
    progress = PlainProgress(out, clock)
    progress.start(5, "candidate confirmation")
    clock.now += 1
    progress.advance(failed())
    progress.advance(failed())
    progress.finish()
    assert (
        out.getvalue().splitlines()[-1] == "candidate confirmation: 2/5 attempts, 2 errors, in 1s"
    )


def test_live_progress_rewrites_one_line_and_pads_shorter_text() -> None:
    clock, out = FakeClock(), io.StringIO()
    progress = LiveProgress(out, clock, min_interval_s=0.5)
    progress.start(200, "baseline")
    clock.now += 10
    progress.advance(ok())
    clock.now += 0.1  # within the throttle interval: no redraw
    progress.advance(ok())
    clock.now += 90
    for _ in range(98):
        progress.advance(ok())
    progress.finish()
    frames = out.getvalue().split("\r")[1:]
    assert frames == [
        "baseline: 0/200 attempts, 0 errors, ETA --",
        "baseline: 1/200 attempts, 0 errors, 6.0/min, ETA 33m10s",
        "baseline: 3/200 attempts, 0 errors, 1.8/min, ETA 1h49m" + " " * 1,
        "baseline: 100/200 attempts, 0 errors, in 1m40s" + " " * 8 + "\n",
    ]


CRASH = Attempt(
    row_id="r-17",
    number=2,
    phase=Phase.MAIN,
    decision=None,
    error="exit-status",
    detail="exited with status 1\nstderr (last 2000 chars): Traceback (most recent call last):\n"
    '  File "agent.py", line 3, in <module>\n    import openai_missing_module\n'
    "ModuleNotFoundError: No module named 'openai_missing_module'\n",
)


def test_plain_progress_tells_the_first_error_at_once_with_its_stderr() -> None:
    clock, out = FakeClock(), io.StringIO()
    progress = PlainProgress(out, clock, every_s=10.0)
    progress.start(90, "candidate")
    progress.advance(CRASH)
    first = out.getvalue().splitlines()
    for _ in range(3):
        progress.advance(CRASH)  # later errors are counted, not told again
    assert (
        out.getvalue().splitlines()
        == first
        == [
            "candidate: running 90 attempts",
            "candidate: first error, row r-17 attempt 2: exit-status: exited with status 1",
            "  stderr (last 4 line(s)):",
            "  | Traceback (most recent call last):",
            '  |   File "agent.py", line 3, in <module>',
            "  |     import openai_missing_module",
            "  | ModuleNotFoundError: No module named 'openai_missing_module'",
        ]
    )


def test_live_progress_prints_the_first_error_above_the_live_line() -> None:
    clock, out = FakeClock(), io.StringIO()
    progress = LiveProgress(out, clock, min_interval_s=0.5)
    progress.start(10, "candidate")
    clock.now += 0.1
    progress.advance(CRASH)
    progress.finish()
    lines = out.getvalue().replace("\r", "\n").splitlines()
    shown = [line.rstrip() for line in lines if line.strip()]
    assert shown == [
        "candidate: 0/10 attempts, 0 errors, ETA --",
        "candidate: first error, row r-17 attempt 2: exit-status: exited with status 1",
        "  stderr (last 4 line(s)):",
        "  | Traceback (most recent call last):",
        '  |   File "agent.py", line 3, in <module>',
        "  |     import openai_missing_module",
        "  | ModuleNotFoundError: No module named 'openai_missing_module'",
        "candidate: 1/10 attempts, 1 error, 10.0/s, ETA 1s",
        "candidate: 1/10 attempts, 1 error, in 0s",
    ]


def test_make_progress_chooses_by_tty_and_quiet() -> None:
    out = io.StringIO()
    assert isinstance(make_progress(out, is_tty=True, quiet=True), NullProgress)
    assert isinstance(make_progress(out, is_tty=True, quiet=False), LiveProgress)
    assert isinstance(make_progress(out, is_tty=False, quiet=False), PlainProgress)
    quiet = make_progress(out, is_tty=False, quiet=True)
    quiet.start(3, "baseline")
    quiet.advance(ok())
    quiet.finish()
    assert out.getvalue() == ""
