"""The one error tree of passk, and the one place exceptions become exit codes.

Every problem a user can fix (bad config, dataset, artifact, usage, an API
answer we cannot use) is a :class:`PasskError` whose ``str()`` is a single
line naming *where* the problem is and *how to fix it*.  Edges translate
foreign exceptions into this tree with ``raise ... from exc``.  A failed gate
is a result, not an error: it never travels through here.
"""

from __future__ import annotations

import contextlib
import traceback
from collections.abc import Callable

EXIT_OK = 0
EXIT_GATE_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

REPORT_BUGS_AT = "https://github.com/passk-dev/passk-action/issues"
"""Where the one line of an internal error (a bug in passk, never the user's input) points."""


class PasskError(Exception):
    """A problem the user can fix. Exit code 2.

    ``where`` names the file (with line) or the config key; ``hint`` says how
    to fix it.  Both are optional but almost always present.
    """

    exit_code = EXIT_USAGE

    def __init__(self, message: str, *, where: str | None = None, hint: str | None = None):
        self.message = message
        self.where = where
        self.hint = hint
        super().__init__(self.one_line())

    def one_line(self) -> str:
        text = f"{self.where}: {self.message}" if self.where else self.message
        if self.hint:
            text = f"{text} ({self.hint})"
        # One line, always: a multi-line message breaks CI log annotations.
        return " ".join(text.split())


class UsageError(PasskError):
    """Wrong command-line arguments or an impossible combination of them."""


class ConfigError(PasskError):
    """The passk.yml config is invalid."""


class DatasetError(PasskError):
    """The labeled dataset is invalid."""


class ArtifactError(PasskError):
    """A run artifact or result file is unreadable, invalid, or does not match."""


class AgentError(PasskError):
    """The agent cannot be used at all (e.g. its command does not exist)."""


class AgentCouldNotRun(AgentError):
    """One version of the agent could not run at all, so nothing it did can be measured.

    Raised when its ``setup`` commands fail, or when its first attempts all
    fail the same way (a missing module, a bad API key): going on would only
    record crashes as if they said something about reliability.  Carries what
    a report needs to show the cause: ``version`` (``candidate`` or
    ``baseline``), ``reason`` (one line) and ``stderr_tail`` (the end of the
    agent's stderr, possibly several lines, possibly empty); ``during_setup``
    says it was a ``setup`` command, not the attempts, that failed.
    """

    def __init__(
        self,
        *,
        version: str,
        reason: str,
        stderr_tail: str = "",
        where: str | None = None,
        hint: str | None = None,
        attempts: int = 0,
        during_setup: bool = False,
    ):
        self.version = version
        self.during_setup = during_setup
        self.reason = reason
        self.stderr_tail = stderr_tail
        self.attempts = attempts
        last = last_line(stderr_tail)
        message = f"the {version} agent could not run: {reason}"
        if last and last not in reason:
            message += f"; stderr ends: {last}"
        super().__init__(message, where=where, hint=hint)


class UnreadableAnswers(ConfigError):
    """The agent answered, and the scoring rules could read a decision from none of its answers.

    The rules are wrong, not the agent (an extractor that matches nothing, a
    structured decision the agent does not send): said once, with a sample
    answer, and ``where`` names the scoring key to fix.
    """


def last_line(text: str) -> str:
    """The last non-blank line of ``text``, stripped ('' when there is none)."""
    for line in reversed(text.splitlines()):
        if line.strip():
            return line.strip()
    return ""


class GitError(PasskError):
    """A git operation the action needs failed (e.g. the base commit is missing)."""


class MalformedTree(GitError):
    """A commit's tree git itself never writes (a path twice, or under a symlink): not exported.

    Never a reason to fall back to the checkout: the commit is refused.
    """


class GitHubError(PasskError):
    """The GitHub API refused a request or answered something we cannot use."""

    def __init__(
        self,
        message: str,
        *,
        where: str | None = None,
        hint: str | None = None,
        status: int | None = None,
    ):
        self.status = status
        super().__init__(message, where=where, hint=hint)


class Interrupted(PasskError):
    """SIGINT/SIGTERM/SIGHUP stopped a run; what was recorded is kept and resumable."""

    exit_code = EXIT_INTERRUPTED


def crash_line(exc: BaseException) -> str:
    """The one line an exception ends a run with: a :class:`PasskError`'s own, or, for
    anything else (a bug in passk), its type and message and where to report it."""
    if isinstance(exc, PasskError):
        return exc.one_line()
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted"
    return (
        f"internal error: {type(exc).__name__}: {' '.join(str(exc).split())} "
        f"(a bug in passk: please report it at {REPORT_BUGS_AT}, "
        "with the traceback PASSK_DEBUG=1 prints)"
    )


def run_guarded(
    entry: Callable[[], int],
    *,
    error: Callable[[str], object],
    fatal: Callable[[str], object] | None = None,
    traceback_to: Callable[[str], object] | None = None,
) -> int:
    """Run one entry point (the CLI's command, the action); every exception becomes its
    exit code and one line: the boundary both shells share.

    ``error`` prints a :class:`PasskError`'s one line (the user can fix it);
    ``fatal`` prints an interruption or a bug in passk (default: ``error``);
    ``traceback_to``, when given (``PASSK_DEBUG``), gets a bug's traceback.
    A failed gate is a result, not an exception: it never comes through here.
    """
    say = _unbroken(fatal or error)
    tell = _unbroken(error)
    try:
        return entry()
    except PasskError as exc:
        tell(exc.one_line())
        return exc.exit_code
    except KeyboardInterrupt:
        say("interrupted")
        return EXIT_INTERRUPTED
    except Exception as exc:  # a bug in passk: one line, the traceback only on request
        if traceback_to is not None:
            _unbroken(traceback_to)(traceback.format_exc())
        # Not 0 or 1: anything else documents that the gate did not decide.  Not
        # the user's input error either, but 2 keeps that contract.
        say(crash_line(exc))
        return EXIT_USAGE


def _unbroken(print_line: Callable[[str], object]) -> Callable[[str], object]:
    """``print_line``, except that an output that is gone (a closed terminal: EIO) is skipped.

    The exit code is what a caller still reads once the terminal closed
    (SIGHUP); failing to print the line must not change it.
    """

    def printed(line: str) -> object:
        with contextlib.suppress(OSError, ValueError):
            return print_line(line)
        return None

    return printed
