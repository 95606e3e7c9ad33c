"""Fitting Markdown under a size limit without breaking it: a cut closes what it opened.

GitHub refuses a comment over its limit and a check run's summary over 65,535
characters; a blind cut would leave a code fence or ``<details>`` open and swallow
the note that says the text was cut.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# FACTS.md A1: GitHub rejects comment bodies over 65,536 characters (observed,
# not documented, unit unknown); 60,000 leaves room for either counting.
COMMENT_LIMIT = 60000
DEFAULT_OVERFLOW_NOTE = "… truncated; the full report is in the job summary"

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_DETAILS_OPEN = re.compile(r"<details[\s>]", re.IGNORECASE)
_DETAILS_CLOSE = re.compile(r"</details\s*>", re.IGNORECASE)


@dataclass(frozen=True)
class _Open:
    """Markdown blocks open after some prefix of the body: a code fence, <details> depth."""

    fence: str | None
    details: int

    def closers(self, prefix_ends_in_newline: bool) -> str:
        text = "" if prefix_ends_in_newline else "\n"
        if self.fence is not None:
            text += self.fence + "\n"
        # A blank line before </details> ends any Markdown paragraph inside it.
        text += "\n</details>\n" * self.details
        return text


def _advance(state: _Open, line: str) -> _Open:
    fence = _FENCE.match(line.rstrip("\r\n"))
    if state.fence is not None:
        # Inside a fence nothing is markup; only a long-enough same-char fence closes it.
        if (
            fence
            and fence.group(2).strip() == ""
            and fence.group(1)[0] == state.fence[0]
            and len(fence.group(1)) >= len(state.fence)
        ):
            return _Open(None, state.details)
        return state
    if fence:
        return _Open(fence.group(1), state.details)
    opened = len(_DETAILS_OPEN.findall(line))
    closed = len(_DETAILS_CLOSE.findall(line))
    return _Open(None, max(0, state.details + opened - closed))


def fit_comment(
    body: str, limit: int = COMMENT_LIMIT, overflow_note: str = DEFAULT_OVERFLOW_NOTE
) -> str:
    """``body`` if it fits in ``limit`` characters, else a prefix cut at a line boundary,
    with every open code fence and ``<details>`` closed and ``overflow_note`` appended.

    The note goes after the closers so it is visible, not folded inside a
    collapsed section.  Only a first line longer than the limit is cut mid-line.
    """
    if len(body) <= limit:
        return body
    tail = "\n" + overflow_note + "\n"
    if len(tail) >= limit:
        raise ValueError(f"overflow note ({len(tail)} chars) does not fit in limit {limit}")
    state = _Open(None, 0)
    size = 0
    best: tuple[int, _Open] | None = None  # (prefix length, state after it)
    lines = body.splitlines(keepends=True)
    for line in lines:
        state = _advance(state, line)
        size += len(line)
        if size > limit:
            break
        ends_nl = line.endswith(("\n", "\r"))
        if size + len(state.closers(ends_nl)) + len(tail) <= limit:
            best = (size, state)
    if best is None:
        # Not even the first line fits: cut inside it, leaving room for the note.
        first = _advance(_Open(None, 0), lines[0])
        room = limit - len(tail) - len(first.closers(False))
        return body[: max(0, room)] + first.closers(False) + tail
    cut, open_blocks = best
    prefix = body[:cut]
    return prefix + open_blocks.closers(prefix.endswith(("\n", "\r"))) + tail
