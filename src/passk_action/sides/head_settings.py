"""What a pull request's ``passk.yml`` may change: its own candidate run, nothing else.

Every setting comes from the base commit's config.  The pull request's config
is read only for what shapes its own candidate run (:data:`FROM_HEAD`):

- ``agent``: its agent's ``command`` or ``http`` (URL, method, headers),
  ``cwd``, ``protocol``, its non-secret ``env`` (a runner credential there is
  refused when the config loads, ``core/runner_credentials.py``), its
  ``setup`` commands and ``fingerprint`` (a changed fingerprint is also a
  protected change: it decides staleness);
- its timeouts, ``agent.timeout_s``, ``agent.setup_timeout_s`` and
  ``agent.http.timeout_s``, and ``concurrency``, each **at most the base's**
  (:data:`BOUNDED`): the pull request may lower one, never raise it; a value
  above the base's gets the base's, with a warning naming both;
- ``dataset``: the file its rows are read from; every row the base gates must
  still be in it as it was (``protect.py`` judges each gated row);
- ``must_not_break.tags``: a tag it adds marks its rows too (a tag it removes
  is a protected change).

Any other difference (``k``, ``confirm``, ``scoring``, ``gate``, ``retry``,
``pricing``, ``baseline``) is not used: the base's value holds, and one
warning names the keys.  One that weakens the gate is a protected change as
well (``protect.py``); with the allow label, the head's ``scoring`` rules
(:data:`APPROVABLE_RULES`) and spend limits stand (a maintainer approved
them), every other setting stays the base's, and so does the scorer
(:data:`SCORER`: ``scoring.by``, ``command``, ``judge_repeats``,
``timeout_s``), approved or not.  Pure: configs in, a config and the warnings out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from ..core.model import Scoring
from ..core.notes import HeadLimitCapped, HeadSettingsIgnored
from ..inputs.agent_config import (
    DEFAULT_HTTP_TIMEOUT_S,
    DEFAULT_SETUP_TIMEOUT_S,
    DEFAULT_TIMEOUT_S,
    AgentConfig,
)
from ..inputs.config import Config

FROM_HEAD = ("path", "dataset", "agent", "concurrency", "must_not_break_tags")
"""The :class:`Config` fields the pull request's config gives (``path`` names the same file)."""


def _http_timeout(agent: AgentConfig | None) -> float:
    if agent is None or agent.http is None:
        return DEFAULT_HTTP_TIMEOUT_S
    return agent.http.timeout_s


BOUNDED: tuple[tuple[str, Callable[[AgentConfig | None], float]], ...] = (
    ("agent.timeout_s", lambda a: a.timeout_s if a is not None else DEFAULT_TIMEOUT_S),
    (
        "agent.setup_timeout_s",
        lambda a: a.setup_timeout_s if a is not None else DEFAULT_SETUP_TIMEOUT_S,
    ),
    ("agent.http.timeout_s", _http_timeout),
)
"""The head's limits the base's bound: each key, and its value in an agent block (None: the
default).  The base's value is its ``agent``'s, else its ``baseline.agent``'s, else the default."""

FROM_BASE: tuple[tuple[str, Callable[[Config], object]], ...] = (
    ("k", lambda c: c.k),
    ("scoring.normalize", lambda c: c.scoring.normalize),
    ("scoring.fields", lambda c: c.scoring.fields),
    ("scoring.extract", lambda c: c.scoring.extract),
    ("scoring.checks", lambda c: c.scoring.checks),
    ("scoring.threshold", lambda c: c.scoring.threshold),
    ("scoring.by", lambda c: c.scoring.by),
    ("scoring.command", lambda c: c.scoring.command),
    ("scoring.judge_repeats", lambda c: c.scoring.judge_repeats),
    ("scoring.timeout_s", lambda c: c.scoring.timeout_s),
    ("confirm.attempts", lambda c: c.confirm.attempts),
    ("confirm.must_not_break_attempts", lambda c: c.confirm.must_not_break_attempts),
    ("gate.block_on_any_regression", lambda c: c.gate.block_on_any_regression),
    ("gate.allow_label", lambda c: c.gate.allow_label),
    ("gate.remeasure_label", lambda c: c.gate.remeasure_label),
    ("gate.max_cost_increase", lambda c: c.gate.max_cost_increase),
    ("gate.max_latency_p95_increase", lambda c: c.gate.max_latency_p95_increase),
    ("gate.rule", lambda c: c.gate.rule),
    ("retry.attempts", lambda c: c.retry.attempts),
    ("retry.backoff_s", lambda c: c.retry.backoff_s),
    ("retry.max_backoff_s", lambda c: c.retry.max_backoff_s),
    ("pricing", lambda c: c.pricing),
    ("baseline.artifact", lambda c: c.baseline.artifact),
    ("baseline.agent", lambda c: c.baseline.agent),
    ("baseline.when_stale", lambda c: c.baseline.when_stale),
    ("baseline.added_rows_limit", lambda c: c.baseline.added_rows_limit),
)
"""Every other setting, by the key people write: the base's holds."""

APPROVABLE_RULES = ("normalize", "fields", "extract", "checks", "threshold")
"""The ``scoring`` rules the allow label approves from the head: declarative, read by
passk's own code, and listed field by field as protected changes."""
SCORER = ("by", "command", "judge_repeats", "timeout_s")
"""Who judges an answer (passk's rules, the agent's own report, a scorer program) and how
the program is run: always the base's, even approved.  The head's ``command`` would run
in the base commit's export, or be a shell line saying every answer is right."""


@dataclass(frozen=True)
class Settled:
    """The config a comparison runs on, and a warning for each head setting not used (notes:
    the shells word them before any agent runs, the result keeps them)."""

    config: Config
    warnings: tuple[HeadSettingsIgnored | HeadLimitCapped, ...] = ()


def settle(base: Config, head: Config, *, allowed: bool = False) -> Settled:
    """The base's config, with the head's own run's settings (:data:`FROM_HEAD`) in bounds.

    ``allowed``: the allow label approved the protected changes, so the
    head's scoring rules and spend limits stand too.
    """
    bounds = base.agent if base.agent is not None else base.baseline.agent
    named = str(head.path)
    warnings: list[HeadSettingsIgnored | HeadLimitCapped] = []
    agent = head.agent
    if agent is not None:
        agent, capped = _bounded_agent(agent, bounds, named)
        warnings += capped
    concurrency = head.concurrency
    if concurrency > base.concurrency:
        warnings.append(HeadLimitCapped(named, "concurrency", concurrency, base.concurrency, ""))
        concurrency = base.concurrency
    gate, scoring = base.gate, base.scoring
    if allowed:
        gate = replace(
            gate,
            max_cost_increase=head.gate.max_cost_increase,
            max_latency_p95_increase=head.gate.max_latency_p95_increase,
        )
        scoring = _approved_scoring(base.scoring, head.scoring)
    tags = tuple(dict.fromkeys((*base.must_not_break_tags, *head.must_not_break_tags)))
    config = replace(
        base,
        path=head.path,
        dataset=head.dataset,
        agent=agent,
        concurrency=concurrency,
        must_not_break_tags=tags,
        gate=gate,
        scoring=scoring,
    )
    ignored = [key for key, read in FROM_BASE if read(head) != read(config)]
    if ignored:
        warnings.append(HeadSettingsIgnored(named, tuple(ignored)))
    return Settled(config, tuple(warnings))


def _approved_scoring(base: Scoring, head: Scoring) -> Scoring:
    """The head's scoring rules the label approved, on the base's scorer; with another
    scorer (:data:`SCORER`) the head's rules were written for it, so none is taken."""
    if any(getattr(base, name) != getattr(head, name) for name in SCORER):
        return base
    return replace(base, **{name: getattr(head, name) for name in APPROVABLE_RULES})


def _bounded_agent(
    agent: AgentConfig, bounds: AgentConfig | None, named: str
) -> tuple[AgentConfig, list[HeadLimitCapped]]:
    """``agent`` with each of its limits at most the base's, and a warning for each cut."""
    warnings: list[HeadLimitCapped] = []
    limits: dict[str, float] = {}
    for key, read in BOUNDED:
        if key == "agent.http.timeout_s" and agent.http is None:
            continue
        value, bound = read(agent), read(bounds)
        if value > bound:
            warnings.append(HeadLimitCapped(named, key, value, bound, "s"))
        limits[key] = min(value, bound)
    http = agent.http
    if http is not None:
        http = replace(http, timeout_s=limits["agent.http.timeout_s"])
    return (
        replace(
            agent,
            timeout_s=limits["agent.timeout_s"],
            setup_timeout_s=limits["agent.setup_timeout_s"],
            http=http,
        ),
        warnings,
    )
