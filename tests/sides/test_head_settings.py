"""Which of the pull request's settings its own run takes (``sides/head_settings.py``)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from passk_action.core.model import Scoring
from passk_action.core.notes import HeadLimitCapped, HeadSettingsIgnored
from passk_action.inputs.agent_config import DEFAULT_SETUP_TIMEOUT_S
from passk_action.inputs.config import (
    BaselineConfig,
    Config,
    ConfirmConfig,
    GateConfig,
    RetryConfig,
    parse_config,
)
from passk_action.report.notes import sentence
from passk_action.sides.head_settings import (
    APPROVABLE_RULES,
    BOUNDED,
    FROM_BASE,
    FROM_HEAD,
    SCORER,
    settle,
)

PATH = Path("/repo/passk.yml")
BASE = """\
dataset: data.jsonl
k: 3
concurrency: 4
agent: {command: [python3, agent.py], timeout_s: 30, setup: [pip install x], setup_timeout_s: 60}
retry: {attempts: 0}
gate: {max_cost_increase: 0.25}
"""


def config(text: str) -> Config:
    return parse_config(text, PATH).config


def test_every_setting_is_either_the_heads_own_runs_or_the_bases() -> None:
    # A setting added to Config later must be placed on one side or the other.
    roots = {key.split(".")[0] for key, _ in FROM_BASE}
    assert {f.name for f in dataclasses.fields(Config)} == set(FROM_HEAD) | roots
    keys = {key for key, _ in FROM_BASE}
    for section, kind in (
        ("gate", GateConfig),
        ("confirm", ConfirmConfig),
        ("retry", RetryConfig),
        ("baseline", BaselineConfig),
        ("scoring", Scoring),
    ):
        assert {f"{section}.{f.name}" for f in dataclasses.fields(kind)} <= keys
    # A scoring setting added later must say whether the allow label approves the head's
    # (a rule passk reads) or it is the scorer's, the base's whatever a label says.
    assert {f.name for f in dataclasses.fields(Scoring)} == {*APPROVABLE_RULES, *SCORER}
    assert not set(APPROVABLE_RULES) & set(SCORER)


def test_the_heads_agent_runs_and_every_other_setting_is_the_bases() -> None:
    head = config(
        BASE.replace("python3, agent.py", "python3, v2.py")
        .replace("k: 3", "k: 5")
        .replace("attempts: 0", "attempts: 4")
        .replace("0.25", "0.5")
        + "baseline: {agent: {command: [evil]}, when_stale: warn}\n"
    )
    settled = settle(config(BASE), head)
    assert settled.config.agent is not None
    assert settled.config.agent.command == ("python3", "v2.py")
    assert (settled.config.k, settled.config.retry.attempts) == (3, 0)
    assert settled.config.gate.max_cost_increase == 0.25
    assert settled.config.baseline.agent is None
    assert settled.config.baseline.when_stale == "remeasure"
    [ignored] = settled.warnings
    assert ignored == HeadSettingsIgnored(
        "/repo/passk.yml",
        ("k", "gate.max_cost_increase", "retry.attempts", "baseline.agent", "baseline.when_stale"),
    )
    assert sentence(ignored) == (
        "/repo/passk.yml: the pull request's config changes k, gate.max_cost_increase, "
        "retry.attempts, baseline.agent, baseline.when_stale: not used, those settings come "
        "from the base commit's config (merge the change to the base first; one that weakens "
        "the gate is a protected change too)"
    )


def test_control_a_head_like_the_base_changes_nothing_and_says_nothing() -> None:
    assert settle(config(BASE), config(BASE)) == settle(config(BASE), config(BASE), allowed=True)
    assert settle(config(BASE), config(BASE)).config == config(BASE)
    assert settle(config(BASE), config(BASE)).warnings == ()


def test_allowed_by_label_the_heads_scoring_and_spend_limits_stand() -> None:
    head = config(BASE.replace("0.25", "0.5") + "scoring: {normalize: [casefold]}\n")
    allowed = settle(config(BASE), head, allowed=True)
    assert allowed.config.gate.max_cost_increase == 0.5
    assert allowed.config.scoring.normalize == ("casefold",)
    assert allowed.warnings == ()


SCORED = BASE + (
    "scoring: {by: command, command: [python3, scorer.py], judge_repeats: 3, timeout_s: 20}\n"
)
SAYS_RIGHT = "command: [sh, -c, 'echo {\"correct\": true}']"


@pytest.mark.parametrize(
    ("edit", "key"),
    [
        (("command: [python3, scorer.py]", SAYS_RIGHT), "scoring.command"),
        (("judge_repeats: 3", "judge_repeats: 1"), "scoring.judge_repeats"),
        (("timeout_s: 20}", "timeout_s: 2}"), "scoring.timeout_s"),
        (("by: command", "by: environment"), "scoring.by"),
        (None, None),
    ],
    ids=["attack-command", "attack-judge-repeats", "attack-timeout", "attack-by", "control"],
)
def test_approved_or_not_the_scorer_is_the_bases(
    edit: tuple[str, str] | None, key: str | None
) -> None:
    """Attack: a pull request with the allow label (it approved a relabeled row, say) also
    changes the scorer: a shell line that calls every answer right, fewer judgements, a
    shorter limit, or another judge.  The scorer stays the base's, and so do the head's
    scoring rules written for its scorer; one warning names the keys.  Control: the same
    approved head with the base's scorer gets its own rules (``normalize``)."""
    head_text = SCORED.replace("{by: command", "{normalize: [casefold], by: command")
    head = config(head_text.replace(*edit) if edit is not None else head_text)
    base = config(SCORED)
    for allowed in (True, False):
        settled = settle(base, head, allowed=allowed)
        got = settled.config.scoring
        assert (got.by, got.command, got.judge_repeats, got.timeout_s) == (
            "command",
            ("python3", "scorer.py"),
            3,
            20,
        )
        if key is None and allowed:
            assert got.normalize == ("casefold",) and settled.warnings == ()
            continue
        assert got == base.scoring
        warning = sentence(settled.warnings[0])
        assert len(settled.warnings) == 1
        assert "the pull request's config changes scoring.normalize" in warning
        if key is not None:
            assert f"{key}: not used" in warning or f"{key}," in warning, warning


@pytest.mark.parametrize(
    ("edit", "key", "head_value", "base_value"),
    [
        (("setup_timeout_s: 60", "setup_timeout_s: 1000000"), "agent.setup_timeout_s", 1e6, 60),
        (("timeout_s: 30", "timeout_s: 3600"), "agent.timeout_s", 3600, 30),
        (("concurrency: 4", "concurrency: 64"), "concurrency", 64, 4),
    ],
)
def test_a_head_raising_a_limit_gets_the_bases_with_a_warning(
    edit: tuple[str, str], key: str, head_value: float, base_value: float
) -> None:
    settled = settle(config(BASE), config(BASE.replace(*edit)))
    agent = settled.config.agent
    assert agent is not None
    held = {
        "agent.setup_timeout_s": agent.setup_timeout_s,
        "agent.timeout_s": agent.timeout_s,
        "concurrency": settled.config.concurrency,
    }
    assert held[key] == base_value
    [capped] = settled.warnings
    assert capped == HeadLimitCapped(
        "/repo/passk.yml", key, head_value, base_value, "" if key == "concurrency" else "s"
    )
    warning = sentence(capped)
    unit = "" if key == "concurrency" else "s"
    assert warning == (
        f"/repo/passk.yml: {key} is {head_value:g}{unit} in the pull request's config, above "
        f"the base's {base_value:g}{unit}: the base's {base_value:g}{unit} holds (a pull "
        "request may lower it, never raise it)"
    )


def test_control_a_head_lowering_a_limit_keeps_its_own_value() -> None:
    lower = (
        BASE.replace("setup_timeout_s: 60", "setup_timeout_s: 5")
        .replace("timeout_s: 30", "timeout_s: 3")
        .replace("concurrency: 4", "concurrency: 2")
    )
    settled = settle(config(BASE), config(lower))
    agent = settled.config.agent
    assert agent is not None
    assert (agent.timeout_s, agent.setup_timeout_s, settled.config.concurrency) == (3, 5, 2)
    assert settled.warnings == ()


def test_the_bounds_come_from_the_bases_agent_else_its_baseline_agent_else_the_defaults() -> None:
    http_head = config(
        "dataset: d\nagent: {http: {url: 'http://h/x', timeout_s: 500}, setup_timeout_s: 9000}\n"
    )
    only_baseline = config("dataset: d\nbaseline: {agent: {command: [a], setup_timeout_s: 20}}\n")
    settled = settle(only_baseline, http_head)
    agent = settled.config.agent
    assert agent is not None and agent.http is not None
    assert (agent.setup_timeout_s, agent.http.timeout_s) == (20, 30)  # 30: the HTTP default
    no_agent = config("dataset: d\n")
    settled = settle(no_agent, http_head)
    agent = settled.config.agent
    assert agent is not None
    assert agent.setup_timeout_s == DEFAULT_SETUP_TIMEOUT_S
    assert {key for key, _ in BOUNDED} == {
        "agent.timeout_s",
        "agent.setup_timeout_s",
        "agent.http.timeout_s",
    }
