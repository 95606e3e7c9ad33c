"""A regular-expression search that an answer cannot make run away.

``scoring.extract.regex`` comes from the config, the text it searches from
the agent: Python's backtracking ``re`` takes exponential time on a pattern
like ``(\\w+\\s?)+:`` and an answer crafted for it, and has no timeout.  This
module matches the same syntax (parsed by Python's own regex parser) by
*memoized backtracking*: the search is backtracking in Python's order, so
group 1 is what ``re.search(pattern, text).group(1)`` gives, but a state
(instruction, position) that failed once is never tried again.  Without
backreferences whether a state can reach a match does not depend on how it
was reached, so each state is tried at most once: at most
``len(program) * (len(text) + 1)`` steps, whatever the answer.

What it refuses at load time (:class:`Unsupported`): backreferences,
lookahead and lookbehind, conditionals, atomic groups and possessive
repeats (they need the backtracking this avoids), and patterns whose
counted repeats expand past :data:`MAX_PROGRAM` instructions.  A search past
:data:`MAX_STEPS` steps (a very long answer) stops with :class:`TooLong`.
"""

from __future__ import annotations

import importlib
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

_c: Any
_parser: Any
try:  # Python 3.11+: the parser Python's own re uses
    _c = importlib.import_module("re._constants")
    _parser = importlib.import_module("re._parser")
except ImportError:  # pragma: no cover - Python 3.10
    _c = importlib.import_module("sre_constants")
    _parser = importlib.import_module("sre_parse")

MAX_PROGRAM = 20_000
"""Instructions a pattern may compile to (``x{1000}`` is a thousand)."""
MAX_STEPS = 5_000_000
"""Steps one search may take (about two seconds): only answers of megabytes reach it."""


class Unsupported(ValueError):
    """The pattern uses what only a backtracking matcher can do, or is too large."""


class TooLong(ValueError):
    """The search took more than :data:`MAX_STEPS` steps."""


_NEEDS_BACKTRACKING = {
    "GROUPREF": "a backreference",
    "GROUPREF_EXISTS": "a conditional group",
    "GROUPREF_IGNORE": "a backreference",
    "ASSERT": "a lookahead or lookbehind",
    "ASSERT_NOT": "a lookahead or lookbehind",
    "ATOMIC_GROUP": "an atomic group",
    "POSSESSIVE_REPEAT": "a possessive repeat",
}
_CHAR, _SPLIT, _JMP, _SAVE, _AT, _MATCH = range(6)
Pred = Callable[[str], bool]


@dataclass(frozen=True)
class Program:
    """A compiled pattern: instructions, and how many capturing groups it has."""

    code: tuple[tuple[Any, ...], ...]
    groups: int


def _category(name: Any, ascii_only: bool) -> Pred:
    def word(ch: str) -> bool:
        if ascii_only:
            return ch.isascii() and (ch.isalnum() or ch == "_")
        return ch.isalnum() or ch == "_"

    table: dict[Any, Pred] = {
        _c.CATEGORY_DIGIT: (lambda ch: "0" <= ch <= "9")
        if ascii_only
        else (lambda ch: ch.isdecimal()),
        _c.CATEGORY_SPACE: (lambda ch: ch in " \t\n\r\f\v")
        if ascii_only
        else (lambda ch: ch.isspace()),
        _c.CATEGORY_WORD: word,
        _c.CATEGORY_LINEBREAK: lambda ch: ch == "\n",
    }
    negated = {
        _c.CATEGORY_NOT_DIGIT: _c.CATEGORY_DIGIT,
        _c.CATEGORY_NOT_SPACE: _c.CATEGORY_SPACE,
        _c.CATEGORY_NOT_WORD: _c.CATEGORY_WORD,
        _c.CATEGORY_NOT_LINEBREAK: _c.CATEGORY_LINEBREAK,
    }
    if name in negated:
        positive = table[negated[name]]
        return lambda ch: not positive(ch)
    if name in table:
        return table[name]
    raise Unsupported(f"the character category {name} is not supported")


def _equals(char: str) -> Pred:
    return lambda ch: ch == char


def _between(low: int, high: int) -> Pred:
    return lambda ch: low <= ord(ch) <= high


def _folded(pred: Pred, flags: int) -> Pred:
    if not flags & re.IGNORECASE:
        return pred
    return lambda ch: pred(ch) or pred(ch.lower()) or pred(ch.upper()) or pred(ch.swapcase())


def _set(items: list[tuple[Any, Any]], flags: int) -> Pred:
    ascii_only = bool(flags & re.ASCII)
    negate = False
    tests: list[Pred] = []
    for op, av in items:
        if op is _c.NEGATE:
            negate = True
        elif op is _c.LITERAL:
            tests.append(_equals(chr(av)))
        elif op is _c.RANGE:
            tests.append(_between(av[0], av[1]))
        elif op is _c.CATEGORY:
            tests.append(_category(av, ascii_only))
        else:
            raise Unsupported(f"{op} inside a character set is not supported")
    inside = _folded(lambda ch: any(test(ch) for test in tests), flags)
    return (lambda ch: not inside(ch)) if negate else inside


class _Compiler:
    def __init__(self) -> None:
        self.code: list[list[Any]] = []

    def emit(self, *instruction: Any) -> int:
        if len(self.code) >= MAX_PROGRAM:
            raise Unsupported(
                f"it compiles to over {MAX_PROGRAM:,} instructions, a step each per character "
                "(use smaller counted repeats)"
            )
        self.code.append(list(instruction))
        return len(self.code) - 1

    def sequence(self, items: Any, flags: int) -> None:
        for op, av in items:
            self.item(op, av, flags)

    def item(self, op: Any, av: Any, flags: int) -> None:
        if op is _c.LITERAL:
            self.emit(_CHAR, _folded(_equals(chr(av)), flags))
        elif op is _c.NOT_LITERAL:
            same = _folded(_equals(chr(av)), flags)
            self.emit(_CHAR, lambda ch: not same(ch))
        elif op is _c.ANY:
            self.emit(_CHAR, (lambda ch: True) if flags & re.DOTALL else (lambda ch: ch != "\n"))
        elif op is _c.IN:
            self.emit(_CHAR, _set(av, flags))
        elif op is _c.BRANCH:
            self.branch(av[1], flags)
        elif op is _c.SUBPATTERN:
            group, add, remove, body = av
            inner = (flags | add) & ~remove
            if group:
                self.emit(_SAVE, 2 * group)
            self.sequence(body, inner)
            if group:
                self.emit(_SAVE, 2 * group + 1)
        elif op in (_c.MAX_REPEAT, _c.MIN_REPEAT):
            self.repeat(av, flags, greedy=op is _c.MAX_REPEAT)
        elif op is _c.AT:
            self.emit(_AT, av, flags)
        else:
            name = _NEEDS_BACKTRACKING.get(str(op), str(op).lower().replace("_", " "))
            raise Unsupported(
                f"it uses {name}, which needs a backtracking matcher (an answer could make "
                "it run for hours)"
            )

    def branch(self, alternatives: list[Any], flags: int) -> None:
        jumps = []
        for i, alternative in enumerate(alternatives):
            if i < len(alternatives) - 1:
                split = self.emit(_SPLIT, None, None)
                self.code[split][1] = len(self.code)
                self.sequence(alternative, flags)
                jumps.append(self.emit(_JMP, None))
                self.code[split][2] = len(self.code)
            else:
                self.sequence(alternative, flags)
        for jump in jumps:
            self.code[jump][1] = len(self.code)

    def repeat(self, av: Any, flags: int, *, greedy: bool) -> None:
        low, high, body = av
        for _ in range(low):
            self.sequence(body, flags)
        if high == _c.MAXREPEAT:
            loop = self.emit(_SPLIT, None, None)
            self.sequence(body, flags)
            self.emit(_JMP, loop)
            self._aim(loop, loop + 1, len(self.code), greedy)
            return
        splits = []
        for _ in range(high - low):
            split = self.emit(_SPLIT, None, None)
            splits.append(split)
            self.sequence(body, flags)
        for split in splits:
            self._aim(split, split + 1, len(self.code), greedy)

    def _aim(self, split: int, body: int, out: int, greedy: bool) -> None:
        self.code[split][1:] = [body, out] if greedy else [out, body]


@lru_cache(maxsize=64)
def compile_pattern(pattern: str) -> Program:
    """``pattern`` compiled for :func:`search`; ``re.error`` if Python cannot parse it.

    Python's warnings about the pattern (a FutureWarning for ``[[``) are
    kept out of the output: they are not errors, and their two lines would
    break passk's one-line messages.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parsed = _parser.parse(pattern)
    flags = parsed.state.flags
    if flags & re.VERBOSE:
        flags &= ~re.VERBOSE
    compiler = _Compiler()
    compiler.sequence(parsed, flags)
    compiler.emit(_MATCH)
    code = tuple(tuple(instruction) for instruction in compiler.code)
    return Program(code, parsed.state.groups - 1)


def _word_at(text: str, pos: int, ascii_only: bool) -> bool:
    if not 0 <= pos < len(text):
        return False
    ch = text[pos]
    return (ch.isalnum() or ch == "_") and (ch.isascii() or not ascii_only)


def _holds(kind: Any, flags: int, text: str, pos: int) -> bool:
    n = len(text)
    multiline = bool(flags & re.MULTILINE)
    if kind is _c.AT_BEGINNING:
        return pos == 0 or (multiline and text[pos - 1] == "\n")
    if kind is _c.AT_BEGINNING_STRING:
        return pos == 0
    if kind is _c.AT_END:
        if multiline:
            return pos == n or text[pos] == "\n"
        return pos == n or (pos == n - 1 and text[pos] == "\n")
    if kind is _c.AT_END_STRING:
        return pos == n
    ascii_only = bool(flags & re.ASCII)
    boundary = _word_at(text, pos - 1, ascii_only) != _word_at(text, pos, ascii_only)
    if kind is _c.AT_BOUNDARY:
        return boundary
    if kind is _c.AT_NON_BOUNDARY:
        return not boundary and n > 0
    raise Unsupported(f"the anchor {kind} is not supported")  # pragma: no cover


def search(program: Program, text: str, group: int = 1) -> str | None:
    """``re.search(pattern, text).group(group)`` without backtracking twice; None: no match.

    Raises :class:`TooLong` after :data:`MAX_STEPS` steps.  A group that took
    no part in the match is ``""`` (Python's None), so None means no match.
    """
    code = program.code
    stride = len(text) + 1
    failed: set[int] = set()
    steps = 0
    for start in range(stride):
        caps: list[int | None] = [None] * (2 * program.groups + 2)
        stack: list[tuple[int, int, int]] = [(0, start, -1)]
        while stack:
            pc, pos, undo = stack.pop()
            if undo >= 0:  # restoring a capture slot on the way back
                caps[undo] = pos if pos >= 0 else None
                continue
            while True:
                key = pc * stride + pos
                if key in failed:
                    break
                failed.add(key)
                steps += 1
                if steps > MAX_STEPS:
                    raise TooLong(f"it gave up after {MAX_STEPS:,} steps")
                instruction = code[pc]
                op = instruction[0]
                if op == _CHAR:
                    if pos < len(text) and instruction[1](text[pos]):
                        pc, pos = pc + 1, pos + 1
                        continue
                    break
                if op == _SPLIT:
                    stack.append((instruction[2], pos, -1))
                    pc = instruction[1]
                elif op == _JMP:
                    pc = instruction[1]
                elif op == _SAVE:
                    slot = instruction[1]
                    old = caps[slot]
                    stack.append((0, -1 if old is None else old, slot))
                    caps[slot] = pos
                    pc += 1
                elif op == _AT:
                    if not _holds(instruction[1], instruction[2], text, pos):
                        break
                    pc += 1
                else:  # _MATCH
                    begin, end = caps[2 * group], caps[2 * group + 1]
                    return "" if begin is None or end is None else text[begin:end]
    return None
