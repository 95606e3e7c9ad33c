"""The runner's channel, both ways: what it tells a step (its inputs, the job's facts, the
token) and what a step tells it (workflow commands on stdout, and the environment files).

Formats follow FACTS.md C1-C3: ``::name key=value::message`` with the
toolkit's escaping, ``GITHUB_OUTPUT`` in the heredoc form with a random
delimiter (as ``core.setOutput`` does), and a job summary capped at the
runner's 1 MiB per step.  Every line passes through :meth:`Workflow.scrub`,
so a secret registered here never reaches the log, even if a message
accidentally quotes it.

Only passk's own commands are commands.  The runner reads a line as one when,
once leading whitespace is trimmed, it starts with ``::``, or when it holds
the legacy ``##[name]`` form anywhere (runner ``ActionCommand.TryParseV2`` and
``TryParse``, FACTS.md C3), and it reads a step's stdout and stderr alike.  A
log line (:meth:`Workflow.line`) may quote text passk does not control: a
setup command's output, an agent's stderr, a row id of the pull request's
dataset.  Such a line, when the runner could read it as a command, goes out
between ``::stop-commands::<token>`` and ``::<token>::``, with a fresh random
token the text cannot know: the runner processes no command in between.
Every line goes through one stream (stdout, progress included) under one
lock, so such a window never overlaps one of passk's own commands, nor a
window on another stream that could end it early.
"""

from __future__ import annotations

import secrets
import threading
import unicodedata
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from ..errors import UsageError
from .urls import DEFAULT_API_URL, DEFAULT_SERVER_URL, run_page

SUMMARY_LIMIT_BYTES = 1024 * 1024
"""The runner refuses a step's job summary above 1 MiB, counted in bytes (FACTS.md C1)."""
SUMMARY_TRUNCATED_NOTE = "\n\n… truncated by passk to fit the 1 MiB job summary limit.\n"
CRLF = "\r\n"
TITLE = "passk"
"""The title of passk's annotations in the log and the run's summary."""
MAX_ERROR_ANNOTATIONS = 10
"""GitHub shows at most 10 error and 10 warning annotations per step (FACTS.md A3)."""


@dataclass(frozen=True)
class RunnerEnv:
    """What the runner says of the job a step runs in, from its environment (FACTS.md D1)."""

    workspace: Path
    """The checkout (``GITHUB_WORKSPACE``, else the working directory), resolved."""
    event_name: str
    event_path: str | None
    api_url: str
    server_url: str
    repository: str
    """``owner/name``; empty when the runner does not say."""
    run_id: str | None
    ref_name: str | None
    sha: str | None
    """The commit the workflow run is for (``GITHUB_SHA``)."""

    @property
    def run_page(self) -> str | None:
        """The workflow run's page, where its job summary is, when the runner names it."""
        return run_page(self.server_url, self.repository, self.run_id)


def read_runner_env(env: Mapping[str, str], cwd: Path) -> RunnerEnv:
    """The runner's facts about the job; a relative ``GITHUB_WORKSPACE`` is under ``cwd``."""
    workspace = Path(env.get("GITHUB_WORKSPACE") or cwd)
    if not workspace.is_absolute():
        workspace = cwd / workspace
    return RunnerEnv(
        workspace=workspace.resolve(),
        event_name=env.get("GITHUB_EVENT_NAME", "").strip(),
        event_path=env.get("GITHUB_EVENT_PATH") or None,
        api_url=(env.get("GITHUB_API_URL") or DEFAULT_API_URL).rstrip("/"),
        server_url=env.get("GITHUB_SERVER_URL") or DEFAULT_SERVER_URL,
        repository=env.get("GITHUB_REPOSITORY", "").strip(),
        run_id=env.get("GITHUB_RUN_ID") or None,
        ref_name=env.get("GITHUB_REF_NAME") or None,
        sha=env.get("GITHUB_SHA") or None,
    )


def action_input(env: Mapping[str, str], name: str) -> str:
    """The step's input ``name`` as the runner passes it: ``INPUT_<NAME>`` with hyphens kept
    (``INPUT_GITHUB-TOKEN``, FACTS.md D1), stripped; empty when unset or blank."""
    return env.get(f"INPUT_{name.upper()}", "").strip()


def job_token(env: Mapping[str, str]) -> str:
    """The token the step was given: the input ``github-token``, else ``GITHUB_TOKEN``."""
    return action_input(env, "github-token") or env.get("GITHUB_TOKEN", "").strip()


def visible(text: str, keep: str = "") -> str:
    """``text`` with every invisible or control character written as ``<U+XXXX>``.

    Annotations and log lines show agent- and dataset-controlled text (row
    ids, decisions, details): a bidi override could reorder what a reviewer
    reads (Trojan Source, CVE-2021-42574), a zero-width character could make
    two ids look the same, an ESC could start a terminal colour sequence in
    the log.  Characters in ``keep`` pass through (the toolkit escapes CR and
    LF in a command's message).
    """
    if text.isprintable() and text.isascii():
        return text
    return "".join(
        f"<U+{ord(c):04X}>"
        if c not in keep and unicodedata.category(c) in _INVISIBLE_CATEGORIES
        else c
        for c in text
    )


# Control, lone surrogate, format (bidi, zero-width, BOM, soft hyphen, tags),
# line and paragraph separators.
_INVISIBLE_CATEGORIES = frozenset(("Cc", "Cs", "Cf", "Zl", "Zp"))


def escape_data(text: str) -> str:
    """A command's message: ``%``, CR and LF escaped (toolkit ``escapeData``)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A command's property value: as data, plus ``:`` and ``,`` (toolkit ``escapeProperty``)."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def format_command(name: str, message: str, properties: Mapping[str, str] | None = None) -> str:
    """``::name k=v,k=v::message`` with both parts escaped so nothing can inject a command."""
    props = ",".join(
        f"{key}={escape_property(visible(value, keep=CRLF))}"
        for key, value in (properties or {}).items()
    )
    return f"::{name}{' ' + props if props else ''}::{escape_data(visible(message, keep=CRLF))}"


def could_be_command(line: str) -> bool:
    """Whether the runner could read ``line`` as a workflow command (FACTS.md C3).

    The ``::name::`` form counts once leading whitespace is trimmed (.NET's
    ``TrimStart``; Python's ``lstrip`` trims every character it does and
    more), the legacy ``##[name]`` form anywhere in the line.  A superset: the
    runner also wants a registered name, which this does not check.
    """
    return "##[" in line or line.lstrip().startswith("::")


def output_entry(name: str, value: str, delimiter: str) -> str:
    """One ``GITHUB_OUTPUT`` entry in the heredoc form (FACTS.md C2)."""
    if delimiter in value.split("\n"):
        # The runner would end the value early at that line; a fresh random
        # delimiter makes this practically impossible, so this is a bug guard.
        raise ValueError("the output value contains the delimiter on a line of its own")
    return f"{name}<<{delimiter}\n{value}\n{delimiter}\n"


def cap_summary(text: str, limit_bytes: int = SUMMARY_LIMIT_BYTES) -> str:
    """``text`` cut at a line boundary so that it, plus a note, fits in ``limit_bytes``."""
    data = text.encode("utf-8")
    if len(data) <= limit_bytes:
        return text
    room = limit_bytes - len(SUMMARY_TRUNCATED_NOTE.encode("utf-8"))
    cut = data[:room].decode("utf-8", errors="ignore")
    if "\n" in cut:
        cut = cut[: cut.rindex("\n")]
    return cut + SUMMARY_TRUNCATED_NOTE


class Workflow:
    """Writes workflow commands to ``out`` and the step's environment files named in ``env``."""

    def __init__(self, out: TextIO, env: Mapping[str, str]) -> None:
        self._out = out
        self._env = env
        self._secrets: list[str] = []
        self._lock = threading.Lock()
        self.errors_shown = 0

    def _write(self, text: str) -> None:
        with self._lock:
            self._out.write(text)
            self._out.flush()

    # -- secrets ------------------------------------------------------------

    def add_mask(self, value: str) -> None:
        """Register ``value`` with the runner's masker *before* anything could print it."""
        if not value or value in self._secrets:
            return
        # The mask line itself must carry the value; it is the one line not scrubbed.
        self._write(format_command("add-mask", value) + "\n")
        self._secrets.append(value)

    def scrub(self, text: str) -> str:
        for value in self._secrets:
            text = text.replace(value, "***")
        return text

    # -- log ------------------------------------------------------------------

    def line(self, text: str) -> None:
        """One log line, never a command: a newline or control character in ``text`` is
        shown, not obeyed, and a line the runner could read as a command goes out
        between ``::stop-commands::`` and a fresh random token (module docstring)."""
        shown = self.scrub(visible(text))
        if could_be_command(shown):
            token = secrets.token_hex(16)
            self._write(f"::stop-commands::{token}\n{shown}\n::{token}::\n")
        else:
            self._write(shown + "\n")

    def stream(self) -> LineStream:
        """A text stream whose every line is a :meth:`line` (the progress of a run)."""
        return LineStream(self.line)

    def command(self, name: str, message: str, **properties: str) -> None:
        """One of passk's own commands: its message and properties escaped (toolkit rules)."""
        self._write(self.scrub(format_command(name, self.scrub(message), properties)) + "\n")

    def error(self, message: str, *, title: str = TITLE) -> None:
        self.errors_shown += 1
        self.command("error", message, title=title)

    def warn(self, message: str, *, title: str | None = TITLE) -> None:
        """A ``::warning`` annotation, titled passk: what the action's ``warn`` callbacks are."""
        self.command("warning", message, **({"title": title} if title else {}))

    def note(self, message: str) -> None:
        """A ``::notice`` annotation, titled passk."""
        self.command("notice", message, title=TITLE)

    @contextmanager
    def group(self, title: str) -> Iterator[None]:
        self.command("group", title)
        try:
            yield
        finally:
            self._write("::endgroup::\n")

    # -- environment files -------------------------------------------------------

    def set_outputs(self, outputs: Mapping[str, str]) -> None:
        """Append ``outputs`` to ``GITHUB_OUTPUT`` (or log them when it is not set)."""
        path = self._env.get("GITHUB_OUTPUT")
        if not path:
            for name, value in outputs.items():
                self.line(f"passk: output {name}={value}")
            return
        entries = []
        for name, value in outputs.items():
            delimiter = f"ghadelimiter_{secrets.token_hex(16)}"
            entries.append(output_entry(name, self.scrub(value), delimiter))
        _append(Path(path), "".join(entries), "GITHUB_OUTPUT")

    def write_summary(self, markdown: str) -> None:
        """Append the report to ``GITHUB_STEP_SUMMARY``, keeping the step's total under 1 MiB."""
        path = self._env.get("GITHUB_STEP_SUMMARY")
        if not path:
            return
        target = Path(path)
        try:
            used = target.stat().st_size
        except OSError:
            used = 0
        text = cap_summary(self.scrub(markdown), max(0, SUMMARY_LIMIT_BYTES - used))
        _append(target, text, "GITHUB_STEP_SUMMARY")

    def annotate_rows(self, failures: Sequence[tuple[str, str]], *, title: str) -> None:
        """One ``::error`` per (row, reason), at most 10, then one line counting the rest."""
        for row, reason in failures[:MAX_ERROR_ANNOTATIONS]:
            self.error(f"{row}: {reason}", title=title)
        rest = len(failures) - MAX_ERROR_ANNOTATIONS
        if rest > 0:
            self.error(f"… and {rest} more blocking row(s): see the job summary", title=title)


class LineStream:
    """Enough of a text stream for a progress reporter: each complete line goes to ``line``."""

    def __init__(self, line: Callable[[str], None]) -> None:
        self._line = line
        self._pending = ""

    def write(self, text: str) -> int:
        *complete, self._pending = (self._pending + text).split("\n")
        for part in complete:
            self._line(part)
        return len(text)

    def flush(self) -> None:
        """Lines are written as they complete; a partial line waits for its end."""


def _append(path: Path, text: str, name: str) -> None:
    try:
        with path.open("a", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
    except OSError as exc:
        raise UsageError(
            f"cannot write the {name} file: {exc.strerror or exc}",
            where=f"{name}={path}",
            hint="run passk inside a GitHub Actions step, or unset the variable",
        ) from exc
