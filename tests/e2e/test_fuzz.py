"""No input crashes passk: every surface fuzzed on a small fixed budget (issue 25).

Each surface of ``support/fuzzing.py`` (config, dataset, run and result artifacts,
the three importers, agent answers, worker answer lines, HTTP answers, and
issue 31's: extractors, ``passk add`` and outputs that name an input) gets
:data:`BUDGET` generated inputs, derandomized so every run of the suite
tries the same ones, seeded from the repository's examples and goldens.
Each must end ``ok`` or in one clean error line (exit 2): never an internal
error, never slower than ``fuzzing.TIME_BOUND_S``.  ``bench/fuzz.py`` runs
the same generators far longer.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from support import fuzzing

BUDGET = 60
SURFACES = fuzzing.surfaces()


@pytest.fixture(scope="module", autouse=True)
def _long_lived_agents() -> Iterator[None]:
    yield
    fuzzing.close_agents()


@pytest.mark.parametrize("surface", SURFACES, ids=[s.name for s in SURFACES])
def test_no_input_crashes_passk(
    surface: fuzzing.Surface, tmp_path_factory: pytest.TempPathFactory
) -> None:
    @settings(
        max_examples=BUDGET,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=surface.inputs)
    def check(case: Any) -> None:
        outcome = surface.run(case, tmp_path_factory.mktemp("fuzz"))
        assert outcome.kind != "crash", f"{surface.name}: {outcome.text}"

    check()


def test_the_fuzzer_finds_what_it_looks_for(tmp_path: Path) -> None:
    """The control: an input of a known crash class is reported as a crash, not passed over."""
    outcome = fuzzing.guarded(lambda: float(fuzzing.HUGE))
    assert outcome.kind == "crash" and outcome.text.startswith("OverflowError at")
    assert fuzzing.run_cli(["report", "missing.json"], tmp_path).kind == "error"
