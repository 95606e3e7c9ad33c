"""Make user- and agent-controlled text inert in GitHub Markdown.

Row ids, decisions, labels, check names and values, error details, agent
stderr and notes all reach a PR comment or a job summary.  None of them may
format text, open a link, embed an image or HTML, break a table, ping a
person, reference an issue, or reproduce one of our own hidden HTML-comment
markers (the sticky-comment marker and the machine-readable record): a row
id ``<!-- passk:sticky-comment -->`` must not make passk edit the wrong
comment.

Three helpers, one per place a value can appear:

- :func:`inline` for table cells and prose: one line, HTML-escaped,
  Markdown-escaped, autolinks and pings neutralized;
- :func:`code` for a raw value inside an inline code span (prose and lists,
  *not* table cells: a ``|`` inside a code span still splits a GFM table row);
- :func:`block` for multi-line text (stderr) inside a fenced code block.

Neutralizing pings and autolinks: GitHub turns ``@name`` into a mention,
``#123`` and ``GH-123`` into issue references, and bare ``http://``,
``https://`` and ``www.`` text into links, even after Markdown escaping.  We
insert U+2060 WORD JOINER right after ``@``, ``#``, ``GH-``, ``://`` and
``www.``: it is invisible, does not allow a line break, and is not a
character of a user name, number or domain, so the autolinker no longer
matches.  The cost: a value copied from the rendered page carries that
invisible character.  Code spans and blocks are shown verbatim by GitHub
(no mentions or links inside), so there the only change is the one that
stops ``<!--`` from opening an HTML comment in the raw comment body.

Control characters (NUL and friends) become U+FFFD; so do invisible format
characters: bidirectional overrides and isolates, so a value cannot visually
reorder the text around it, and zero-width characters (U+200B-U+200D, U+2060,
U+FEFF, ...), so ``r1`` and ``r1`` + ZERO WIDTH SPACE cannot pass for the same
row.  (An emoji joined with U+200D shows its parts separately.)
"""

from __future__ import annotations

import html
import re
import unicodedata
from typing import Literal

WORD_JOINER = "\u2060"
REPLACEMENT = "\ufffd"
ELLIPSIS = "…"

_BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)
# Cc: control characters (NUL, ESC, ...); Cs: lone surrogates, which cannot
# even be encoded as UTF-8 when the comment is posted; Cf: invisible format
# characters (bidi controls, zero-width space/joiners, word joiner, BOM, soft
# hyphen, tags); Zl/Zp: the line and paragraph separators.
_UNSAFE_CATEGORIES = frozenset(("Cc", "Cs", "Cf", "Zl", "Zp"))

_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}

# Punctuation that forms Markdown structure anywhere in a line: escapes,
# code, emphasis, links/images, table cells, strikethrough, and GitHub's
# math ($...$).  `_` is handled separately (intraword `_` is inert).
_ALWAYS_ESCAPED = frozenset("\\`*[]|~$")

# Characters that only matter at the start of a line (heading, list item,
# block quote is already HTML-escaped).  Our renderers put values right
# after "- " in lists, which is a line start for the nested content.
_LEADING_ESCAPED = frozenset("#+-=")
_LEADING_ORDERED = re.compile(r"\d{1,9}[.)]")

_AUTOLINKS = re.compile(r"://|(?i:www\.)|(?i:\bgh-)(?=\d)")

_COMMENT_OPEN = "<!--"
_COMMENT_OPEN_INERT = "<!" + WORD_JOINER + "--"


def _scrub(text: str, keep: str = "") -> str:
    """Replace control and bidi-override characters (except those in ``keep``)."""
    if text.isprintable() and not _BIDI_CONTROLS.intersection(text):
        return text  # the common case, without a per-character loop
    return "".join(
        REPLACEMENT
        if (c not in keep and unicodedata.category(c) in _UNSAFE_CATEGORIES) or c in _BIDI_CONTROLS
        else c
        for c in text
    )


def _one_line(text: str) -> str:
    """All whitespace runs (newlines, ``\\r``, tabs) to one space, ends trimmed."""
    return " ".join(text.split())


def _truncate_head(text: str, max_len: int) -> str:
    if max_len < 1:
        raise ValueError(f"max_len must be at least 1, got {max_len}")
    if len(text) <= max_len:
        return text
    return text[: max_len - 1] + ELLIPSIS


def _is_word_char(c: str) -> bool:
    return c.isalnum()


def _escape_markdown(text: str) -> str:
    out: list[str] = []
    start = 0
    ordered = _LEADING_ORDERED.match(text)
    if ordered:
        # "1. x" or "1) x" would start an ordered list: escape the delimiter.
        out.append(ordered.group()[:-1] + "\\" + ordered.group()[-1])
        start = ordered.end()
    elif text[:1] in _LEADING_ESCAPED:
        out.append("\\" + text[0])
        start = 1
        if text[0] == "#":
            out.append(WORD_JOINER)
    last = len(text) - 1
    for i in range(start, len(text)):
        c = text[i]
        if c in _HTML:
            out.append(_HTML[c])
        elif c in _ALWAYS_ESCAPED:
            out.append("\\" + c)
        elif c == "_":
            intraword = 0 < i < last and _is_word_char(text[i - 1]) and _is_word_char(text[i + 1])
            out.append("_" if intraword else "\\_")
        elif c == "!" and i < last and text[i + 1] == "[":
            out.append("\\!")
        elif c in "@#":
            out.append(c + WORD_JOINER)
        else:
            out.append(c)
    return _AUTOLINKS.sub(lambda m: m.group() + WORD_JOINER, "".join(out))


def plain(text: str, max_len: int = 80) -> str:
    """A value for a terminal: one line, control and bidi characters replaced, capped.

    Not Markdown: nothing is escaped, only what could move the cursor,
    colour the screen or reorder it is taken out (a row id may hold an
    ANSI escape).
    """
    return _truncate_head(_one_line(_scrub(text)), max_len)


def inline(text: str, max_len: int = 80) -> str:
    """``text`` as inert Markdown on one line, at most ``max_len`` visible characters.

    Whitespace (including newlines and ``\\r``) collapses to single spaces,
    then the text is cut to ``max_len`` characters ending in "…", then
    escaped: ``& < > "`` as HTML entities, Markdown punctuation with a
    backslash only where it can trigger formatting, and pings/autolinks
    broken with a word joiner (see the module docstring).  Safe in a table
    cell, a list item, a heading or a ``<summary>``.
    """
    visible = _truncate_head(_scrub(_one_line(text)), max_len)
    return _escape_markdown(visible)


def code(text: str, max_len: int = 80) -> str:
    """``text`` shown raw inside an inline code span, on one line.

    The backtick fence is one longer than the longest backtick run inside, so
    the value cannot close it; a value starting or ending with a backtick is
    padded with a space (which CommonMark strips).  Not for table cells: a
    ``|`` inside a code span still splits a GFM table row, use :func:`inline`
    there.  An empty value renders as an italic *(empty)*, outside any span,
    so it cannot be mistaken for a literal value.
    """
    visible = _truncate_head(_scrub(_one_line(text)), max_len)
    if not visible:
        return "*(empty)*"
    visible = visible.replace(_COMMENT_OPEN, _COMMENT_OPEN_INERT)
    fence = "`" * (_longest_backtick_run(visible) + 1)
    pad = " " if visible.startswith("`") or visible.endswith("`") else ""
    return f"{fence}{pad}{visible}{pad}{fence}"


def block(text: str, max_len: int = 2000, *, keep: Literal["head", "tail"] = "tail") -> str:
    """Multi-line ``text`` in a fenced code block it cannot close.

    Line endings become ``\\n``; other control characters become U+FFFD.
    Longer text is cut to ``max_len`` characters, keeping the *tail* by
    default: the last lines of stderr are where the error is.  The fence is
    at least three backticks and longer than any backtick run inside, so no
    line of the content can close it, and everything inside (including
    ``</details>`` or ``<img ...>``) is displayed, never interpreted.  The
    block starts at column 0: place it at the top level or in a
    ``<details>`` body, not inside a list item.
    """
    if max_len < 1:
        raise ValueError(f"max_len must be at least 1, got {max_len}")
    body = _scrub(text.replace("\r\n", "\n").replace("\r", "\n"), keep="\n\t")
    body = body.strip("\n")
    if len(body) > max_len:
        if keep == "tail":
            body = ELLIPSIS + body[len(body) - max_len + 1 :]
        else:
            body = body[: max_len - 1] + ELLIPSIS
    body = body.replace(_COMMENT_OPEN, _COMMENT_OPEN_INERT)
    fence = "`" * max(3, _longest_backtick_run(body) + 1)
    return f"{fence}\n{body}\n{fence}"


def _longest_backtick_run(text: str) -> int:
    runs = re.findall(r"`+", text)
    return max((len(r) for r in runs), default=0)


_TERMINAL_TOKEN = re.compile(r"\\([!-/:-@\[-`{-~])|(`+)")
_FENCE = re.compile(r"\s{0,3}(`{3,}|~{3,})")


def _plain_line(line: str) -> str:
    """One Markdown line as read: escapes and entities undone, code spans kept as written."""
    out: list[str] = []
    at = 0
    text_start = 0

    def text_until(end: int) -> None:
        out.append(html.unescape(line[text_start:end]))

    while True:
        match = _TERMINAL_TOKEN.search(line, at)
        if match is None:
            break
        if match.group(1) is not None:  # \` \* \| ...: the character itself
            text_until(match.start())
            out.append(match.group(1))
            text_start = at = match.end()
            continue
        fence = match.group(2)
        closing = re.compile(rf"(?<!`){fence}(?!`)").search(line, match.end())
        if closing is None:  # a lone backtick run is literal text
            at = match.end()
            continue
        text_until(match.start())
        out.append(line[match.start() : closing.end()])  # a code span, verbatim
        text_start = at = closing.end()
    text_until(len(line))
    return "".join(out)


def for_terminal(markdown: str) -> str:
    """Markdown this module escaped, as a person reads it in a terminal.

    The report stays Markdown (headings, lists, tables, code spans), but the
    escapes that keep values inert on GitHub are undone: ``\\```, ``\\*`` and
    ``&lt;`` read as `` ` ``, ``*`` and ``<``, and the invisible word joiners go.
    Code spans and fenced blocks are shown as written (their backslashes are
    the value's own).  Only for a terminal: the result is no longer inert.
    """
    lines: list[str] = []
    fence: str | None = None
    for line in markdown.split("\n"):
        opened = _FENCE.match(line)
        if fence is None and opened:
            fence = opened.group(1)
        elif fence is not None:
            closed = _FENCE.match(line)
            if (
                closed
                and closed.group(1)[0] == fence[0]
                and len(closed.group(1)) >= len(fence)
                and not line.strip().strip(fence[0])
            ):
                fence = None
        else:
            line = _plain_line(line)
        lines.append(line.replace(WORD_JOINER, ""))
    return "\n".join(lines)
