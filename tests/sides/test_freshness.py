"""``sides/freshness.py``: what ``baseline.when_stale`` does with a stale committed baseline.

``plan_for`` is the rule both shells run before any agent: say it, and
re-measure, use it anyway, or stop.  (Whether a baseline is stale, from git,
is reached end to end in test_compare_base.py and test_action_stale.py.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from passk_action.core.notes import (
    BaselineBehind,
    Note,
    StaleBaseline,
    StaleBaselineHandled,
    StalePolicy,
)
from passk_action.engine.request import StalePlan, stale_reason
from passk_action.errors import ArtifactError
from passk_action.inputs.config import Config, parse_config
from passk_action.report.notes import sentence
from passk_action.sides.freshness import Freshness, plan_for

STALE = StaleBaseline("a" * 40, "b" * 40, ("agent.py",), ("agent.py",))
PRINT = (("agent.py", "0" * 40),)


def config_of(tmp_path: Path, when_stale: str) -> Config:
    text = f"dataset: d.jsonl\nagent: {{command: [a]}}\nbaseline: {{when_stale: {when_stale}}}\n"
    return parse_config(text, tmp_path / "passk.yml").config


def test_a_fresh_baseline_is_used_silently(tmp_path: Path) -> None:
    said: list[Note] = []
    plan = plan_for(Freshness(fingerprint=PRINT), config_of(tmp_path, "fail"), said.append)
    assert (plan, said) == (StalePlan(fingerprint=PRINT), [])


def test_a_stale_baseline_is_remeasured_and_said_so_before_anything_runs(tmp_path: Path) -> None:
    said: list[Note] = []
    freshness = Freshness(stale=STALE, fingerprint=PRINT)
    plan = plan_for(freshness, config_of(tmp_path, "remeasure"), said.append)
    assert plan == StalePlan(remeasure=STALE, fingerprint=PRINT)
    assert said == [StaleBaselineHandled(STALE, StalePolicy.REMEASURING)]


def test_warn_uses_it_with_a_warning_the_result_keeps(tmp_path: Path) -> None:
    said: list[Note] = []
    plan = plan_for(Freshness(stale=STALE), config_of(tmp_path, "warn"), said.append)
    used = StaleBaselineHandled(STALE, StalePolicy.USED_ANYWAY)
    assert plan == StalePlan(warning=used) and said == [used]
    assert used.announced  # the CLI does not print it again with the result


def test_fail_stops_naming_the_setting(tmp_path: Path) -> None:
    named = r"passk\.yml: baseline\.when_stale: the committed baseline .* is stale"
    with pytest.raises(ArtifactError, match=named):
        plan_for(Freshness(stale=STALE), config_of(tmp_path, "fail"), print)


@pytest.mark.parametrize(
    "stale",
    [STALE, StaleBaseline(None, "b" * 40, ("agent.py", "p.txt"), None)],
    ids=["changed", "no-fingerprint"],
)
def test_the_error_that_stops_on_a_stale_baseline_words_it_as_the_reports_do(
    stale: StaleBaseline,
) -> None:
    """The error is worded where it is raised (no lower part words a note), in the same words."""
    assert stale_reason(stale) == sentence(stale)


def test_a_baseline_only_behind_the_base_is_never_stale(tmp_path: Path) -> None:
    said: list[Note] = []
    behind = BaselineBehind("a" * 40, "b" * 40, 2, ("prompt.txt",))
    plan = plan_for(Freshness(behind=behind), config_of(tmp_path, "fail"), said.append)
    assert plan == StalePlan(warning=behind) and said == [behind]
