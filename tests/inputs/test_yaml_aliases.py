"""YAML aliases cannot blow up a config or a dataset (issue 31, hangs).

A few lines of nested aliases expand to a billion values when passk walks
the document (an alias bomb), and ``&a [*a]`` holds itself.  Both are
refused with one line naming the file and the line, in ``passk.yml`` and
in a YAML dataset; the control, an anchor for shared defaults used a few
times, loads as before.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from passk_action.cli import main
from support.fuzzing import time_bound

AGENT = f"agent: {{command: [{sys.executable}, -c, 'print(1)']}}\n"


def _bomb(indent: str = "") -> str:
    lines = [f"{indent}l0: &l0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        lines.append(f"{indent}l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]")
    return "\n".join(lines) + "\n"


def _plan(tmp: Path, config: str, data: str, capsys: pytest.CaptureFixture[str]) -> str:
    (tmp / "passk.yml").write_text(config)
    (tmp / "data.yaml").write_text(data)
    with time_bound():
        code = main(["plan", "--config", str(tmp / "passk.yml")])
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal error" not in err, err
    if code == 0:
        return ""
    assert code == 2, err
    [line] = [x for x in err.splitlines() if x.startswith("passk: error:")]
    return line


ROWS = "rows:\n- {id: a, input: {n: 1}, expected: deny}\n- {id: b, input: {n: 2}, expected: deny}\n"


def test_an_alias_bomb_in_the_config_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = f"dataset: data.yaml\nk: 2\n{AGENT}agent_x:\n" + _bomb("  ")
    line = _plan(tmp_path, config, ROWS, capsys)
    assert "passk.yml" in line and "aliases expand" in line


def test_a_self_referencing_alias_in_the_config_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = f"dataset: data.yaml\nk: 2\n{AGENT}x: &a [*a]\n"
    line = _plan(tmp_path, config, ROWS, capsys)
    assert "passk.yml:4" in line and "refers to the node that holds it" in line


def test_an_alias_bomb_in_a_yaml_dataset_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = "rows:\n- id: a\n  expected: deny\n  input:\n" + _bomb("    ")
    line = _plan(tmp_path, f"dataset: data.yaml\nk: 2\n{AGENT}", data, capsys)
    assert "data.yaml" in line and "aliases expand" in line


def test_a_self_referencing_row_in_a_yaml_dataset_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = "rows:\n- &r {id: a, expected: deny, input: {q: *r}}\n"
    line = _plan(tmp_path, f"dataset: data.yaml\nk: 2\n{AGENT}", data, capsys)
    assert "data.yaml:2" in line and "refers to the node that holds it" in line


def test_control_shared_defaults_through_an_anchor_load(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = "rows:\n" + "".join(
        f"- {{id: r{i}, expected: deny, input: {{n: {i}, policy: {'&p' if i == 0 else '*p'}"
        f"{' {window: 30, region: eu}' if i == 0 else ''}}}}}\n"
        for i in range(50)
    )
    assert _plan(tmp_path, f"dataset: data.yaml\nk: 2\n{AGENT}", data, capsys) == ""
