"""``scoring.command``, ``judge_repeats`` and ``timeout_s``: read once, every misuse one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from passk_action.cli import main
from passk_action.errors import ConfigError
from passk_action.inputs.config import load_config


def _write(tmp_path: Path, scoring: dict[str, Any]) -> Path:
    (tmp_path / "data.jsonl").write_text('{"id": "r1", "input": 1, "expected": "yes"}\n')
    path = tmp_path / "passk.yml"
    doc = {"dataset": "data.jsonl", "agent": {"command": ["true"]}, "scoring": scoring}
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def test_a_scorer_is_read_into_the_rules(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        {
            "by": "command",
            "command": "python3 judge.py --strict",
            "judge_repeats": 5,
            "timeout_s": 12,
            "threshold": 0.5,
        },
    )
    scoring = load_config(path).config.scoring
    assert scoring.command == ("python3", "judge.py", "--strict")
    assert (scoring.judge_repeats, scoring.timeout_s, scoring.threshold) == (5, 12.0, 0.5)
    assert scoring.by_scorer and scoring.by_outcome and not scoring.plain


@pytest.mark.parametrize(
    ("scoring", "where", "message"),
    [
        ({"by": "command"}, "scoring.command", "by: command needs the scorer program"),
        ({"command": ["python3", "s.py"]}, "scoring.command", "needs by: command"),
        ({"judge_repeats": 3}, "scoring.judge_repeats", "applies only to a scorer program"),
        ({"by": "command", "command": "'open"}, "scoring.command", "cannot split the command"),
        (
            {"by": "command", "command": ["s"], "fields": {"a": "exact"}},
            "scoring.fields",
            "does not apply when scoring.by is command",
        ),
    ],
)
def test_a_misused_scorer_key_is_one_line_naming_it(
    tmp_path: Path,
    scoring: dict[str, Any],
    where: str,
    message: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = _write(tmp_path, scoring)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert where in str(caught.value.where) and message in caught.value.message
    assert main(["run", "--config", str(path), "--out", str(tmp_path / "r.json")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and where in err[0]
