"""The session: how a recording or a comparison runs and reports, besides what it measures.

Its concurrency and retries (from the config), the clock runs are stamped
with, where progress and warnings go, and the event that stops a run
(SIGINT/SIGTERM/SIGHUP).  Every shell builds it with :func:`make_session`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from types import FrameType
from typing import TYPE_CHECKING

from ..agents.reaper import REAPER
from ..agents.runner import AttemptRequest, RetryPolicy
from ..core.cost import Pricing
from ..errors import Interrupted, UsageError
from ..progress import NullProgress, Progress

if TYPE_CHECKING:  # only read: importing it would load yaml and jsonschema
    from ..inputs.config import Config


def now_iso() -> str:
    """The UTC time now, to the second, as runs and results are stamped (``…Z``)."""
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def retry_policy(config: Config) -> RetryPolicy:
    r = config.retry
    return RetryPolicy(attempts=r.attempts, backoff_s=r.backoff_s, max_backoff_s=r.max_backoff_s)


@dataclass
class Session:
    """What every recording needs besides the dataset: how to run and report."""

    concurrency: int
    retry: RetryPolicy
    now: Callable[[], str]
    progress: Progress = field(default_factory=NullProgress)
    stop: threading.Event | None = None
    warn: Callable[[str], None] = lambda message: None
    pricing: Pricing = field(default_factory=Pricing)
    """Prices for attempts that report tokens but no cost (the config's ``pricing``)."""
    sleep: Callable[[float], None] | None = None
    """Waits between retries (tests fake it); None: a real wait that a stop cuts short."""
    gated: frozenset[str] = frozenset()
    """Rows a gate rests on besides the must-not-break ones (the ratchet): their transient
    errors get a second chance once a run is otherwise done (see ``run_attempts``)."""
    held_back: bool = True
    """Whether a gated row's transient error is held back and tried again at the end of the
    same run (the second chance).  A comparison under the sequential rule turns it off: its
    confirmation rounds are the second chance (``engine/confirm.py``)."""

    def second_chance(self, request: AttemptRequest) -> bool:
        """Whether ``request``'s row is gated (must-not-break, or in :attr:`gated`) and its
        errors are held back for a second chance in the same run."""
        return self.held_back and (request.row.must_not_break or request.row.id in self.gated)


def make_session(
    config: Config,
    *,
    now: Callable[[], str],
    progress: Progress,
    warn: Callable[[str], None],
    stop: threading.Event | None = None,
    concurrency: int | None = None,
) -> Session:
    """The session for ``config``: its concurrency (unless ``concurrency`` overrides it),
    retries and prices, with the shell's clock, progress line, warnings and stop event."""
    if concurrency is None:
        concurrency = config.concurrency
    if concurrency < 1:
        raise UsageError("--concurrency must be at least 1", where="--concurrency")
    return Session(
        concurrency=concurrency,
        retry=retry_policy(config),
        now=now,
        progress=progress,
        stop=stop,
        warn=warn,
        pricing=config.pricing,
    )


def wait(session: Session, seconds: float) -> None:
    """Wait as the session waits between tries: its ``sleep``, or a wait a stop cuts short."""
    if session.sleep is not None:
        session.sleep(seconds)
    else:
        (session.stop or threading.Event()).wait(seconds)


def raise_if_stopped(session: Session, what: str) -> None:
    if session.stop is not None and session.stop.is_set():
        raise Interrupted(f"stopped during the {what}", hint="run the command again")


STOP_SIGNALS: tuple[signal.Signals, ...] = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)
"""The signals that stop a run cleanly: Ctrl-C, a cancelled job, a closed terminal."""


@contextmanager
def stop_on_signals() -> Iterator[threading.Event]:
    """SIGINT/SIGTERM/SIGHUP set an event instead of killing us, so runs stop cleanly.

    SIGHUP is what a closed terminal or SSH session sends: its default action
    would end passk at once and leave every setup and agent process running.

    The journal keeps what finished; the run can be resumed.  Whoever waits
    watches the event: a setup command is killed at once, attempts in flight
    are cancelled.  A second signal ends passk at once for people who really
    mean it, after killing every agent and setup process it started (the
    default action of the signal would leave them running under PID 1; as
    PID 1 itself, in the container, it would do nothing at all).
    """
    stop = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    previous = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}

    def handle(signum: int, frame: FrameType | None) -> None:
        if stop.is_set():
            REAPER.close()
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            os._exit(128 + signum)  # still here: PID 1 ignores a signal's default action
        stop.set()
        # After SIGHUP the terminal may be gone: writing to it fails (EIO), and
        # an exception raised here would surface wherever the main thread was.
        with contextlib.suppress(OSError, ValueError):
            print(
                f"passk: {signal.Signals(signum).name}: stopping (a setup at once, attempts in "
                "flight are cancelled; a second signal ends passk now)",
                file=sys.stderr,
            )

    for sig in previous:
        signal.signal(sig, handle)
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
