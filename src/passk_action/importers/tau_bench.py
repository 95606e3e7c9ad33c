"""Import tau-bench and tau2-bench result files.

Formats, as the harnesses write them:

- **tau-bench** (``sierra-research/tau-bench``, ``tau_bench/run.py`` writes
  ``[r.model_dump() for r in results]``; the model is ``EnvRunResult`` in
  ``tau_bench/types.py``): a JSON list of ``{"task_id": int, "reward":
  float, "info": {...}, "traj": [...], "trial": int}``.  When a trial raised,
  ``run.py`` records ``reward: 0.0`` with ``info: {"error": ..., "traceback":
  ...}``.
- **tau2-bench** (``sierra-research/tau2-bench``,
  ``src/tau2/data_model/simulation.py``, class ``Results``): a JSON object
  ``{"timestamp", "info", "tasks", "simulations": [...]}`` where each
  simulation has ``"task_id": str``, ``"trial": int | null``,
  ``"reward_info": {"reward": float, ...} | null``, ``"termination_reason"``
  and ``"duration"``.  The directory format (``Results.save(format="dir")``)
  writes ``results.json`` without ``simulations`` and every simulation to
  ``simulations/<id>.json`` beside it, with a summary per simulation in
  ``"simulation_index"`` (``"reward"`` instead of ``"reward_info"``) that is
  null until the run is checkpointed.  Like tau2's own loader, the importer
  reads the simulation files when that folder exists (pass the results
  folder or its ``results.json``), else the index.

Mapping (see the package docstring for what is common):

- success is ``reward`` within 1e-6 of 1, exactly tau-bench's
  ``is_successful``: the trial reports ``correct`` true, otherwise false
  (the row has no expected decision: the environment scored it);
- errored trials, and how each harness scores them (``--errors harness``,
  the default; ``--errors passk`` makes every one an error attempt): a
  tau-bench trial whose ``info`` holds an ``error`` (the harness raised; its
  ``run.py`` records reward 0, a failure); a tau2 simulation that ended with
  ``infrastructure_error`` (``tau2/metrics/agent_metrics.py`` drops it from
  every metric: left out), or with ``context_window_exceeded`` or without a
  reward (scored as it stands, not a success: a failure);
- skipped and reported, with file and index: an entry that is not an
  object, has no task id, or has a reward that is not a number.

Trials of a task are ordered by ``trial`` (then position in the file), and
files in the order given.  ``(task_id, trial)`` names a trial: a pair seen
again, in the same file or a later one, is a duplicate (reported, imported
once); a tau2 simulation with ``trial: null`` has no such name and is kept.
Task ids of several files are merged: import one environment (retail,
airline, ...) per artifact, as their ids overlap.
"""

from __future__ import annotations

import json
from typing import Any

from ..core import values
from ..core.model import Usage
from ..errors import ArtifactError
from . import (
    DROP,
    FAIL,
    PASS,
    ImportOptions,
    Parsed,
    Skipped,
    Trial,
    first_line,
    harness_usage,
    integer,
    number,
    seconds,
    shown,
    task_id,
)

SUCCESS_TOLERANCE = 1e-6
NON_EVALUABLE = frozenset({"infrastructure_error", "context_window_exceeded"})
"""Termination reasons that say the simulation never reached a gradable end."""
LEFT_OUT_BY_TAU2 = frozenset({"infrastructure_error"})
"""Of those, what tau2's metrics leave out entirely (the others score 0)."""
CONVENTION_TAU = "tau-bench's convention: a trial that raised is scored as a failure (reward 0)"
CONVENTION_TAU2 = (
    "tau2-bench's convention: infrastructure errors are left out; a context-window "
    "overflow or a missing reward is scored as a failure"
)

NAME = "tau-bench"
EXPECTED = (
    "a tau-bench results JSON (a list of {task_id, reward, trial}) "
    "or a tau2-bench one (an object with 'simulations')"
)
"""What a file must be, for hints when it is not."""


def is_success(reward: float) -> bool:
    """tau-bench's rule: a reward within 1e-6 of 1 is a success."""
    return abs(reward - 1.0) <= SUCCESS_TOLERANCE


def parse(doc: Any, where: str, file_index: int, options: ImportOptions) -> Parsed:
    """Map a tau-bench (list) or tau2-bench (``Results`` object) document to trials."""
    if isinstance(doc, list):
        return _parse_entries(doc, where, file_index, "", tau2=False)
    if is_tau2(doc):
        entries = doc.get("simulations") or []
        key = "simulations"
        if not entries and isinstance(doc.get("simulation_index"), list):
            entries, key = doc["simulation_index"], "simulation_index"
        if not isinstance(entries, list):
            raise ArtifactError(f"'{key}' must be a list", where=where)
        if not entries:
            raise ArtifactError(
                "this tau2-bench results.json lists no simulations",
                where=where,
                hint="a directory-format run keeps them in simulations/ beside results.json: "
                "pass the folder holding both",
            )
        return _parse_entries(entries, where, file_index, key, tau2=True, info=doc.get("info"))
    raise ArtifactError(
        "not a tau-bench or tau2-bench results file",
        where=where,
        hint=f"pass {EXPECTED}",
    )


def is_tau2(doc: Any) -> bool:
    """Whether ``doc`` is a tau2-bench ``Results`` document (either storage format)."""
    return isinstance(doc, dict) and ("simulations" in doc or "simulation_index" in doc)


def parse_directory(
    meta: Any, simulations: list[tuple[str, Any]], file_index: int, options: ImportOptions
) -> Parsed:
    """A directory-format tau2 run: ``results.json`` and its simulation files, read.

    ``simulations`` pairs each file's name (for reports) with its parsed
    content, in file-name order as tau2's own loader reads them.
    """
    names = [name for name, _ in simulations]
    entries = [doc for _, doc in simulations]
    info = meta.get("info") if isinstance(meta, dict) else None
    return _parse_entries(entries, "", file_index, "", tau2=True, info=info, names=names)


def _parse_entries(
    entries: list[Any],
    where: str,
    file_index: int,
    key: str,
    *,
    tau2: bool,
    info: Any = None,
    names: list[str] | None = None,
) -> Parsed:
    trials: list[Trial] = []
    skipped: list[Skipped] = []
    ids: dict[int, str] = {}
    kinds: dict[str, type] = {}
    for position, entry in enumerate(entries):
        if names is not None:
            here = names[position]
        else:
            here = f"{where}: {key}[{position}]" if key else f"{where}: [{position}]"
        fast = None if tau2 else fast_trial(entry, file_index, position, here, ids)
        trial = (
            fast if fast is not None else entry_trial(entry, file_index, position, here, tau2=tau2)
        )
        if not isinstance(trial, Skipped):
            trial = _one_kind_per_id(trial, entry, kinds, here)
        if isinstance(trial, Skipped):
            skipped.append(trial)
        else:
            trials.append(trial)
    return Parsed(
        tuple(trials),
        tuple(skipped),
        _description(info) if tau2 else "",
        convention=CONVENTION_TAU2 if tau2 else CONVENTION_TAU,
    )


def _one_kind_per_id(
    trial: Trial, entry: Any, kinds: dict[str, type], here: str
) -> Trial | Skipped:
    """``trial``, or Skipped when its ``task_id`` is 1 where another entry's is "1" (or back).

    A row id is text: task 1 and task "1" would become one row and mix their
    trials.  The first kind met names the row; entries of the other kind are
    left out, saying why.
    """
    raw = entry.get("task_id") if isinstance(entry, dict) else None
    kind = type(raw)
    first = kinds.setdefault(trial.task, kind)
    if first is kind:
        return trial
    shown = {int: trial.task, str: json.dumps(trial.task)}
    return Skipped(
        here,
        f"task_id {shown.get(kind, trial.task)} names the same row as task_id "
        f"{shown.get(first, trial.task)} of an earlier entry (row ids are text); "
        "give the two tasks different ids",
    )


def entry_trial(
    entry: Any, file_index: int, position: int, here: str, *, tau2: bool
) -> Trial | Skipped:
    """The trial of one entry, with every check and message (the general way)."""
    if not isinstance(entry, dict):
        return Skipped(here, "not a JSON object")
    task = task_id(entry.get("task_id"))
    if task is None:
        raw = entry.get("task_id")
        problem = values.row_id_problem(raw) if isinstance(raw, str) else None
        if problem is not None:
            return Skipped(here, f"task_id {problem}, which a row id may not")
        return Skipped(here, "no 'task_id' (a string or an integer is needed)")
    trial_number = integer(entry.get("trial"))
    order = (file_index, trial_number if trial_number is not None else -1, position)
    outcome = _outcome_tau2(entry) if tau2 else _outcome_tau(entry)
    if isinstance(outcome, Skipped):
        return Skipped(here, outcome.reason)
    decision, error, detail = outcome
    name = (task, trial_number) if trial_number is not None else None
    scores = DROP if error is not None and error.replace("-", "_") in LEFT_OUT_BY_TAU2 else FAIL
    dropped: list[str] = []
    return Trial(
        task,
        task,
        order,
        decision,
        error,
        detail,
        seconds(entry.get("duration"), left_out=dropped),
        where=here,
        key=name,
        harness_scores=scores,
        usage=_usage(entry, tau2=tau2, left_out=dropped),
        left_out=tuple(dropped),
    )


def fast_trial(
    entry: Any, file_index: int, position: int, here: str, ids: dict[int, str]
) -> Trial | None:
    """:func:`entry_trial` of a plain tau-bench record, faster; None for anything else.

    Plain: an object with an integer ``task_id`` and ``trial``, a finite
    ``reward`` and no ``info.error`` (the real files' shape).  It skips the
    general checks, not what they keep: duration and usage are read by the
    same functions, and a property test holds both ways equal.  ``ids``
    shares one row id string per task.
    """
    if type(entry) is not dict:
        return None
    task, trial, reward = entry.get("task_id"), entry.get("trial"), entry.get("reward")
    if type(task) is not int or type(trial) is not int:
        return None
    if type(reward) is not float or not -_INF < reward < _INF:  # NaN fails too
        reward = number(reward)  # an integer, or nothing a float can hold
        if reward is None:
            return None
    info = entry.get("info")
    if type(info) is dict and info.get("error"):
        return None
    name = ids.get(task)
    if name is None:
        name = ids[task] = str(task)
    # What _usage and seconds() do, with their calls skipped when nothing was logged
    # (the usual record): a value logged still goes through its rule.
    dropped: list[str] = []
    duration = entry.get("duration")
    cost = info.get("total_cost") if type(info) is dict else None
    return Trial(
        name,
        name,
        (file_index, trial, position),
        PASS if abs(reward - 1.0) <= SUCCESS_TOLERANCE else FAIL,  # is_success
        None,
        None,
        0.0 if duration is None else seconds(duration, left_out=dropped),
        here,
        (name, trial),
        usage=None if cost is None else _usage(entry, tau2=False, left_out=dropped),
        left_out=tuple(dropped) if dropped else (),
    )


_INF = float("inf")

Outcome = tuple[str | None, str | None, str | None] | Skipped


def _graded(reward_value: Any) -> Outcome:
    reward = number(reward_value)
    if reward is None:
        return Skipped("", f"reward {shown(reward_value)} is not a finite number")
    return (PASS if is_success(reward) else FAIL, None, None)


def _outcome_tau(entry: dict[str, Any]) -> Outcome:
    info = entry.get("info")
    if isinstance(info, dict) and info.get("error"):
        return (None, "harness-error", first_line(info.get("error")))
    return _graded(entry.get("reward"))


def _outcome_tau2(entry: dict[str, Any]) -> Outcome:
    reason = entry.get("termination_reason")
    if isinstance(reason, str) and reason in NON_EVALUABLE:
        return (None, reason.replace("_", "-"), f"tau2 termination_reason {reason}")
    if "reward_info" in entry:
        reward_info = entry.get("reward_info")
        if reward_info is None:
            return (None, "no-reward", "tau2 recorded no reward_info for this simulation")
        if not isinstance(reward_info, dict):
            return Skipped("", "'reward_info' is not an object")
        return _graded(reward_info.get("reward"))
    if entry.get("reward") is None:
        return (None, "no-reward", "tau2 recorded no reward for this simulation")
    return _graded(entry.get("reward"))


def _description(info: Any) -> str:
    """'<agent llm> on <domain>' from a tau2 ``info`` block, when present."""
    if not isinstance(info, dict):
        return ""
    agent = info.get("agent_info")
    env = info.get("environment_info")
    llm = agent.get("llm") if isinstance(agent, dict) else None
    domain = env.get("domain_name") if isinstance(env, dict) else None
    parts = [p for p in (llm, domain) if isinstance(p, str) and p]
    return " on ".join(parts)


def _usage(entry: dict[str, Any], *, tau2: bool, left_out: list[str]) -> Usage | None:
    """What the agent spent on a trial, where the harness logs it.

    tau2: the simulation's ``agent_cost`` and the ``usage`` (``prompt_tokens``,
    ``completion_tokens``) of its assistant messages.  tau-bench: a
    ``total_cost`` in ``info`` when the run kept one; its ``user_cost`` is the
    simulated user's, not the agent's, and is left out.  A value logged but
    breaking its rule is named in ``left_out``.
    """
    if not tau2:
        info = entry.get("info")
        if not isinstance(info, dict):
            return None
        return harness_usage(cost_usd=info.get("total_cost"), left_out=left_out)
    prompt = completion = None
    messages = entry.get("messages")
    for message in messages if isinstance(messages, list) else ():
        usage = message.get("usage") if isinstance(message, dict) else None
        if not isinstance(usage, dict) or message.get("role") != "assistant":
            continue
        for key, value in (
            ("prompt_tokens", usage.get("prompt_tokens")),
            ("completion_tokens", usage.get("completion_tokens")),
        ):
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                if key == "prompt_tokens":
                    prompt = (prompt or 0) + value
                else:
                    completion = (completion or 0) + value
            elif value is not None:
                left_out.append("input tokens" if key == "prompt_tokens" else "output tokens")
    return harness_usage(prompt, completion, entry.get("agent_cost"), left_out=left_out)
