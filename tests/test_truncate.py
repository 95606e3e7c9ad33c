"""Fitting Markdown under a size limit: a cut closes every fence and ``<details>`` it
opened, and the note saying so stays visible.  markdown-it (CommonMark, like GitHub)
judges the result, not the fitter's own line scanner."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from passk_action.truncate import fit_comment

NOTE = "… truncated; the full report is in the job summary"


def test_short_body_is_unchanged() -> None:
    assert fit_comment("a\nb\n", 10, NOTE) == "a\nb\n"


def test_long_body_is_cut_at_a_line_boundary() -> None:
    body = "".join(f"row {i:05d} stable-correct\n" for i in range(10_000))
    fitted = fit_comment(body, 60_000, NOTE)
    assert len(fitted) <= 60_000
    kept = fitted[: -len(NOTE) - 2]
    assert body.startswith(kept) and kept.endswith("stable-correct\n")
    assert fitted.endswith("\n" + NOTE + "\n")


def test_cut_inside_details_closes_it() -> None:
    body = (
        "# passk\n<details><summary>rows</summary>\n\n" + "| r | ok |\n" * 10_000 + "</details>\n"
    )
    fitted = fit_comment(body, 5_000, NOTE)
    assert len(fitted) <= 5_000
    assert fitted.count("<details>") == fitted.count("</details>") == 1
    assert fitted.index("</details>") < fitted.index(NOTE)


def test_cut_inside_a_fence_closes_it_and_ignores_tags_inside() -> None:
    body = "<details>\n\n````text\n" + "<details> not a tag here\n" * 1000 + "````\n</details>\n"
    fitted = fit_comment(body, 2_000, NOTE)
    assert len(fitted) <= 2_000
    lines = fitted.splitlines()
    assert lines[-5:] == ["````", "", "</details>", "", NOTE]


def test_a_single_giant_line_is_cut_inside() -> None:
    fitted = fit_comment("x" * 1_000, 200, NOTE)
    assert len(fitted) <= 200 and fitted.startswith("x" * 100) and fitted.endswith(NOTE + "\n")


def test_a_note_that_cannot_fit_is_refused() -> None:
    with pytest.raises(ValueError, match="does not fit"):
        fit_comment("x" * 100, 20, NOTE)


_LINES = st.sampled_from(
    ["text", "<details>", "</details>", "```", "~~~~", "````", "| a | b |", "x" * 50]
)


def _details_depth(markdown: str) -> tuple[int, str]:
    """<details> depth left open outside code, and the text of the last paragraph.

    markdown-it (CommonMark, like GitHub) decides what is code, independently
    of fit_comment's own line scanner.
    """
    depth = 0
    last_paragraph = ""
    for token in MarkdownIt("commonmark").parse(markdown):
        if token.type == "html_block":
            depth += token.content.count("<details>")
            depth = max(0, depth - token.content.count("</details>"))
        if token.type == "inline":
            last_paragraph = token.content
    return depth, last_paragraph


@settings(max_examples=200, deadline=None)
@given(st.lists(_LINES, min_size=5, max_size=200), st.integers(min_value=80, max_value=600))
def test_fit_comment_always_fits_and_closes_what_it_cut(lines: list[str], limit: int) -> None:
    # Blank lines between blocks keep CommonMark's HTML blocks to one line each.
    body = "\n\n".join(lines) + "\n"
    fitted = fit_comment(body, limit, NOTE)
    assert len(fitted) <= limit
    if fitted == body:
        return
    depth, last_paragraph = _details_depth(fitted)
    # The note is a visible paragraph: every fence the cut left open was closed.
    assert last_paragraph == NOTE
    assert fitted.count(NOTE) == 1
    assert depth == 0
