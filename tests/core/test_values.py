"""One definition of each value rule (``core/values.py``); every fast path equals its general one.

The rules: their ranges and edges; that their bounds make every sum passk
computes finite; that whatever an agent's usage records, the artifact
reads back.  Then the properties: the artifact's fast reader equals the
whole-document reader on documents full of the rules' edge values, and
the tau-bench importer's fast path equals its general path on any entry
(the real files' shape once lost each trial's duration and cost).
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from passk_action.agents.answer import parse_usage
from passk_action.core import values
from passk_action.core.cost import Price, Pricing, compare_spend, priced_usage, summarize_spend
from passk_action.core.model import (
    AgentInfo,
    Attempt,
    EvalSettings,
    Phase,
    RowRecord,
    Run,
    Usage,
    Version,
)
from passk_action.importers import ImportOptions
from passk_action.importers.tau_bench import entry_trial, fast_trial, parse
from passk_action.report.run_report import render_run_report, run_report_json
from passk_action.store.codec import dump_document, run_to_json, usage_from_json, usage_to_json
from passk_action.store.document import run_from_json
from passk_action.store.jsonfile import parse_json_file
from passk_action.store.lines import stream_canonical, stream_run_document
from support.artifacts import small_run_v2

PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
HUGE = 10**400

# ----------------------------------------------------------------------- the rules


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, 0), (12, 12), (12.0, 12), (10**12, 10**12),
        (10**12 + 1, None), (-1, None), (1.5, None), (True, None), ("3", None),
        (None, None), (float("nan"), None), (float("inf"), None), (HUGE, None), (1e300, None),
    ],
)  # fmt: skip
def test_a_token_count(value: object, expected: int | None) -> None:
    got = values.count(value)
    assert got == expected and (got is None or type(got) is int)


@pytest.mark.parametrize(
    ("rule", "top"),
    [
        (values.amount, values.MAX_USD),
        (values.seconds, values.MAX_SECONDS),
        (values.relative_limit, values.MAX_RELATIVE),
        (values.price, values.MAX_PRICE),
    ],
)
def test_each_range_holds_its_ends_and_nothing_beyond(rule: Any, top: int) -> None:
    assert rule(0) == 0.0 and rule(0.25) == 0.25 and rule(top) == float(top)
    assert type(rule(3)) is float
    for outside in (-1e-300, top * (1 + 1e-15), top + 1, HUGE, -HUGE, 1e308):
        assert rule(outside) is None, outside
    for not_a_number in (float("nan"), float("inf"), -float("inf"), True, False, "1", None, [1]):
        assert rule(not_a_number) is None, not_a_number


def test_finite_takes_any_float_a_json_number_can_be() -> None:
    assert values.finite(-1e308) == -1e308 and values.finite(10**308) == 1e308
    assert values.finite(HUGE) is None and values.finite(-HUGE) is None
    assert values.finite(float("nan")) is None and values.finite(True) is None


def test_a_cost_priced_from_the_largest_counts_and_prices_is_still_an_amount() -> None:
    """Whatever passk prices and writes, it reads back (the bound in values.py's docstring)."""
    top = Price(values.MAX_PRICE, values.MAX_PRICE)
    usage = Usage(values.MAX_TOKENS, values.MAX_TOKENS)
    cost = priced_usage(usage, Pricing(default=top)).cost_usd
    assert cost is not None and values.amount(cost) == cost


# ------------------------------------------------------- sums cannot overflow


def _run(cost: float, duration: float, n: int = 3, rows: int = 2) -> Run:
    attempts = tuple(
        Attempt(f"r{r}", i, Phase.MAIN, "deny", duration_s=duration, usage=Usage(1, 1, cost))
        for r in range(rows)
        for i in range(1, n + 1)
    )
    base = small_run_v2()
    digest = base.rows[0].input_digest
    records = tuple(RowRecord(f"r{r}", digest, "deny", False, ()) for r in range(rows))
    info = AgentInfo(Version.CANDIDATE, "x")
    return Run("0", base.dataset_digest, EvalSettings(k=n), info, "t", records, attempts, ())


def test_the_largest_amounts_and_durations_sum_finite_and_report() -> None:
    run = _run(float(values.MAX_USD), float(values.MAX_SECONDS), n=50, rows=40)
    spend = summarize_spend(run)
    assert spend.total_cost == 2000 * values.MAX_USD
    assert all(math.isfinite(v) for v in (spend.cost_per_decision, spend.latency_p95))  # type: ignore[arg-type]
    json.dumps(run_report_json(run), allow_nan=False)
    assert render_run_report(run)


def test_a_ratio_over_a_baseline_near_zero_is_capped_above_every_limit() -> None:
    spend = compare_spend(_run(5e-324, 0.0001), _run(float(values.MAX_USD), 1e9))
    assert spend.cost_increase == values.MAX_RELATIVE_CHANGE > values.MAX_RELATIVE
    json.dumps(spend.to_json(), allow_nan=False)


# ---------------------------------------- what an agent records, the artifact reads

usage_values = st.one_of(
    st.integers(-2, 10**13),
    st.sampled_from([0, 10**12, 10**12 + 1, HUGE, 1e12, 1e308, 5e-324, 12.0, True, "x", None]),
    st.floats(allow_nan=True, allow_infinity=True),
)
usage_docs = st.dictionaries(
    st.sampled_from(["input_tokens", "output_tokens", "cost_usd", "model", "cached", "priced"]),
    usage_values | st.text(max_size=3),
    max_size=6,
)


@PROPERTY
@given(raw=usage_docs)
def test_every_usage_an_agent_records_reads_back_from_the_artifact(raw: dict[str, Any]) -> None:
    usage, _ = parse_usage(raw)
    if usage is not None:
        text = json.dumps(usage_to_json(usage), allow_nan=False)
        assert usage_from_json(json.loads(text), "w") == usage


# --------------------------------------------- the artifact: fast reader = whole reader

LONE = "@LONE@"
"""Replaced by the escape of a lone surrogate in the file's text."""
edge_numbers = st.one_of(
    st.sampled_from(
        [
            0,
            0.0,
            1,
            0.5,
            1e9,
            1e9 + 1,
            10**9,
            10**9 + 1,
            1e12,
            10**12,
            10**12 + 1,
            HUGE,
            -1,
            -0.0,
            5e-324,
            1e308,
            float("nan"),
            float("inf"),
            12.0,
            True,
        ]
    ),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(10**15), 10**15),
)


plain_numbers = st.one_of(
    st.floats(0, 1e9, allow_subnormal=True), st.integers(0, 10**9), st.sampled_from([0.0, 1e9])
)


@st.composite
def attempt_docs(draw: st.DrawFn, row: str, n: int, edgy: bool) -> dict[str, Any]:
    """An attempt; ``edgy``: its values are drawn from the rules' edges, else plain ones."""
    numbers = edge_numbers if edgy else plain_numbers
    doc: dict[str, Any] = {"row": row, "n": n, "phase": "main"}
    doc["decision"] = draw(st.sampled_from(["deny", "approve", LONE] if edgy else ["deny"]))
    if draw(st.booleans()):
        doc["checks"] = {"window": draw(st.sampled_from(["open", LONE] if edgy else ["open"]))}
    doc["duration_s"] = draw(numbers)
    if draw(st.booleans()):
        keys = st.sampled_from(["input_tokens", "output_tokens", "cost_usd", "cached"])
        usage = draw(st.dictionaries(keys, numbers, min_size=1, max_size=3))
        if not edgy:  # counts are whole numbers
            usage = {k: int(v) if k.endswith("tokens") else v for k, v in usage.items()}
        doc["usage"] = usage
    return doc


@st.composite
def run_docs(draw: st.DrawFn) -> dict[str, Any]:
    """The golden run with six attempts, at most one of them (or k) at the rules' edges."""
    doc: dict[str, Any] = json.loads(json.dumps(_BASE))
    slots = [(row["id"], n) for row in doc["rows"] for n in range(1, 4)]
    edgy = draw(st.integers(-1, len(slots) - 1))
    doc["attempts"] = [draw(attempt_docs(row, n, i == edgy)) for i, (row, n) in enumerate(slots)]
    if draw(st.integers(0, 5)) == 0:
        doc["settings"]["k"] = draw(st.sampled_from([3, 1000, 1001, 10**12]))
    return doc


_BASE = run_to_json(small_run_v2())


def layout(doc: dict[str, Any]) -> str:
    """``codec.dump_document``'s layout, with NaN and Infinity written as another tool might."""

    def text(value: Any) -> str:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))

    parts = []
    for key, value in doc.items():
        if key in ("rows", "attempts") and value:
            items = ",\n".join("    " + text(item) for item in value)
            parts.append(f"  {json.dumps(key)}: [\n{items}\n  ]")
        else:
            parts.append(f"  {json.dumps(key)}: {text(value)}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def test_the_layout_is_the_codecs() -> None:
    assert layout(_BASE) == dump_document(_BASE, line_lists=("rows", "attempts"))


def _outcome(read: Any) -> tuple[str, Any]:
    try:
        return ("value", read())
    except Exception as exc:  # the same value, or the same error, whatever it is
        return (type(exc).__name__, str(exc))


@PROPERTY
@given(doc=run_docs())
def test_the_fast_reader_equals_the_whole_reader_on_the_rules_edges(
    tmp_path_factory: pytest.TempPathFactory, doc: dict[str, Any]
) -> None:
    text = layout(doc).replace(LONE, "\\ud800")
    path = tmp_path_factory.mktemp("v") / "run.json"
    path.write_text(text, encoding="utf-8")
    whole = _outcome(lambda: run_from_json(parse_json_file(path), str(path)))
    fast = stream_canonical(path, stream_run_document)
    if fast is not None:
        assert whole == ("value", fast)
    if whole[0] != "value":
        assert whole[0] == "ArtifactError", whole


# ------------------------------------------------ tau-bench: fast path = general path

rewards = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(10**20), 10**20),
    st.sampled_from([1, 1.0, 0.9999995, 0, HUGE, -HUGE, True, None, "1", [1]]),
)
tau_entries = st.fixed_dictionaries(
    {
        "task_id": st.one_of(st.integers(-5, 5), st.sampled_from(["3", "", None, True, 2.0])),
        "trial": st.one_of(st.integers(0, 3), st.sampled_from([None, "1", 1.0, False])),
        "reward": rewards,
    },
    optional={
        "info": st.one_of(
            st.fixed_dictionaries(
                {},
                optional={
                    "error": st.sampled_from(["boom", "", None, 0]),
                    "total_cost": edge_numbers,
                    "user_cost": edge_numbers,
                },
            ),
            st.sampled_from([None, [], "x"]),
        ),
        "duration": edge_numbers,
    },
) | st.sampled_from([None, [], "entry", 3])


@PROPERTY
@given(entry=tau_entries, position=st.integers(0, 5))
def test_the_tau_bench_fast_path_equals_the_general_path(entry: Any, position: int) -> None:
    fast = fast_trial(entry, 1, position, "w: [0]", {})
    if fast is not None:
        assert fast == entry_trial(entry, 1, position, "w: [0]", tau2=False)


def test_the_real_files_shape_keeps_each_trials_duration_and_cost() -> None:
    """The bug: integer task ids took the fast path, which dropped duration and total_cost."""
    doc = [
        {"task_id": 7, "trial": t, "reward": 1.0, "duration": 12.5,
         "info": {"total_cost": 0.031, "user_cost": 0.002}}
        for t in range(2)
    ]  # fmt: skip
    parsed = parse(doc, "tau.json", 0, ImportOptions())
    assert [(t.duration_s, t.usage) for t in parsed.trials] == [(12.5, Usage(cost_usd=0.031))] * 2
    assert parsed.trials[0] == entry_trial(doc[0], 0, 0, "tau.json: [0]", tau2=False)
    # The control: a string task id always went the general way and kept both.
    doc[0]["task_id"] = "7"
    general = parse(doc[:1], "tau.json", 0, ImportOptions()).trials[0]
    assert (general.duration_s, general.usage) == (12.5, Usage(cost_usd=0.031))


def test_a_ratio_of_sums_over_subnormal_costs_stays_finite() -> None:
    """The paired cost change divides by means that underflow to 0 for subnormal costs."""
    from passk_action.core.cost import ratio_change

    tiny, top = 5e-324, float(values.MAX_USD)
    change = ratio_change([(tiny, 1.0, top, 1.0), (tiny, 1.0, top, 1.0), (tiny, 1.0, 1.0, 1.0)])
    figures = (change.estimate, change.low, change.high, change.low_one_sided)
    assert all(f is not None and math.isfinite(f) for f in figures), figures
    assert change.estimate == pytest.approx(values.MAX_RELATIVE_CHANGE)
    json.dumps(change.to_json(), allow_nan=False)
