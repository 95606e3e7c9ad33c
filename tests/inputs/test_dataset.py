"""Dataset loading: the three formats, digest invariance, and every error path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from passk_action.core.model import Row, dataset_digest
from passk_action.errors import DatasetError
from passk_action.inputs.dataset import format_for, load_dataset, parse_dataset
from support.paths import TESTS

DATA = TESTS / "data" / "loaders"
FILES = ("rows.jsonl", "rows.yaml", "rows.csv")


def error_of(fmt: str, data: bytes, tags: tuple[str, ...] = ()) -> DatasetError:
    with pytest.raises(DatasetError) as info:
        parse_dataset(data, f"d.{fmt}", fmt, tags)
    return info.value


def jsonl(*rows: object) -> bytes:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode()


ROW = {"id": "r1", "input": {"q": 1}, "expected": "approve"}


# ---------------------------------------------------------------- the three formats


def test_same_rows_in_jsonl_yaml_and_csv_have_the_same_digest_and_rows() -> None:
    loaded = [load_dataset(DATA / name, ["high-value"]) for name in FILES]
    assert len({d.digest for d in loaded}) == 1
    by_id = [
        {r.id: (r.input, r.expected, r.tags, r.marked, r.cluster) for r in d.rows} for d in loaded
    ]
    assert by_id[0] == by_id[1] == by_id[2]
    assert by_id[0]["refund-002"] == (
        {"order": "B-3", "days_since_purchase": 45, "receipt": True, "note": "Tür, Straße, 東京"},
        "deny",
        (),
        True,
        "customer-9",
    )
    assert by_id[0]["007"][0] == "plain text request: please refund"
    assert loaded[0].digest == dataset_digest(loaded[0].rows)


def test_rows_keep_file_order_and_source_lines() -> None:
    jsonl_rows = load_dataset(DATA / "rows.jsonl").rows
    assert [(r.id, r.line) for r in jsonl_rows] == [
        ("refund-001", 1),
        ("refund-002", 3),  # line 2 is blank
        ("007", 4),
        ("refund-004", 5),
    ]
    yaml_rows = load_dataset(DATA / "rows.yaml").rows
    assert [(r.id, r.line) for r in yaml_rows] == [
        ("007", 3),
        ("refund-001", 6),
        ("refund-002", 10),
        ("refund-004", 20),
    ]
    csv_rows = load_dataset(DATA / "rows.csv").rows
    # refund-002 spans two physical lines (a quoted line break), so 007 is on line 5.
    assert [(r.id, r.line) for r in csv_rows] == [
        ("refund-001", 2),
        ("refund-002", 3),
        ("007", 5),
        ("refund-004", 6),
    ]


def test_must_not_break_is_own_mark_or_a_configured_tag() -> None:
    plain = {r.id: (r.must_not_break, r.marked) for r in load_dataset(DATA / "rows.jsonl").rows}
    assert plain == {
        "refund-001": (False, False),
        "refund-002": (True, True),
        "007": (False, False),
        "refund-004": (False, False),
    }
    tagged = load_dataset(DATA / "rows.jsonl", ["high-value", "unused"])
    assert {r.id for r in tagged.rows if r.must_not_break} == {"refund-001", "refund-002"}
    # The digest covers the file only, not which tags the config marks.
    assert tagged.digest == load_dataset(DATA / "rows.jsonl").digest


def test_digest_ignores_order_but_not_content() -> None:
    a = {"id": "a", "input": 1, "expected": "x"}
    b = {"id": "b", "input": [1, {"k": None}], "expected": "y", "tags": ["t"]}
    forward = parse_dataset(jsonl(a, b), "d.jsonl", "jsonl")
    backward = parse_dataset(jsonl(b, a), "d.jsonl", "jsonl")
    assert forward.digest == backward.digest
    assert [r.id for r in backward.rows] == ["b", "a"]
    for changed in (
        {**a, "expected": "z"},
        {**a, "input": 2},
        {**a, "tags": ["t"]},
        {**a, "must_not_break": True},
        {**a, "cluster": "c"},
    ):
        assert parse_dataset(jsonl(changed, b), "d.jsonl", "jsonl").digest != forward.digest


def test_yaml_plain_list_form_and_dates_stay_strings() -> None:
    data = b"- id: 2024-01-31\n  input: {when: 2024-02-01, n: 1.5}\n  expected: approve\n"
    (row,) = parse_dataset(data, "d.yaml", "yaml").rows
    assert row == Row(
        id="2024-01-31", input={"when": "2024-02-01", "n": 1.5}, expected="approve", line=1
    )


def test_yaml_aliases_are_expanded_like_plain_values() -> None:
    data = (
        b"- id: a\n  input: &shared {x: [1, 2]}\n  expected: y\n"
        b"- id: b\n  input: *shared\n  expected: y\n"
    )
    rows = parse_dataset(data, "d.yaml", "yaml").rows
    assert rows[0].input == rows[1].input == {"x": [1, 2]}


def test_csv_cells_tags_flags_and_plain_text_input() -> None:
    data = (
        b"expected,id,input,tags,must_not_break,cluster\n"
        b'approve,a,"  hello, world ",refund | vip||,YES,\n'
        b'deny,b,"[1, ""two""]",,no,c1\n'
        b"\n"
        b'deny,c," {""k"": true}",vip,1,\n'
    )
    rows = parse_dataset(data, "d.csv", "csv", ["vip"]).rows
    assert rows[0] == Row(
        id="a",
        input="  hello, world ",
        expected="approve",
        tags=("refund", "vip"),
        must_not_break=True,
        marked=True,
        line=2,
    )
    assert (rows[1].input, rows[1].marked, rows[1].cluster, rows[1].line) == (
        [1, "two"],
        False,
        "c1",
        3,
    )
    assert (rows[2].input, rows[2].must_not_break, rows[2].line) == ({"k": True}, True, 5)


def test_utf8_bom_is_accepted_in_every_format() -> None:
    bom = b"\xef\xbb\xbf"
    inputs = {
        "jsonl": jsonl(ROW),
        "yaml": b"- id: r1\n  input: {q: 1}\n  expected: approve\n",
        "csv": b'id,input,expected\nr1,"{""q"": 1}",approve\n',
    }
    digests = {parse_dataset(bom + data, f"d.{fmt}", fmt).digest for fmt, data in inputs.items()}
    assert len(digests) == 1


def test_yaml_rows_mapping_may_be_empty_only_as_an_error() -> None:
    error = error_of("yaml", b"rows:\n")
    assert str(error) == (
        "d.yaml:1: the dataset has no rows"
        ' (add rows like {"id": "r1", "input": ..., "expected": "approve"})'
    )


def test_many_jsonl_rows_load() -> None:
    rows = [
        {"id": f"r{i}", "input": {"n": i}, "expected": "a" if i % 2 else "b"} for i in range(5000)
    ]
    dataset = parse_dataset(jsonl(*rows), "d.jsonl", "jsonl")
    assert len(dataset.rows) == 5000
    assert dataset.rows[4999].line == 5000


# ----------------------------------------------------------------------- errors


def test_exact_message_for_duplicate_ids() -> None:
    error = error_of("jsonl", jsonl(ROW, {**ROW, "id": "r2"}, ROW))
    assert str(error) == (
        'd.jsonl:3: duplicate id "r1", first used on line 1'
        " (ids must be unique; rename one of the two rows)"
    )


def test_exact_message_for_an_integer_id() -> None:
    error = error_of("jsonl", jsonl({**ROW, "id": 17}))
    assert str(error) == (
        "d.jsonl:1: 'id' is the number 17, not a string"
        ' (quote it: "17"; an unquoted number loses leading zeros)'
    )


def test_exact_message_for_a_misspelt_field() -> None:
    error = error_of("jsonl", jsonl({**ROW, "must_not_brake": True}))
    assert str(error) == (
        "d.jsonl:1: unknown field \"must_not_brake\" (did you mean 'must_not_break'?"
        " A row has id, input, expected, expected_checks, tags, must_not_break, cluster)"
    )


def test_exact_message_for_a_yaml_boolean_label() -> None:
    error = error_of(
        "yaml", b"- id: r1\n  input: q\n  expected: approve\n- id: r2\n  input: q\n  expected: no\n"
    )
    assert str(error) == (
        "d.yaml:4: row \"r2\": 'expected' must be a non-empty string, got false"
        " (quote it; YAML reads yes/no/true/false/on/off as booleans)"
    )


@pytest.mark.parametrize(
    ("fmt", "data", "where", "message"),
    [
        # JSONL
        ("jsonl", b"", "d.jsonl:1", "the dataset has no rows"),
        ("jsonl", b"\n  \n\r\n", "d.jsonl:1", "the dataset has no rows"),
        (
            "jsonl",
            jsonl(ROW) + b'{"id": "r2", "input": 1,\n',
            "d.jsonl:2",
            "the line is not valid JSON",
        ),
        (
            "jsonl",
            jsonl(ROW) + b"\n\nnot json\n",
            "d.jsonl:4",
            "the line is not valid JSON: Expecting value at column 1",
        ),
        (
            "jsonl",
            jsonl([1, 2]),
            "d.jsonl:1",
            "a row must be an object with id, input and expected, got a list",
        ),
        (
            "jsonl",
            b'"r1"\n',
            "d.jsonl:1",
            'a row must be an object with id, input and expected, got the string "r1"',
        ),
        (
            "jsonl",
            b'{"id": "r1", "input": NaN, "expected": "x"}\n',
            "d.jsonl:1",
            "the line contains NaN",
        ),
        (
            "jsonl",
            b'{"id": "r1", "input": 1, "expected": "x", "expected": "y"}\n',
            "d.jsonl:1",
            'the line repeats the key "expected"',
        ),
        (
            "jsonl",
            b'{"id": "r1", "input": "\\ud800", "expected": "x"}\n',
            "d.jsonl:1",
            'row "r1" holds a value that cannot be stored as UTF-8 JSON',
        ),
        ("jsonl", b"[" * 100000 + b"\n", "d.jsonl:1", "the line is nested too deeply"),
        ("jsonl", jsonl({"input": 1, "expected": "x"}), "d.jsonl:1", "the row has no 'id'"),
        (
            "jsonl",
            jsonl({**ROW, "id": ""}),
            "d.jsonl:1",
            "'id' must be a non-empty string, got the string \"\"",
        ),
        ("jsonl", jsonl({**ROW, "id": "  "}), "d.jsonl:1", "'id' must be a non-empty string"),
        (
            "jsonl",
            jsonl({**ROW, "id": True}),
            "d.jsonl:1",
            "'id' must be a non-empty string, got true",
        ),
        (
            "jsonl",
            jsonl({**ROW, "id": 1.5}),
            "d.jsonl:1",
            "'id' must be a non-empty string, got the number 1.5",
        ),
        ("jsonl", jsonl({"id": "r1", "expected": "x"}), "d.jsonl:1", "row \"r1\" has no 'input'"),
        ("jsonl", jsonl({"id": "r1", "input": 1}), "d.jsonl:1", "row \"r1\" has no 'expected'"),
        (
            "jsonl",
            jsonl({**ROW, "expected": ""}),
            "d.jsonl:1",
            "row \"r1\": 'expected' must be a non-empty string",
        ),
        (
            "jsonl",
            jsonl({**ROW, "expected": 3}),
            "d.jsonl:1",
            "row \"r1\": 'expected' must be a non-empty string, got the number 3",
        ),
        (
            "jsonl",
            jsonl({**ROW, "tags": "vip"}),
            "d.jsonl:1",
            'row "r1": \'tags\' must be a list of non-empty strings, found the string "vip"',
        ),
        (
            "jsonl",
            jsonl({**ROW, "tags": ["ok", 3]}),
            "d.jsonl:1",
            "row \"r1\": 'tags' must be a list of non-empty strings, found the number 3",
        ),
        (
            "jsonl",
            jsonl({**ROW, "must_not_break": "yes"}),
            "d.jsonl:1",
            'row "r1": \'must_not_break\' must be true or false, got the string "yes"',
        ),
        (
            "jsonl",
            jsonl({**ROW, "must_not_break": None}),
            "d.jsonl:1",
            "row \"r1\": 'must_not_break' must be true or false",
        ),
        (
            "jsonl",
            jsonl({**ROW, "cluster": 4}),
            "d.jsonl:1",
            "row \"r1\": 'cluster' must be a non-empty string, got the number 4",
        ),
        ("jsonl", jsonl(ROW) + b"\xff\xfe\n", "d.jsonl:2", "is not valid UTF-8 text"),
        # YAML
        ("yaml", b"", "d.yaml:1", "the dataset has no rows"),
        ("yaml", b"# nothing yet\n", "d.yaml:1", "the dataset has no rows"),
        ("yaml", b"just text\n", "d.yaml:1", "expected a list of rows"),
        ("yaml", b"rows: 3\n", "d.yaml:1", "`rows:` must be a list of rows"),
        ("yaml", b"version: 1\nrows: []\n", "d.yaml:1", 'unknown top-level key "version"'),
        ("yaml", b"rowz: []\n", "d.yaml:1", 'unknown top-level key "rowz"'),
        ("yaml", b"- id: r1\n  input: [1,\n", "d.yaml:3", "invalid YAML"),
        (
            "yaml",
            b"- id: r1\n  input: 1\n  expected: x\n  expected: y\n",
            "d.yaml:4",
            "invalid YAML: found duplicate key 'expected'",
        ),
        (
            "yaml",
            b"- id: r1\n  input: 1\n  expected: x\n- id: r1\n  input: 2\n  expected: x\n",
            "d.yaml:4",
            'duplicate id "r1", first used on line 1',
        ),
        (
            "yaml",
            b"- id: 7\n  input: 1\n  expected: x\n",
            "d.yaml:1",
            "'id' is the number 7, not a string",
        ),
        (
            "yaml",
            b"- id: r1\n  input: 1\n  expected: x\n- oops\n",
            "d.yaml:4",
            'a row must be an object with id, input and expected, got the string "oops"',
        ),
        (
            "yaml",
            b"- id: r1\n  input: {when: !!binary aGk=}\n  expected: x\n",
            "d.yaml:1",
            "input.when is a bytes value, which JSON cannot hold",
        ),
        (
            "yaml",
            b"- id: r1\n  input: [.nan]\n  expected: x\n",
            "d.yaml:1",
            "input[0] is nan, which JSON cannot hold",
        ),
        (
            "yaml",
            b"- id: r1\n  input: {1: a}\n  expected: x\n",
            "d.yaml:1",
            "input has the key the number 1; keys must be strings",
        ),
        (
            "yaml",
            b"- id: r1\n  input: !!set {a}\n  expected: x\n",
            "d.yaml:1",
            "input is a set value, which JSON cannot hold",
        ),
        ("yaml", b"- id: r1\n  inptu: 1\n  expected: x\n", "d.yaml:1", 'unknown field "inptu"'),
        ("yaml", b"a: 1\n---\nb: 2\n", "d.yaml:2", "invalid YAML: expected a single document"),
        ("yaml", b"- id: r1\n  input: \x01\n", "d.yaml:2", "invalid YAML: unacceptable character"),
        ("yaml", b"- id: r1\n  input: caf\xe9\n", "d.yaml:2", "is not valid UTF-8 text"),
        # CSV
        ("csv", b"", "d.csv:1", "the dataset has no rows"),
        ("csv", b"id,input,expected\n", "d.csv:1", "the dataset has no rows"),
        ("csv", b"id,input,expectd\nr1,1,x\n", "d.csv:1", 'unknown column "expectd"'),
        ("csv", b"id,input\nr1,1\n", "d.csv:1", 'the header has no "expected" column'),
        ("csv", b"id,input,expected,id\nr1,1,x,r1\n", "d.csv:1", 'the column "id" appears twice'),
        (
            "csv",
            b"id,input,expected\nr1,1,x\nr2,1\n",
            "d.csv:3",
            "has 2 cells but the header on line 1 has 3",
        ),
        (
            "csv",
            b"id,input,expected\nr1,a,b,c\n",
            "d.csv:2",
            "has 4 cells but the header on line 1 has 3",
        ),
        (
            "csv",
            b'id,input,expected\nr1,"one\nstill r1",x\nr2,{oops,x\n',
            "d.csv:4",
            "the input cell is not valid JSON",
        ),
        (
            "csv",
            b"id,input,expected\nr1,[1,x\n",
            "d.csv:2",
            "the input cell is not valid JSON",
        ),
        (
            "csv",
            b"id,input,expected,must_not_break\nr1,1,x,maybe\n",
            "d.csv:2",
            'must_not_break is "maybe"',
        ),
        ("csv", b"id,input,expected\n,1,x\n", "d.csv:2", "'id' must be a non-empty string"),
        (
            "csv",
            b"id,input,expected\nr1,1,\n",
            "d.csv:2",
            "row \"r1\": 'expected' must be a non-empty string",
        ),
        (
            "csv",
            b"id,input,expected\nr1,1,x\nr1,2,y\n",
            "d.csv:3",
            'duplicate id "r1", first used on line 2',
        ),
        ("csv", b'id,input,expected\nr1,"[1, NaN]",x\n', "d.csv:2", "the input cell contains NaN"),
        ("csv", b"id,input,expected\nr1,1,x\nr2,\xff,x\n", "d.csv:3", "is not valid UTF-8 text"),
    ],
)
def test_invalid_datasets_name_file_and_line(
    fmt: str, data: bytes, where: str, message: str
) -> None:
    error = error_of(fmt, data)
    assert error.where == where
    assert error.message.startswith(message), error.message
    assert error.hint
    assert "\n" not in str(error)


def test_unknown_format_is_an_error() -> None:
    with pytest.raises(DatasetError) as info:
        parse_dataset(b"", "d.json", "json")
    assert info.value.where == "d.json"
    with pytest.raises(DatasetError) as info:
        format_for(Path("rows.json"))
    assert str(info.value) == (
        "rows.json: unknown dataset format '.json'"
        " (use .jsonl (one JSON object per line), .yaml/.yml or .csv)"
    )
    assert format_for(Path("ROWS.YML")) == "yaml"


def test_missing_dataset_file_names_the_path(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    assert info.value.where == str(path)
    assert info.value.message == "dataset file not found"


def test_dataset_path_that_is_a_directory(tmp_path: Path) -> None:
    path = tmp_path / "rows.csv"
    path.mkdir()
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    assert info.value.where == str(path)


def test_load_dataset_uses_the_path_as_source(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_bytes(jsonl(ROW) + b'{"id": "r1", "input": 1, "expected": "x"}\n')
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    assert info.value.where == f"{path}:2"
    path.write_bytes(jsonl(ROW))
    assert load_dataset(path).source == str(path)


@pytest.mark.parametrize("char", ["\x00", "\n", "\r", "\x1b", "\x7f", "\x85"])
def test_a_control_character_in_an_id_is_refused_at_load(char: str) -> None:
    rows = jsonl(ROW, {**ROW, "id": f"r{char}2"})
    error = error_of("jsonl", rows)
    escaped = json.dumps(f"r{char}2")
    assert str(error) == (
        f"d.jsonl:2: 'id' contains the control character U+{ord(char):04X} ({escaped})"
        " (ids are shown in logs and comments; use letters, digits and punctuation)"
    )
    assert "\n" not in str(error) and "\x00" not in str(error)


def test_a_control_character_in_a_csv_or_yaml_id_is_refused_too() -> None:
    csv_error = error_of("csv", b'id,input,expected\nr1,{},deny\n"r\x002",{},deny\n')
    assert str(csv_error).startswith("d.csv:3: 'id' contains the control character U+0000")
    yaml_error = error_of("yaml", b'- {id: "r\\x1b[31m", input: {}, expected: deny}\n')
    assert str(yaml_error).startswith("d.yaml:1: 'id' contains the control character U+001B")


def test_passk_run_refuses_a_nul_in_an_id_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from passk_action.cli import main

    (tmp_path / "data.jsonl").write_bytes(jsonl(ROW, {**ROW, "id": "r\x002"}))
    (tmp_path / "passk.yml").write_text(
        "dataset: data.jsonl\nagent: {command: [never-run]}\n", encoding="utf-8"
    )
    argv = ["run", "--config", str(tmp_path / "passk.yml"), "--out", str(tmp_path / "o")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "data.jsonl:2: 'id' contains the control character U+0000" in err
    assert not (tmp_path / "o").exists()
