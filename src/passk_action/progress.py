"""Progress reporting for agent runs: a live line on a terminal, sparse lines in CI.

A run of a few hundred attempts can take many minutes; silence makes people
cancel jobs that were fine.  On a terminal we rewrite one line in place; in CI
logs (no TTY) a rewritten line would become hundreds of lines, so we print a
plain line at most every ``every_s`` seconds plus a final one.

The clock is injected so the rate and ETA are testable without sleeping.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from .core.model import Attempt, split_error_detail

FIRST_ERROR_STDERR_LINES = 8
"""How many of the last stderr lines the first error shows on the console."""


def first_error_lines(label: str, attempt: Attempt) -> list[str]:
    """The first failed attempt, told at once: its reason, then the end of its stderr.

    A run that only counts errors ("90/90 attempts, 90 errors") leaves the cause in
    the JSON; the first failure usually names it (a missing module, a refused key).
    """
    reason, tail = split_error_detail(attempt.detail)
    head = f"{label}: first error, row {attempt.row_id} attempt {attempt.number}: {attempt.error}"
    lines = [f"{head}: {reason}" if reason else head]
    stderr = [line.rstrip() for line in tail.splitlines() if line.strip()]
    if stderr:
        shown = stderr[-FIRST_ERROR_STDERR_LINES:]
        lines.append(f"  stderr (last {len(shown)} line(s)):")
        lines.extend(f"  | {line}" for line in shown)
    return lines


Clock = Callable[[], float]


class Stream(Protocol):
    """Where progress goes: a text stream (stderr), or the action's log (``Workflow.stream``)."""

    def write(self, text: str, /) -> int: ...

    def flush(self) -> None: ...


class Progress(Protocol):
    """What the runner tells whoever watches a run."""

    def start(self, total: int, label: str) -> None: ...

    def advance(self, attempt: Attempt) -> None: ...

    def finish(self) -> None: ...


def format_duration(seconds: float) -> str:
    """``8s``, ``2m05s``, ``1h02m``: short enough for a status line."""
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole}s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


@dataclass
class _Tally:
    """Counts shared by both visible progress styles."""

    label: str = ""
    total: int = 0
    done: int = 0
    errors: int = 0
    retried: int = 0
    started_at: float = 0.0

    def add(self, attempt: Attempt) -> list[str]:
        """Count ``attempt``; the lines to show at once (the run's first error)."""
        self.done += 1
        first: list[str] = []
        if not attempt.valid:
            self.errors += 1
            if self.errors == 1:
                first = first_error_lines(self.label, attempt)
        if attempt.retries:
            self.retried += 1
        return first

    def line(self, now: float, *, final: bool = False) -> str:
        """One status line, e.g. ``baseline: 12/30 attempts, 1 error, 2.4/s, ETA 8s``."""
        elapsed = max(0.0, now - self.started_at)
        parts = [f"{self.label}: {self.done}/{self.total} attempts"]
        parts.append(f"{self.errors} error" + ("" if self.errors == 1 else "s"))
        if self.retried:
            parts.append(f"{self.retried} retried")
        if final:
            parts.append(f"in {format_duration(elapsed)}")
            return ", ".join(parts)
        if self.done and elapsed > 0:
            rate = self.done / elapsed
            # Slow agents (an LLM call per attempt) read better per minute.
            parts.append(f"{rate:.1f}/s" if rate >= 1 else f"{rate * 60:.1f}/min")
            parts.append(f"ETA {format_duration((self.total - self.done) / rate)}")
        else:
            # No rate before the first attempt lands: an invented ETA misleads.
            parts.append("ETA --")
        return ", ".join(parts)


class NullProgress:
    """Reports nothing (``--quiet``)."""

    def start(self, total: int, label: str) -> None:
        pass

    def advance(self, attempt: Attempt) -> None:
        pass

    def finish(self) -> None:
        pass


class LiveProgress:
    """A single ``\\r``-rewritten line for terminals.

    Redraws are throttled to ``min_interval_s`` because a fast in-process agent
    can finish thousands of attempts a second and the terminal would be the
    bottleneck.  Shorter lines are padded so no stale characters remain.
    """

    def __init__(
        self, stream: Stream, clock: Clock = time.monotonic, *, min_interval_s: float = 0.1
    ) -> None:
        self._stream = stream
        self._clock = clock
        self._min_interval_s = min_interval_s
        self._tally = _Tally()
        self._last_draw: float | None = None
        self._width = 0

    def start(self, total: int, label: str) -> None:
        self._tally = _Tally(label=label, total=total, started_at=self._clock())
        self._width = 0
        self._draw(self._tally.line(self._tally.started_at))

    def advance(self, attempt: Attempt) -> None:
        first = self._tally.add(attempt)
        now = self._clock()
        if first:
            # Above the live line, which is redrawn under it.
            self._draw("")
            _put(self._stream, "\r" + "\n".join(first) + "\n")
            self._width = 0
            self._draw(self._tally.line(now))
            return
        if self._last_draw is not None and now - self._last_draw < self._min_interval_s:
            return
        self._draw(self._tally.line(now))

    def finish(self) -> None:
        self._draw(self._tally.line(self._clock(), final=True))
        _put(self._stream, "\n")

    def _draw(self, line: str) -> None:
        padding = " " * max(0, self._width - len(line))
        _put(self._stream, "\r" + line + padding)
        self._width = len(line)
        self._last_draw = self._clock()


class PlainProgress:
    """Plain lines for CI logs: one at start, at most one per ``every_s``, one at the end."""

    def __init__(self, stream: Stream, clock: Clock = time.monotonic, every_s: float = 10.0):
        self._stream = stream
        self._clock = clock
        self._every_s = every_s
        self._tally = _Tally()
        self._last_line = 0.0

    def start(self, total: int, label: str) -> None:
        now = self._clock()
        self._tally = _Tally(label=label, total=total, started_at=now)
        self._last_line = now
        self._write(f"{label}: running {total} attempts")

    def advance(self, attempt: Attempt) -> None:
        for line in self._tally.add(attempt):
            self._write(line)
        now = self._clock()
        if now - self._last_line >= self._every_s and self._tally.done < self._tally.total:
            self._last_line = now
            self._write(self._tally.line(now))

    def finish(self) -> None:
        self._write(self._tally.line(self._clock(), final=True))

    def _write(self, line: str) -> None:
        _put(self._stream, line + "\n")


def _put(stream: Stream, text: str) -> None:
    """Write and flush ``text``; a stream that is gone (EIO from a closed terminal) is skipped.

    Progress is for the person watching: when the terminal closed under the
    run (SIGHUP), failing to draw it must not turn a clean stop into a crash.
    """
    with contextlib.suppress(OSError, ValueError):
        stream.write(text)
        stream.flush()


def make_progress(
    stream: Stream, is_tty: bool, quiet: bool, *, clock: Clock = time.monotonic
) -> Progress:
    """Choose the progress style: nothing when quiet, live on a TTY, plain otherwise."""
    if quiet:
        return NullProgress()
    if is_tty:
        return LiveProgress(stream, clock)
    return PlainProgress(stream, clock)
