"""What the check title and the job summary say when passk could not decide.

A version of the agent could not run, or passk stopped on an error (bad
input, GitHub, a bug in passk): nothing here claims a measurement, only the
reason and the fix.  The PR comment's versions of the same messages are
:func:`.comment.render_agent_failure_comment` and
:func:`.comment.render_could_not_finish_comment`.
"""

from __future__ import annotations

from ..errors import AgentCouldNotRun, last_line
from .escape import block, code, inline
from .phrases import DETAIL_LEN, REASON_LEN


def could_not_run_title(version: str, reason: str, stderr_tail: str) -> str:
    """``passk: the <version> agent could not run — <why>``, at most 200 characters.

    One sentence for every place a person looks first (the check-run title,
    the comment's heading, the job summary's heading), so they read alike.
    ``why`` is the last line of the agent's stderr, where a missing module or
    a refused key shows, else the reason.  Plain text: callers escape it.
    """
    cause = last_line(stderr_tail) or reason
    text = f"passk: the {version} agent could not run — {' '.join(cause.split())}"
    return text if len(text) <= 200 else text[:199] + "…"


def could_not_finish_title(reason: str) -> str:
    """``passk could not finish: <reason>``, one line of at most 200 characters (a check title)."""
    text = f"passk could not finish: {' '.join(reason.split())}"
    return text if len(text) <= 200 else text[:199] + "…"


def render_could_not_run(error: AgentCouldNotRun, *, marker: str | None = None) -> str:
    """The comment and job summary when a version of the agent could not run at all.

    The gate did not decide, and the text says so first; then the reason, the
    end of the agent's stderr (where a missing module or a refused key shows)
    and how to fix it.  Nothing claims a measurement that was not made.
    """
    lines = [marker] if marker is not None else []
    lines += [
        "## " + inline(could_not_run_title(error.version, error.reason, error.stderr_tail), 200),
        "",
        f"**The gate did not decide.** passk stopped before measuring the {error.version}: "
        "no further attempts and no confirmation were run, because its "
        + ("setup failed." if error.during_setup else "first attempts all failed."),
        "",
        f"**Reason:** {inline(error.reason, REASON_LEN)}",
    ]
    if error.where:
        lines += ["", f"**Where:** {code(error.where, 120)}"]
    if error.stderr_tail.strip():
        lines += ["", "**The end of its stderr:**", "", block(error.stderr_tail, DETAIL_LEN)]
    if error.hint:
        lines += ["", f"**Fix:** {inline(error.hint, REASON_LEN)}"]
    return "\n".join(lines) + "\n"
