"""The scorer program: a process from the base commit that judges each recorded answer.

Under ``scoring.by: command`` (and ``by: environment`` with a ``command``) the
agent's answer is no decision until a scorer program says whether it is
right.  The program comes from the base commit's export, never the pull
request's copy, and runs as a user of its own (``PASSK_SCORER_USER``, else the
baseline's user: never the candidate's agent user), so neither the candidate's
code nor what its agent writes can change how answers are judged.

The protocol mirrors an agent's (``docs/protocol.md``): one JSON object on
stdin, one on stdout::

    stdin:  {"row_id", "attempt", "version", "input", "answer", "expected",
             "expected_checks", "checks", "judgement", "judge_repeats"}
    stdout: {"correct": true|false} or {"score": <number>}, optionally "reason"

The same limits as an agent's process: ``scoring.timeout_s`` per verdict,
1 MiB of stdout, a session of its own under the reaper, the runner's
credentials out of its environment; any secret-looking value of its
environment is masked in what is kept.  A scorer that crashes, hangs, answers
garbage or too much gives a verdict that is an error with the reason: the
attempt is then a ``scorer-error`` attempt, never a decision.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from ..core.model import Attempt, Json, Scoring, Verdict, expected_json
from ..core.scoring import SCORER_ERROR, UNSCORED, scorer_decision
from .answer import DEFAULT_OUTPUT_CAP, json_line, stderr_tail, storable_text, with_stderr
from .http import masker
from .identity import AGENT_USER_ENV, AgentUser, agent_user, baseline_env, spawn_as_agent
from .protocol import (
    BAD_OUTPUT,
    EXIT_STATUS,
    OUTPUT_TOO_LARGE,
    SPAWN_FAILED,
    TIMEOUT,
    AgentBase,
    AttemptCancelled,
    AttemptRequest,
    RetryAfters,
)
from .runner import (
    Agent,
    ProcessAgent,
    ProcessAgentSpec,
    exit_description,
    scrubbed_env,
    spawn_failure,
)

SCORER_USER_ENV = "PASSK_SCORER_USER"
"""Run the scorer program as this user; unset: the baseline's user (never the candidate's)."""
REASON_CHARS = 2000
"""How much of a scorer's ``reason`` is kept with its verdict."""
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL", re.IGNORECASE)


@dataclass(frozen=True)
class ScorerSpec:
    """How to start the scorer: its command, where (the base commit's export), as whom."""

    command: tuple[str, ...]
    cwd: Path
    timeout_s: float
    user: AgentUser | None = None
    judge_repeats: int = 1


def scorer_payload(
    request: AttemptRequest, attempt: Attempt, judgement: int, repeats: int
) -> bytes:
    """The one JSON object the scorer reads: the row, the recorded answer, the expected value."""
    row = request.row
    message: dict[str, Json] = {
        "row_id": row.id,
        "attempt": request.number,
        "version": request.version.value,
        "input": row.input,
        "answer": attempt.answer,
        "expected": expected_json(row.expected),
        "expected_checks": {name: value for name, value in row.expected_checks},
        "checks": dict(attempt.checks),
        "judgement": judgement,
        "judge_repeats": repeats,
        "state": request.state_dir,
    }
    return json_line(message)


def read_verdict(stdout: bytes) -> Verdict:
    """The scorer's stdout as a verdict; an error verdict saying what is wrong with it."""
    try:
        doc = json.loads(stdout.decode("utf-8"), parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        kind = "empty" if not stdout.strip() else f"not one JSON object ({type(exc).__name__})"
        return _bad(f"the scorer's stdout is {kind}")
    if not isinstance(doc, dict):
        return _bad("the scorer's stdout must be one JSON object")
    correct, score, reason = doc.get("correct"), doc.get("score"), doc.get("reason")
    if correct is not None and not isinstance(correct, bool):
        return _bad('the scorer\'s "correct" must be true or false')
    if score is not None and (
        isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score)
    ):
        return _bad('the scorer\'s "score" must be a finite number')
    if correct is None and score is None:
        return _bad('the scorer answered neither "correct" nor "score"')
    said = reason if isinstance(reason, str) else None
    return Verdict(
        correct=correct,
        score=None if score is None else float(score),
        reason=None if said is None else storable_text(said[:REASON_CHARS]),
    )


def _no_constant(name: str) -> Json:
    raise ValueError(f"{name} is not JSON")


def _bad(detail: str) -> Verdict:
    return Verdict(error=BAD_OUTPUT, detail=detail)


class ScorerProgram(ProcessAgent):
    """One process per verdict, started as agents are (``identity.spawn_as_agent``)."""

    def __init__(
        self,
        spec: ScorerSpec,
        parent_env: Mapping[str, str],
        *,
        output_cap: int = DEFAULT_OUTPUT_CAP,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        process = ProcessAgentSpec(
            command=spec.command,
            cwd=spec.cwd,
            timeout_s=spec.timeout_s,
            description="scorer " + " ".join(spec.command),
            user=spec.user,
        )
        super().__init__(process, parent_env, output_cap=output_cap, clock=clock)
        self.scorer = spec
        env = scrubbed_env(parent_env, process)
        self._env = env
        self._mask = masker(
            value for name, value in env.items() if _SECRET_NAME.search(name) and value
        )

    def verdict(self, payload: bytes) -> Verdict:
        """Start the scorer on ``payload``; its verdict, or an error verdict with the reason."""
        started = self._clock()
        try:
            proc = spawn_as_agent(
                self.spec.command, self.spec.user, cwd=self.spec.cwd, env=self._env
            )
        except OSError as exc:
            detail = spawn_failure(self.spec, exc, "scorer")
            return Verdict(error=SPAWN_FAILED, detail=detail, duration_s=self._clock() - started)
        captured, cancelled = self._see_through(proc, payload, started)
        duration = round(self._clock() - started, 4)
        if cancelled:
            raise AttemptCancelled("scorer")
        tail = stderr_tail(captured.stderr)
        if captured.outcome == TIMEOUT:
            reason = f"killed after the {self.spec.timeout_s:g}s timeout (scoring.timeout_s)"
            return self._error(TIMEOUT, with_stderr(reason, tail), duration)
        if captured.outcome == OUTPUT_TOO_LARGE:
            reason = f"stdout exceeded {self._output_cap} bytes, so the scorer was killed"
            return self._error(OUTPUT_TOO_LARGE, with_stderr(reason, tail), duration)
        if proc.returncode != 0:
            return self._error(
                EXIT_STATUS, with_stderr(exit_description(proc.returncode), tail), duration
            )
        said = read_verdict(bytes(captured.stdout))
        if said.error is not None:
            return self._error(said.error, with_stderr(said.detail or "", tail), duration)
        reason_text = None if said.reason is None else self._mask(said.reason)
        return replace(said, reason=reason_text, duration_s=duration)

    def _error(self, code: str, detail: str, duration: float) -> Verdict:
        return Verdict(error=code, detail=storable_text(self._mask(detail)), duration_s=duration)


class StateFolders:
    """Each attempt's own folder for the state it leaves (``by: environment`` with a scorer).

    One parent per agent, passk's, mode 711: a process may enter a folder whose name it
    knows but list none, and each attempt's folder has a random name, the agent user's
    while the attempt runs (``PASSK_STATE_DIR``, or ``state_dir`` in the request).  So an
    attempt cannot find another's state.  When the attempt ends, :func:`lock_state` gives
    it back to passk, read-only, before the scorer reads it; it is removed after.
    """

    def __init__(self, user: AgentUser | None) -> None:
        self._user = user
        self._parent: Path | None = None
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def attempt(self) -> Iterator[Path]:
        with self._lock:
            if self._parent is None:
                self._parent = Path(tempfile.mkdtemp(prefix="passk-state-"))
                self._parent.chmod(0o711)
            parent = self._parent
        folder = Path(tempfile.mkdtemp(dir=parent))
        try:
            if self._user is not None:
                os.chown(folder, self._user.uid, self._user.gid)
            folder.chmod(0o700)
            yield folder
        finally:
            _make_removable(folder)
            shutil.rmtree(folder, ignore_errors=True)

    def close(self) -> None:
        if self._parent is not None:
            shutil.rmtree(self._parent, ignore_errors=True)


def lock_state(folder: Path) -> None:
    """What the attempt left, passk's and read-only (readable by the scorer's user): nothing
    still running as the agent user may change it while the scorer reads."""
    for path in (folder, *folder.rglob("*")):
        with contextlib.suppress(OSError):
            if os.geteuid() == 0:
                os.lchown(path, 0, 0)
            if path.is_symlink():
                continue
            mode = path.stat().st_mode & 0o7777 & ~0o6000  # no set-id bit survives
            readable = 0o555 if path.is_dir() else 0o444
            path.chmod((mode | readable) & ~0o222)


def _make_removable(folder: Path) -> None:
    for path in (folder, *folder.rglob("*")):
        if path.is_dir() and not path.is_symlink():
            with contextlib.suppress(OSError):
                path.chmod(0o700)


class ScoredAgent(AgentBase):
    """An agent whose every answered attempt the scorer program judges, ``judge_repeats``
    times; what the agent says of its own answer is never a verdict."""

    def __init__(self, agent: Agent, scorer: ScorerProgram) -> None:
        self.agent = agent
        self.scorer = scorer
        self.description = agent.description
        spec = getattr(agent, "spec", None)
        self.states = StateFolders(getattr(spec, "user", None))

    def run(self, request: AttemptRequest) -> Attempt:
        if not request.scoring.by_environment:
            return self._judged(request)
        with self.states.attempt() as folder:
            return self._judged(replace(request, state_dir=str(folder)))

    def _judged(self, request: AttemptRequest) -> Attempt:
        attempt = self.agent.run(request)
        if request.state_dir is not None:
            lock_state(Path(request.state_dir))  # the scorer reads what the attempt left
        if attempt.error != UNSCORED:
            return attempt  # the agent crashed, hung or broke the protocol: nothing to judge
        repeats = max(1, self.scorer.scorer.judge_repeats)
        verdicts: list[Verdict] = []
        for judgement in range(1, repeats + 1):
            verdict = self.scorer.verdict(scorer_payload(request, attempt, judgement, repeats))
            verdicts.append(verdict)
            if verdict.error is not None:
                break  # a scorer that cannot judge this answer: one reason is enough
        return scorer_decision(attempt, verdicts, request.scoring)

    def cancel(self) -> None:
        cancel = getattr(self.agent, "cancel", None)
        if cancel is not None:
            cancel()
        self.scorer.cancel()

    def close(self) -> None:
        self.agent.close()
        self.states.close()

    def carry_retry_after(self, pending: RetryAfters, save: Callable[[RetryAfters], None]) -> None:
        self.agent.carry_retry_after(pending, save)

    def ready_in(self, request: AttemptRequest) -> float:
        return self.agent.ready_in(request)


def scorer_user(env: Mapping[str, str]) -> AgentUser | None:
    """Who the scorer runs as: ``PASSK_SCORER_USER``, else the baseline's user (the base
    commit's side), never the candidate's agent user; None: as passk."""
    own = env.get(SCORER_USER_ENV, "").strip()
    side = {**env, AGENT_USER_ENV: own} if own else baseline_env(env)
    return agent_user(side)


def scorer_spec(scoring: Scoring, cwd: Path, env: Mapping[str, str]) -> ScorerSpec | None:
    """The scorer ``scoring`` names, run in ``cwd`` (the base commit's export of the config's
    folder, or the config's folder itself); None when the rules need no scorer."""
    if not scoring.by_scorer:
        return None
    return ScorerSpec(
        command=scoring.command,
        cwd=cwd,
        timeout_s=scoring.timeout_s,
        user=scorer_user(env),
        judge_repeats=scoring.judge_repeats,
    )


def scored(agent: Agent, spec: ScorerSpec | None, parent_env: Mapping[str, str]) -> Agent:
    """``agent`` judged by the scorer ``spec`` names; ``agent`` itself without one."""
    if spec is None:
        return agent
    return ScoredAgent(agent, ScorerProgram(spec, parent_env))


__all__ = [
    "SCORER_ERROR",
    "SCORER_USER_ENV",
    "ScoredAgent",
    "ScorerProgram",
    "ScorerSpec",
    "scored",
]
