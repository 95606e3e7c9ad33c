"""How the GitHub runner reads a step's output as workflow commands, and lines that forge them.

FACTS.md C3, and the runner's own code (actions/runner, ``ActionCommand.cs``
``TryParseV2``/``TryParse`` and ``ActionCommandManager.TryProcessCommand``):

- the output is cut into lines as .NET's ``StreamReader.ReadLine`` does (at
  ``\\r\\n``, ``\\n`` or ``\\r``); stdout and stderr are read alike;
- ``::name k=v,k=v::data`` is a command when the line starts with ``::`` once
  its leading whitespace is trimmed (.NET ``TrimStart``: Unicode spaces,
  line and paragraph separators, ``\\t\\n\\v\\f\\r``, U+0085, U+00A0);
- failing that, the legacy ``##[name k=v;k=v]data`` form anywhere in the line;
- in both, only a registered name counts, compared without case;
- ``stop-commands`` with a token stops all processing until a command named
  by the token (``::<token>::`` or ``##[<token>]``) arrives; meanwhile
  nothing else is processed, a second ``stop-commands`` included.  The token
  must be non-empty and no command's name (``ValidateStopToken``).
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field

EXTENSIONS = frozenset(
    {
        "add-mask",
        "add-matcher",
        "add-path",
        "debug",
        "echo",
        "endgroup",
        "error",
        "group",
        "notice",
        "remove-matcher",
        "save-state",
        "set-env",
        "set-output",
        "warning",
    }
)
"""The runner's command extensions (``IActionCommandExtension.Command``)."""
STOP = "stop-commands"


@dataclass(frozen=True)
class Command:
    name: str
    properties: dict[str, str]
    data: str
    line: str


def read_lines(text: str) -> list[str]:
    """``text`` cut where ``StreamReader.ReadLine`` cuts it."""
    lines, current, index = [], [], 0
    while index < len(text):
        char = text[index]
        if char in "\r\n":
            lines.append("".join(current))
            current = []
            if char == "\r" and text[index + 1 : index + 2] == "\n":
                index += 1
        else:
            current.append(char)
        index += 1
    if current:
        lines.append("".join(current))
    return lines


def _dotnet_space(char: str) -> bool:
    return char in "\t\n\v\f\r\x85\xa0" or unicodedata.category(char) in ("Zs", "Zl", "Zp")


def _trim_start(line: str) -> str:
    index = 0
    while index < len(line) and _dotnet_space(line[index]):
        index += 1
    return line[index:]


def _unescape(text: str, pairs: tuple[tuple[str, str], ...]) -> str:
    for escaped, char in pairs:
        text = text.replace(escaped, char)
    return text


_DATA = (("%0D", "\r"), ("%0A", "\n"), ("%25", "%"))
_PROPERTY = (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%"))
_LEGACY = (("%3B", ";"), ("%0D", "\r"), ("%0A", "\n"), ("%5D", "]"), ("%25", "%"))


def parse_v2(line: str, registered: set[str]) -> Command | None:
    message = _trim_start(line)
    if not message.startswith("::"):
        return None
    end = message.find("::", 2)
    if end < 0:
        return None
    info = message[2:end]
    name, _, rest = info.partition(" ")
    if name.lower() not in registered:
        return None
    properties: dict[str, str] = {}
    for part in (p for p in rest.strip().split(",") if p):
        key, eq, value = part.partition("=")
        if eq and key and value:
            properties[key] = _unescape(value, _PROPERTY)
    return Command(name.lower(), properties, _unescape(message[end + 2 :], _DATA), line)


def parse_legacy(line: str, registered: set[str]) -> Command | None:
    start = line.find("##[")
    if start < 0:
        return None
    close = line.find("]", start)
    if close < 0:
        return None
    info = line[start + 3 : close]
    name, _, rest = info.partition(" ")
    if name.lower() not in registered:
        return None
    properties: dict[str, str] = {}
    for part in (p for p in rest.split(";") if p):
        key, eq, value = part.partition("=")
        if eq and key and value:
            properties[key] = _unescape(value, _LEGACY)
    return Command(name.lower(), properties, _unescape(line[close + 1 :], _LEGACY), line)


@dataclass
class Runner:
    """The command processing of one job step: feed it output, read what it obeyed."""

    processed: list[Command] = field(default_factory=list)
    registered: set[str] = field(default_factory=lambda: {*EXTENSIONS, STOP})
    stop_token: str | None = None

    def feed(self, output: str) -> Runner:
        for line in read_lines(output):
            self.line(line)
        return self

    def line(self, line: str) -> None:
        command = parse_v2(line, self.registered) or parse_legacy(line, self.registered)
        if command is None:
            return
        if self.stop_token is not None:
            if command.name == self.stop_token.lower():
                self.registered.discard(self.stop_token.lower())
                self.stop_token = None
            return
        if command.name == STOP:
            token = command.data
            if token and token.lower() not in self.registered and token != "pause-logging":
                self.stop_token = token
                self.registered.add(token.lower())
            return
        self.processed.append(command)

    def named(self, *names: str) -> list[Command]:
        return [c for c in self.processed if c.name in names]


def obeyed(output: str) -> list[Command]:
    """The commands the runner processes in ``output`` (one stream, from a fresh step)."""
    return Runner().feed(output).processed


ATTACKS = [
    "::stop-commands::pwned",
    "::add-mask::passed",
    "::error title=passk::forged: the gate passed",
    "::notice title=passk::forged notice",
    "::warning::forged warning",
    "::set-output name=passed::true",
    "   ::error::forged after spaces",
    "\t::error::forged after a tab",
    "\u00a0::error::forged after a no-break space",
    "\u3000::error::forged after an ideographic space",
    "::ERROR::forged in capitals",
    "##[set-output name=passed;]true",
    "Collecting foo ##[error]forged in the legacy form",
    "##[add-mask]passed",
    "##[stop-commands]pwned",
    "::add-matcher::/github/workspace/matcher.json",
    "::save-state name=x::forged",
]
"""Lines that the runner obeys when they reach the log as they are."""
HARMLESS = [f"line {i}: Collecting foo, Successfully installed bar" for i in range(len(ATTACKS))]
"""The control: as many lines of ordinary output."""
