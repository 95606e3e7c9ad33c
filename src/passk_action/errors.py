"""The one error tree of passk, and the one place exceptions become exit codes.

Every problem a user can fix (bad config, dataset, artifact, usage, an API
answer we cannot use) is a :class:`PasskError` whose ``str()`` is a single
line naming *where* the problem is and *how to fix it*.  Edges translate
foreign exceptions into this tree with ``raise ... from exc``.  A failed gate
is a result, not an error: it never travels through here.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_GATE_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


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


def last_line(text: str) -> str:
    """The last non-blank line of ``text``, stripped ('' when there is none)."""
    for line in reversed(text.splitlines()):
        if line.strip():
            return line.strip()
    return ""


class GitError(PasskError):
    """A git operation the action needs failed (e.g. the base commit is missing)."""


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
    """SIGINT/SIGTERM stopped a run; what was recorded is kept and resumable."""

    exit_code = EXIT_INTERRUPTED


def exit_code_for(exc: BaseException) -> int:
    """Map any exception reaching the CLI's edge to its exit code."""
    if isinstance(exc, PasskError):
        return exc.exit_code
    if isinstance(exc, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    # An unexpected exception is a bug in passk; it still must not look like a
    # passed gate, and it is not the user's input error either, but 2 keeps the
    # documented contract "anything but 0/1 means the gate did not decide".
    return EXIT_USAGE
