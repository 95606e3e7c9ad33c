"""``baseline.added_rows_limit``: how many added rows the two-job gating job measures."""

from __future__ import annotations

from pathlib import Path

import pytest

from passk_action.errors import ConfigError
from passk_action.inputs.config import DEFAULT_ADDED_ROWS_LIMIT, load_config


def _load(tmp_path: Path, baseline: str) -> int:
    (tmp_path / "passk.yml").write_text(
        f"dataset: data.jsonl\nagent: {{command: [python3, a.py]}}\n{baseline}", "utf-8"
    )
    return load_config(tmp_path / "passk.yml").config.baseline.added_rows_limit


def test_the_limit_defaults_to_a_few_rows_and_may_be_zero(tmp_path: Path) -> None:
    assert _load(tmp_path, "") == DEFAULT_ADDED_ROWS_LIMIT == 5
    assert _load(tmp_path, "baseline: {added_rows_limit: 0}\n") == 0
    assert _load(tmp_path, "baseline: {added_rows_limit: 40}\n") == 40


@pytest.mark.parametrize("value", ["-1", "1001", "2.5", "many"])
def test_a_limit_out_of_range_is_one_line_naming_the_key(tmp_path: Path, value: str) -> None:
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, f"baseline: {{added_rows_limit: {value}}}\n")
    assert "added_rows_limit" in str(info.value) and "\n" not in str(info.value)
