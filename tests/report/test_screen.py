"""``passk compare``'s verdict screen: golden text for each scenario, colour only when asked.

The whole screen is compared with a file in ``tests/golden/render/``
(``PASSK_UPDATE_GOLDEN=1`` rewrites it); the hostile scenario's row ids and
reasons hold control characters and escapes, which must reach no terminal.
"""

from __future__ import annotations

import pytest

from passk_action.report.screen import render_screen
from support.render_goldens import assert_golden
from support.scenarios import failed_scenario, hostile_scenario, passed_scenario

SCENARIOS = {"failed": failed_scenario, "passed": passed_scenario, "hostile": hostile_scenario}
WHERE = [("Full report", ".passk/report.md"), ("Result", "result.json")]


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_the_verdict_screen_golden(name: str) -> None:
    assert_golden(f"screen_{name}.txt", render_screen(SCENARIOS[name](), outputs=WHERE))


def test_colour_only_tints_the_verdict_and_only_when_asked() -> None:
    result = failed_scenario()
    plain, coloured = render_screen(result), render_screen(result, colour=True)
    assert "\x1b" not in plain
    assert coloured.replace("\x1b[1m\x1b[31m", "").replace("\x1b[0m", "") == plain
    assert coloured.count("\x1b[31m") == 1
    assert "\x1b[32m" in render_screen(passed_scenario(), colour=True)


def test_no_value_reaches_the_terminal_raw() -> None:
    screen = render_screen(hostile_scenario(), outputs=[("Full report", "a\x1b[2Jb.md")])
    assert all(c.isprintable() or c == "\n" for c in screen), repr(screen)
