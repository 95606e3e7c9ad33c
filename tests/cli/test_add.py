"""``passk add``: a production failure becomes a row, in the dataset's own format and style.

Each format (JSONL, YAML, CSV) in the layouts people write by hand: every
existing byte stays where it was, the new row reads back exactly as meant,
and written the way the file's last row is.  Each refusal is one line on
stderr, exit 2, and the file untouched.  Adding a row is not a protected
change; removing or relabeling a must-not-break row still is.
"""

from __future__ import annotations

import io
import json
import os
import shlex
from pathlib import Path

import pytest

from passk_action.cli import main
from passk_action.core.model import RowRecord
from passk_action.inputs.config import load_config
from passk_action.inputs.dataset import load_dataset, parse_dataset
from passk_action.sides.protect import (
    INPUT_CHANGED,
    ROW_RELABELED,
    ROW_REMOVED,
    ProtectedInputs,
    protected_changes,
)
from passk_action.sides.trusted import authoritative_dataset
from passk_action.store.artifact import write_run
from passk_action.store.results import write_result
from support.runs import attempts, run_of
from support.scenarios import failed_scenario

FAILURE = {"days": -3, "receipt": True, "note": "no"}
CONFIG = "dataset: {name}\nk: 3\nagent: {{command: [python3, agent.py]}}\n"

# name -> (the file as a person wrote it, the file after `passk add` of FAILURE)
LAYOUTS: dict[str, tuple[str, str]] = {
    "spaced.jsonl": (
        '{"id": "r-1", "input": {"days": 12, "receipt": true}, "expected": "approve", '
        '"must_not_break": true}\n'
        '{"id": "r-2", "input": {"days": 45, "receipt": true}, "expected": "deny"}\n',
        '{"id": "r-3", "input": {"days": -3, "receipt": true, "note": "no"}, '
        '"expected": "deny", "tags": ["production"], "must_not_break": true}\n',
    ),
    "compact-crlf-no-final-newline.jsonl": (
        '{"expected":"approve","id":"r-1","input":{"days":12},"tags":[],"must_not_break":false}'
        '\r\n{"expected":"deny","id":"r-2","input":{"days":45},"tags":["x"],'
        '"must_not_break":false}',
        '\r\n{"expected":"deny","id":"r-3","input":{"days":-3,"receipt":true,"note":"no"},'
        '"tags":["production"],"must_not_break":true}\r\n',
    ),
    "escaped-bom.jsonl": (
        '\ufeff{"id": "r-1", "input": "caf\\u00e9", "expected": "deny"}\n\n',
        '{"id": "r-2", "input": {"days": -3, "receipt": true, "note": "no"}, '
        '"expected": "deny", "tags": ["production"], "must_not_break": true}\n',
    ),
    "list.yaml": (
        "# refund requests\n"
        "- id: r-1\n"
        "  input:\n"
        "    days: 12\n"
        "    receipt: true\n"
        "  expected: deny\n"
        "  tags:\n"
        "  - a\n",
        "- id: r-2\n"
        "  input:\n"
        "    days: -3\n"
        "    receipt: true\n"
        "    note: 'no'\n"
        "  expected: deny\n"
        "  tags:\n"
        "  - production\n"
        "  must_not_break: true\n",
    ),
    "rows-blank-lines-quoted.yml": (
        "rows:\n"
        '  - "id": "r-1"\n'
        "    input: {days: 12, receipt: true}\n"
        "    expected: 'approve'\n"
        "    tags: [a, b]\n"
        "\n"
        '  - "id": "r-2"\n'
        "    input: {days: 45, receipt: true}\n"
        "    expected: 'deny'\n"
        "    tags: [a]\n",
        "\n"
        '  - "id": "r-3"\n'
        "    input: {days: -3, receipt: true, note: 'no'}\n"
        "    expected: 'deny'\n"
        "    tags: [production]\n"
        "    must_not_break: true\n",
    ),
    "flow-items.yaml": (
        "- {id: r-1, input: {days: 12}, expected: approve}\n"
        "- {id: r-2, input: {days: 45}, expected: deny}\n",
        "- {id: r-3, input: {days: -3, receipt: true, note: 'no'}, expected: deny, "
        "tags: [production], must_not_break: true}\n",
    ),
    "block-scalar-last.yaml": (
        "- id: r-1\n"
        "  expected: deny\n"
        "  tags:\n"
        "    - a\n"
        "  input: |\n"
        "    first line\n"
        "    # not a comment\n"
        "# the end\n",
        "- id: r-2\n"
        "  expected: deny\n"
        "  tags:\n"
        "    - production\n"
        "  input:\n"
        "    days: -3\n"
        "    receipt: true\n"
        "    note: 'no'\n"
        "  must_not_break: true\n",
    ),
    "document-end.yaml": (
        "- id: r-1\n  input: 1\n  expected: deny\n...\n",
        "- id: r-2\n"
        "  input:\n"
        "    days: -3\n"
        "    receipt: true\n"
        "    note: 'no'\n"
        "  expected: deny\n"
        "  tags:\n"
        "  - production\n"
        "  must_not_break: true\n",
    ),
    "minimal.csv": (
        "id,input,expected,tags,must_not_break\n"
        'r-1,"{""days"": 12}",approve,a|b,yes\n'
        "r-2,plain text,deny,,\n",
        'r-3,"{""days"": -3, ""receipt"": true, ""note"": ""no""}",deny,production,yes\n',
    ),
    "quoted-crlf-bom.csv": (
        '\ufeff"id","input","expected","tags","must_not_break"\r\n'
        '"r-1","{""days"":12,""x"":1}","approve","a","1"\r\n'
        '"r-2","x","deny","","0"\r\n',
        '"r-3","{""days"":-3,""receipt"":true,""note"":""no""}","deny","production","1"\r\n',
    ),
}


def project(tmp_path: Path, name: str, text: str) -> Path:
    (tmp_path / "passk.yml").write_text(CONFIG.format(name=name), encoding="utf-8")
    (tmp_path / name).write_bytes(text.encode("utf-8"))
    (tmp_path / "failure.json").write_text(json.dumps(FAILURE), encoding="utf-8")
    return tmp_path / name


def add(*argv: str) -> int:
    return main(["add", *argv])


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_a_row_is_appended_in_the_files_own_style(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    before, appended = LAYOUTS[name]
    path = project(tmp_path, name, before)
    monkeypatch.chdir(tmp_path)
    old = load_dataset(path)
    code = add("failure.json", "--expected", "deny", "--must-not-break", "--tag", "production")
    assert code == 0, capsys.readouterr().err
    after = path.read_bytes().decode("utf-8")
    trailing = {"block-scalar-last.yaml": "# the end\n", "document-end.yaml": "...\n"}
    trailing_text = trailing.get(name, "")
    assert after == before.removesuffix(trailing_text) + appended + trailing_text
    new = load_dataset(path)
    assert [r.content() for r in new.rows[:-1]] == [r.content() for r in old.rows]
    added = new.rows[-1]
    assert (added.input, added.expected, added.tags, added.must_not_break) == (
        FAILURE,
        "deny",
        ("production",),
        True,
    )
    out = capsys.readouterr().out
    assert f"passk: added row {added.id} to {name} (line {added.line}): expected deny, " in out
    assert "adding a row is not a protected change" in out


def test_what_passk_add_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project(tmp_path, "data.jsonl", LAYOUTS["spaced.jsonl"][0])
    monkeypatch.chdir(tmp_path)
    assert add("failure.json", "--expected", "deny", "--must-not-break") == 0
    assert capsys.readouterr().out.splitlines() == [
        "passk: added row r-3 to data.jsonl (line 3): expected deny, must-not-break",
        "passk: no --id given: r-3 is the next of r-1 … r-2",
        "next: commit data.jsonl in a pull request. Its gate runs the baseline on r-3 "
        "(3 attempts: a top-up, since no recorded baseline has the row) next to the candidate; "
        "adding a row is not a protected change.",
        "then: once a baseline recorded on the default branch (the action's `mode: baseline`, "
        "or `passk baseline`) is stable-correct on r-3, the ratchet locks it: no later pull "
        "request may break it. `passk history` shows when.",
    ]
    (tmp_path / "again.json").write_text('"a text request"', encoding="utf-8")
    assert add("again.json", "--expected", "approve", "--id", "prod-9", "--tag", "vip") == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "passk: added row prod-9 to data.jsonl (line 4): expected approve, tags vip"
    assert out[-1].startswith("then: prod-9 is not must-not-break, so the ratchet never locks")


def test_a_tag_the_config_protects_makes_the_row_must_not_break(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project(tmp_path, "data.jsonl", LAYOUTS["spaced.jsonl"][0])
    config = tmp_path / "passk.yml"
    config.write_text(config.read_text() + "must_not_break: {tags: [vip]}\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert add("failure.json", "--expected", "deny", "--tag", "vip") == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.endswith("must-not-break (tag vip is protected by the config), tags vip")


def test_stdin_and_a_dry_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = project(tmp_path, "data.jsonl", LAYOUTS["spaced.jsonl"][0])
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b'{"days": 90}')))
    assert add("-", "--expected", "deny", "--dry-run") == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == '{"id": "r-3", "input": {"days": 90}, "expected": "deny"}'
    assert out[-1] == "passk: dry run: nothing was written"
    assert path.read_text(encoding="utf-8") == LAYOUTS["spaced.jsonl"][0]


@pytest.mark.parametrize(
    ("ids", "expected_id", "how"),
    [
        (
            ["refund-007", "refund-012", "refund-009"],
            "refund-013",
            "the next of refund-007 … refund-012",
        ),
        (["r-9", "r-10", "other"], "r-11", "the next of r-9 … r-10"),
        (["alpha", "beta", "r-1"], "row-", "from its input's digest"),
    ],
)
def test_a_generated_id_follows_the_datasets_pattern_and_says_so(
    ids: list[str],
    expected_id: str,
    how: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    rows = "".join(
        json.dumps({"id": i, "input": n, "expected": "deny"}) + "\n" for n, i in enumerate(ids)
    )
    path = project(tmp_path, "data.jsonl", rows)
    monkeypatch.chdir(tmp_path)
    assert add("failure.json", "--expected", "deny") == 0
    new_id = load_dataset(path).rows[-1].id
    assert new_id.startswith(expected_id)
    assert f"passk: no --id given: {new_id} is {how}" in capsys.readouterr().out


def test_the_input_of_one_attempt_of_a_recorded_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Production sampled into its own dataset, run by passk; one attempt there failed."""
    path = project(tmp_path, "data.jsonl", LAYOUTS["spaced.jsonl"][0])
    prod = tmp_path / "prod.jsonl"
    prod.write_text(
        json.dumps({"id": "p-41", "input": FAILURE, "expected": "deny"}) + "\n", encoding="utf-8"
    )
    row = load_dataset(prod).rows[0]
    record = RowRecord(row.id, row.input_digest, "deny", False)
    run = run_of([record], attempts("p-41", ["deny", "approve", "deny"]))
    write_run(run, tmp_path / "prod-run.json")
    monkeypatch.chdir(tmp_path)
    argv = ["--from-run", "prod-run.json", "--row", "p-41", "--rows", "prod.jsonl"]
    assert add(*argv, "--attempt", "2", "--expected", "deny", "--must-not-break") == 0
    out = capsys.readouterr().out
    assert (
        "passk: its input is attempt 2 of row p-41 in prod-run.json (answered approve), "
        "from prod.jsonl" in out
    )
    assert load_dataset(path).rows[-1].input == FAILURE
    # A result file works too: its candidate run (or --version baseline).
    result = failed_scenario()
    write_result(result, tmp_path / "result.json")
    code = add(
        "--from-run", "result.json", "--row", "refund-001", "--rows", "prod.jsonl",
        "--expected", "approve",
    )  # fmt: skip
    assert code == 2  # prod.jsonl does not hold refund-001
    assert "prod.jsonl has no row 'refund-001'" in capsys.readouterr().err


def refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert add(*argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("passk: error: "), err
    return err


RUN = "--from-run run.json --row p-1 --rows prod.jsonl"
REFUSALS: list[tuple[str, str]] = [
    ("failure.json --expected deny --id r-2", "--id: the dataset already has a row 'r-2' (line 2)"),
    ("same.json --expected deny", "data.jsonl:2: this input is already in the dataset as row"),
    ("failure.json --expected dney", "--expected: no row expects 'dney'; the dataset's"),
    ("failure.json --expected ' '", "--expected: the expected decision is empty"),
    ("failure.json --expected deny --tag ''", "--tag: a tag is empty"),
    ("--expected deny", "passk add: no input given"),
    ("missing.json --expected deny", "missing.json: cannot read: No such file or directory"),
    ("broken.json --expected deny", "broken.json:1: is not JSON: Expecting property name"),
    ("nan.json --expected deny", "nan.json: is not JSON: NaN is not valid JSON"),
    ("empty.json --expected deny", "empty.json: is empty"),
    ("failure.json --expected deny --row p-1", "--row: --row needs --from-run"),
    (f"failure.json {RUN} --expected deny", "failure.json: give the input as a file or with"),
    ("--from-run run.json --row p-1 --expected deny", "--rows: --from-run needs --rows"),
    (f"{RUN.replace('p-1', 'p-9')} --expected deny", "run.json: the run has no row 'p-9'"),
    (
        "--from-run run.json --row p-1 --rows other.jsonl --expected deny",
        "other.jsonl:1: row 'p-1' of other.jsonl has another input than the run measured",
    ),
    (f"{RUN} --attempt 7 --expected deny", "--attempt: row 'p-1' has no attempt 7 in the run"),
    (f"{RUN} --attempt 1 --expected deny", "answered 'deny', the expected decision: it is not"),
]


@pytest.mark.parametrize(("argv", "message"), REFUSALS)
def test_each_refusal_is_one_line_and_leaves_the_file_alone(
    argv: str,
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    before = LAYOUTS["spaced.jsonl"][0]
    path = project(tmp_path, "data.jsonl", before)
    (tmp_path / "same.json").write_text('{"receipt": true, "days": 45}', encoding="utf-8")
    (tmp_path / "broken.json").write_text("{days: 3}", encoding="utf-8")
    (tmp_path / "nan.json").write_text('{"days": NaN}', encoding="utf-8")
    (tmp_path / "empty.json").write_text("\n", encoding="utf-8")
    (tmp_path / "prod.jsonl").write_text('{"id": "p-1", "input": 1, "expected": "deny"}\n')
    (tmp_path / "other.jsonl").write_text('{"id": "p-1", "input": 2, "expected": "deny"}\n')
    prod = load_dataset(tmp_path / "prod.jsonl").rows[0]
    record = RowRecord("p-1", prod.input_digest, "deny", False)
    write_run(run_of([record], attempts("p-1", ["deny", "approve", "deny"])), tmp_path / "run.json")
    monkeypatch.chdir(tmp_path)
    err = refused(shlex.split(argv), capsys)
    assert message in err
    assert path.read_text(encoding="utf-8") == before


CSV = 'id,input,expected\nr-1,"{""days"": 12}",approve\nr-2,text,deny\n'
CSV_TAGS = 'id,input,expected,tags\nr-1,"{""days"": 12}",approve,\nr-2,text,deny,\n'
FORMAT_REFUSALS: list[tuple[str, str, str, str]] = [
    ("data.csv", CSV, "failure.json --expected deny --tag x", "data.csv:1: the CSV has no tags"),
    ("data.csv", CSV, "failure.json --expected deny --must-not-break", "no must_not_break column"),
    ("data.csv", CSV, "number.json --expected deny", "this input is the JSON value 42"),
    ("data.csv", CSV, "bracket.json --expected deny", "this input is text starting with { or ["),
    ("data.csv", CSV_TAGS, "failure.json --expected deny --tag 'a|b'", "--tag: the tag 'a|b'"),
    (
        "data.yaml",
        "[{id: r-1, input: 1, expected: deny}]\n",
        "failure.json --expected deny",
        "data.yaml:1: cannot append to this file keeping its layout: the rows are one flow list",
    ),
]


@pytest.mark.parametrize(("name", "text", "argv", "message"), FORMAT_REFUSALS)
def test_a_row_the_format_cannot_hold_is_refused(
    name: str,
    text: str,
    argv: str,
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = project(tmp_path, name, text)
    (tmp_path / "number.json").write_text("42", encoding="utf-8")
    (tmp_path / "bracket.json").write_text('"[not json, just text"', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert message in refused(shlex.split(argv), capsys)
    assert path.read_text(encoding="utf-8") == text


def test_a_new_label_needs_saying_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = project(tmp_path, "data.jsonl", LAYOUTS["spaced.jsonl"][0])
    monkeypatch.chdir(tmp_path)
    assert add("failure.json", "--expected", "escalate", "--new-label") == 0
    assert load_dataset(path).rows[-1].expected == "escalate"
    # Labels compare as the config's scoring does: with casefold, "DENY" is "deny".
    config = tmp_path / "passk.yml"
    config.write_text(config.read_text() + "scoring: {normalize: [casefold]}\n", encoding="utf-8")
    (tmp_path / "more.json").write_text('{"days": 400}', encoding="utf-8")
    assert add("more.json", "--expected", "DENY") == 0


def test_the_dataset_keeps_its_mode_and_a_symlink_stays_a_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = project(tmp_path, "rows.jsonl", LAYOUTS["spaced.jsonl"][0])
    real.chmod(0o640)
    link = tmp_path / "data.jsonl"
    link.symlink_to("rows.jsonl")
    (tmp_path / "passk.yml").write_text(CONFIG.format(name="data.jsonl"), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert add("failure.json", "--expected", "deny") == 0
    assert link.is_symlink() and os.stat(real).st_mode & 0o777 == 0o640
    assert len(load_dataset(link).rows) == 3


# --- the gate's protected-change rules, as today -------------------------------------------


def snapshot(tmp_path: Path, rows: str) -> ProtectedInputs:
    (tmp_path / "passk.yml").write_text(CONFIG.format(name="data.jsonl"), encoding="utf-8")
    config = load_config(tmp_path / "passk.yml").config
    dataset = parse_dataset(rows.encode(), "data.jsonl", "jsonl")
    return ProtectedInputs(config, dataset, b"{}")


def test_adding_rows_is_not_a_protected_change_removing_or_relabeling_one_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base_rows = LAYOUTS["spaced.jsonl"][0]
    base = snapshot(tmp_path, base_rows)
    (tmp_path / "head").mkdir()
    path = project(tmp_path / "head", "data.jsonl", base_rows)
    monkeypatch.chdir(tmp_path / "head")
    assert add("failure.json", "--expected", "deny", "--must-not-break") == 0
    (tmp_path / "head" / "more.json").write_text('{"days": 1}', encoding="utf-8")
    assert add("more.json", "--expected", "approve") == 0
    head = snapshot(tmp_path, path.read_text(encoding="utf-8"))
    assert protected_changes(base, head) == ()
    # The control: removing or relabeling the must-not-break row r-1 is protected ...
    first, second = base_rows.splitlines(keepends=True)
    removed = snapshot(tmp_path, second)
    assert [c.kind for c in protected_changes(base, removed)] == [ROW_REMOVED]
    relabeled = snapshot(tmp_path, first.replace('"approve"', '"deny"') + second)
    assert [(c.kind, c.id) for c in protected_changes(base, relabeled)] == [(ROW_RELABELED, "r-1")]
    # ... and an ordinary row (not must-not-break) may change, as before.
    plain = snapshot(tmp_path, first + second.replace('"deny"', '"approve"'))
    assert protected_changes(base, plain) == ()


def test_a_pull_request_cannot_pass_a_swapped_row_off_as_an_added_one(tmp_path: Path) -> None:
    """The attack: drop must-not-break r-1 and "add" it again at the end, easier, same id."""
    base_rows = LAYOUTS["spaced.jsonl"][0]
    base = snapshot(tmp_path, base_rows)
    first, second = base_rows.splitlines(keepends=True)
    swapped = json.loads(first)
    swapped.update(input={"days": 1, "receipt": True}, expected="deny")
    head = snapshot(tmp_path, second + json.dumps(swapped) + "\n")
    kinds = {(c.kind, c.id) for c in protected_changes(base, head)}
    assert kinds == {(INPUT_CHANGED, "r-1"), (ROW_RELABELED, "r-1")}
    # Unallowed, the gate runs r-1 with the base's mark and label (trusted.py).
    gated = authoritative_dataset(base, head, allowed=False).by_id()["r-1"]
    assert (gated.expected, gated.must_not_break) == ("approve", True)


def test_a_structured_decision_and_a_task_its_environment_scores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "failure.json").write_text(json.dumps(FAILURE), encoding="utf-8")
    fields = "scoring: {fields: {action: exact, amount: {tolerance: 0.01}}}\n"
    (tmp_path / "passk.yml").write_text(CONFIG.format(name="d.jsonl") + fields, "utf-8")
    first = '{"id": "r-1", "input": 1, "expected": {"action": "refund", "amount": 12}}\n'
    (tmp_path / "d.jsonl").write_text(first, encoding="utf-8")
    assert add("failure.json", "--expected", '{"action": "deny", "amount": 0}', "--new-label") == 0
    assert "expected action: deny, amount: 0" in capsys.readouterr().out
    assert json.loads((tmp_path / "d.jsonl").read_text("utf-8").splitlines()[1])["expected"] == {
        "action": "deny",
        "amount": 0,
    }
    # A field the rules do not know, read back by the loader: one line, the file untouched.
    (tmp_path / "again.json").write_text('"again"', encoding="utf-8")
    assert add("again.json", "--expected", '{"action": "deny", "amout": 0}') == 2
    err = capsys.readouterr().err
    assert "the new row would not load: " in err and "the scoring rules do not know" in err
    # The advice is one that works: the row is refused, by hand too.
    assert "by hand" not in err.replace("by hand it would be refused alike", "")
    assert "did you mean 'amount'?" in err and "change --expected" in err
    assert add("again.json", "--expected", "deny") == 2
    assert "a structured decision is a JSON object" in capsys.readouterr().err

    environment = CONFIG.format(name="t.jsonl") + "scoring: {by: environment}\n"
    (tmp_path / "passk.yml").write_text(environment, encoding="utf-8")
    (tmp_path / "t.jsonl").write_text('{"id": "t-1", "input": 1}\n', encoding="utf-8")
    assert add("failure.json") == 0
    assert "expected success (its environment scores it)" in capsys.readouterr().out
    assert "expected" not in json.loads((tmp_path / "t.jsonl").read_text("utf-8").splitlines()[1])
    assert add("again.json", "--expected", "deny") == 2
    assert "a task its environment scores has no expected decision" in capsys.readouterr().err


def test_a_typo_in_a_field_of_a_structured_decision_needs_saying_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The guard that protects labels looks at each field: a word no row's same
    # field holds is a likely typo, refused unless --new-label says it is new.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "failure.json").write_text(json.dumps(FAILURE), encoding="utf-8")
    fields = (
        "scoring: {normalize: [casefold], fields: {action: exact, amount: {tolerance: 0.01},"
        " reasons: set}}\n"
    )
    (tmp_path / "passk.yml").write_text(CONFIG.format(name="d.jsonl") + fields, "utf-8")
    text = (
        '{"id": "r-1", "input": 1, "expected": {"action": "refund", "amount": 12, '
        '"reasons": ["late"]}}\n'
        '{"id": "r-2", "input": 2, "expected": {"action": "deny", "amount": 0}}\n'
    )
    (tmp_path / "d.jsonl").write_text(text, encoding="utf-8")
    typo = '{"action": "refnud", "amount": 120}'
    assert add("failure.json", "--expected", typo, "--must-not-break") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no row's 'action' is 'refnud'" in err, err
    assert "'deny', 'refund'" in err and "--new-label" in err
    assert (tmp_path / "d.jsonl").read_text(encoding="utf-8") == text
    # A word inside a list field is checked too; a new amount is not a typo.
    assert add("failure.json", "--expected", '{"action": "deny", "reasons": ["lat"]}') == 2
    assert "no row's 'reasons' is 'lat'" in capsys.readouterr().err
    # The field's normalization holds, as for labels: "REFUND" is "refund".
    assert add("failure.json", "--expected", '{"action": "REFUND", "amount": 120}') == 0
    (tmp_path / "more.json").write_text('{"days": 400}', encoding="utf-8")
    assert add("more.json", "--expected", typo, "--must-not-break", "--new-label") == 0
    assert json.loads((tmp_path / "d.jsonl").read_text("utf-8").splitlines()[-1])["expected"] == {
        "action": "refnud",
        "amount": 120,
    }
