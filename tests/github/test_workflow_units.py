"""The runner's channel, unit by unit: escaping by the toolkit's rules, invisible
characters shown, outputs in the heredoc form, the summary's cap, masks, annotations."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from passk_action.github.workflow import (
    SUMMARY_LIMIT_BYTES,
    Workflow,
    cap_summary,
    escape_data,
    escape_property,
    format_command,
    output_entry,
    visible,
)


def test_escaping_follows_the_toolkit() -> None:
    assert escape_data("50%\r\nnext") == "50%25%0D%0Anext"
    assert escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"
    line = format_command("error", "r1: lost\n::set-output name=x::y", {"title": "passk, gate"})
    assert line == "::error title=passk%2C gate::r1: lost%0A::set-output name=x::y"
    assert "\n" not in line


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("r1\u202eevil\u202c", "r1<U+202E>evil<U+202C>"),  # bidi override
        ("r\u20661\u2069", "r<U+2066>1<U+2069>"),  # bidi isolate
        ("r1\u200b", "r1<U+200B>"),  # zero-width space: not the same id as r1
        ("a\u200c\u200d\u2060\ufeffb", "a<U+200C><U+200D><U+2060><U+FEFF>b"),
        ("\x1b[32mPASSED\x1b[0m", "<U+001B>[32mPASSED<U+001B>[0m"),  # a colour in the log
        ("line\u2028sep", "line<U+2028>sep"),
        ("café — ok", "café — ok"),
    ],
)
def test_annotations_and_log_lines_show_invisible_characters(raw: str, shown: str) -> None:
    assert visible(raw) == shown
    assert format_command("error", f"row {raw} lost", {"title": raw}) == (
        f"::error title={escape_property(shown)}::row {shown} lost"
    )
    out = io.StringIO()
    Workflow(out, {}).line(f"passk: {raw}\n::error::forged")
    assert out.getvalue() == f"passk: {shown}<U+000A>::error::forged\n"


def test_outputs_use_the_heredoc_form_with_fresh_delimiters(tmp_path: Path) -> None:
    target = tmp_path / "out"
    Workflow(io.StringIO(), {"GITHUB_OUTPUT": str(target)}).set_outputs(
        {"passed": "true", "note": "two\nlines"}
    )
    lines = target.read_text(encoding="utf-8").split("\n")
    first, second = lines[0].split("<<"), lines[3].split("<<")
    assert first[0] == "passed" and lines[1:3] == ["true", first[1]]
    assert second[0] == "note" and lines[4:7] == ["two", "lines", second[1]]
    assert first[1] != second[1] and first[1].startswith("ghadelimiter_")
    with pytest.raises(ValueError):
        output_entry("x", "a\nEOF\nb", "EOF")


def test_summary_is_capped_at_one_mebibyte_counting_earlier_steps(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("x" * 1000, encoding="utf-8")
    line = "é" * 99 + "\n"  # two bytes per character
    Workflow(io.StringIO(), {"GITHUB_STEP_SUMMARY": str(summary)}).write_summary(line * 20000)
    data = summary.read_bytes()
    assert len(data) <= SUMMARY_LIMIT_BYTES
    assert data.decode("utf-8").endswith("limit.\n")
    assert cap_summary("short") == "short"


def test_a_masked_value_never_leaves_through_the_workflow(tmp_path: Path) -> None:
    out = io.StringIO()
    target = tmp_path / "out"
    flow = Workflow(out, {"GITHUB_OUTPUT": str(target)})
    flow.add_mask("s3cr3t")
    flow.error("token s3cr3t refused", title="s3cr3t")
    flow.set_outputs({"leak": "s3cr3t"})
    assert out.getvalue() == "::add-mask::s3cr3t\n::error title=***::token *** refused\n"
    assert "s3cr3t" not in target.read_text(encoding="utf-8")


def test_annotations_stop_at_ten_with_a_count_of_the_rest() -> None:
    out = io.StringIO()
    Workflow(out, {}).annotate_rows([(f"r{i}", "lost") for i in range(13)], title="passk gate")
    lines = out.getvalue().splitlines()
    assert len(lines) == 11
    assert lines[0] == "::error title=passk gate::r0: lost"
    assert (
        lines[-1] == "::error title=passk gate::… and 3 more blocking row(s): see the job summary"
    )
