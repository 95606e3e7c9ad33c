"""Escaping makes user- and agent-controlled text inert in GitHub Markdown.

Besides exact expectations for the hostile strings we know about, the
properties are checked by parsing the output with markdown-it-py (a
CommonMark parser with GFM tables): whatever the input, an ``inline`` value
renders as plain text equal to the input (whitespace collapsed), stays in
one table cell, and never yields a link, image, code span, emphasis or HTML.
"""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from markdown_it.token import Token

from passk_action.report.escape import WORD_JOINER, block, code, for_terminal, inline

MARKER = "<!-- passk:sticky-comment -->"

HOSTILE = [
    "</details><img src=x onerror=alert(1)>",
    "| a | b |",
    "[click](https://evil.example)",
    "![pixel](https://evil.example/p.png)",
    "@octocat",
    "#1",
    "```",
    MARKER,
    "line one\nline two\r\n\rthree",
    "nul\x00byte",
    "**bold** _em_ ~~strike~~ `code` $x^2$",
    "# heading",
    "1. ordered",
    "- bullet",
    "> quote",
    "&lt;already escaped&gt; &#60;",
    "<https://evil.example>",
    "www.evil.example and http://evil.example",
    "octo@example.com",
    "owner/repo#12 GH-7",
    "\u202eevil\u202c",
    "x" * 10_000,
]


def gfm() -> MarkdownIt:
    return MarkdownIt("commonmark").enable(["table", "strikethrough"])


def inline_tokens(text: str) -> list[Token]:
    (paragraph,) = [t for t in gfm().parse(text) if t.type == "inline"]
    return list(paragraph.children or [])


def visible(text: str) -> str:
    """The text a reader sees (word joiners are invisible)."""
    return text.replace(WORD_JOINER, "")


# --- inline --------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            "</details><img src=x onerror=alert(1)>",
            "&lt;/details&gt;&lt;img src=x onerror=alert(1)&gt;",
        ),
        ("| a | b |", "\\| a \\| b \\|"),
        ("[click](https://evil.example)", "\\[click\\](https://\u2060evil.example)"),
        ("@octocat", "@\u2060octocat"),
        ("#1", "\\#\u20601"),
        ("see #1", "see #\u20601"),
        ("```", "\\`\\`\\`"),
        (MARKER, "&lt;!-- passk:sticky-comment --&gt;"),
        ("a\r\nb\n\n  c\td", "a b c d"),
        ("nul\x00byte", "nul\ufffdbyte"),
        ("1. first", "1\\. first"),
        ("12) twelve", "12\\) twelve"),
        ("- x", "\\- x"),
        ("+ x", "\\+ x"),
        ("return_window stays readable", "return_window stays readable"),
        ("_x_ and snake_case", "\\_x\\_ and snake_case"),
        ("GH-12 www.Example.com", "GH-\u206012 www.\u2060Example.com"),
        ("![i](u)", "\\!\\[i\\](u)"),
        ("$x$ ~s~", "\\$x\\$ \\~s\\~"),
        ('say "hi" & bye', "say &quot;hi&quot; &amp; bye"),
        ("plain text, with a dot.", "plain text, with a dot."),
        ("", ""),
    ],
)
def test_inline_known_strings(raw: str, expected: str) -> None:
    assert inline(raw) == expected


def test_inline_truncates_to_max_len_visible_characters() -> None:
    assert inline("x" * 10_000) == "x" * 79 + "…"
    assert inline("abcdef", max_len=4) == "abc…"
    assert inline("abcd", max_len=4) == "abcd"
    # Truncation happens before escaping, so an escape is never cut in half.
    assert inline("<<<<<", max_len=3) == "&lt;&lt;…"


def test_inline_rejects_a_useless_max_len() -> None:
    with pytest.raises(ValueError, match="max_len"):
        inline("x", max_len=0)


def test_bidi_overrides_cannot_reorder_the_text_around_them() -> None:
    assert inline("\u202eevil\u202c") == "\ufffdevil\ufffd"


@pytest.mark.parametrize("raw", HOSTILE)
def test_hostile_inline_renders_as_plain_text(raw: str) -> None:
    tokens = inline_tokens(inline(raw, max_len=20_000))
    assert {t.type for t in tokens} <= {"text"}
    rendered = "".join(t.content for t in tokens)
    assert visible(rendered) == " ".join(raw.split()).replace("\x00", "\ufffd").replace(
        "\u202e", "\ufffd"
    ).replace("\u202c", "\ufffd")


@pytest.mark.parametrize("raw", HOSTILE)
def test_hostile_inline_stays_in_its_table_cell(raw: str) -> None:
    table = f"| a | b |\n|---|---|\n| {inline(raw)} | end |\n"
    tokens = gfm().parse(table)
    cells = [t for t in tokens if t.type == "td_open"]
    assert len(cells) == 2
    assert [t.content for t in tokens if t.type == "inline"][-1] == "end"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=200))
def test_any_text_renders_inert_and_unchanged(raw: str) -> None:
    out = inline(raw, max_len=1000)
    assert "\n" not in out and "<" not in out and "<!--" not in out
    tokens = inline_tokens(f"x {out}") if out else []
    assert {t.type for t in tokens} <= {"text"}
    if tokens:
        rendered = visible("".join(t.content for t in tokens))
        # A word joiner in the value itself is unsafe (U+FFFD below), not invisible.
        expected = " ".join(raw.replace(WORD_JOINER, "\ufffd").split())
        # Control characters become U+FFFD; compare everything else exactly.
        assert len(rendered) == len("x " + expected)
        for got, want in zip(rendered[2:], expected, strict=True):
            assert got == want or got == "\ufffd"


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="@#:/w.GH-0123456789abc ", max_size=40))
def test_pings_issue_refs_and_urls_are_always_broken(raw: str) -> None:
    out = inline(raw, max_len=1000)
    # Every "@x" and "#x" is broken by a word joiner, and so is every scheme or www.
    for i, c in enumerate(out[:-1]):
        if c in "@#":
            assert out[i + 1] == WORD_JOINER, out
    assert "://" not in out.replace("://" + WORD_JOINER, "")
    assert "www." not in out.replace("www." + WORD_JOINER, "")


# --- code ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("return_window", "`return_window`"),
        ("```", "```` ``` ````"),
        ("a`b", "``a`b``"),
        ("`lead", "`` `lead ``"),
        ("two\nlines\r\n", "`two lines`"),
        (MARKER, f"`<!{WORD_JOINER}-- passk:sticky-comment -->`"),
        ("</details>", "`</details>`"),
        ("", "*(empty)*"),
        ("   ", "*(empty)*"),
    ],
)
def test_code_known_strings(raw: str, expected: str) -> None:
    assert code(raw) == expected


@pytest.mark.parametrize("raw", HOSTILE)
def test_hostile_code_is_one_code_span_showing_the_value(raw: str) -> None:
    tokens = inline_tokens(f"value {code(raw, max_len=20_000)} end")
    kinds = [t.type for t in tokens]
    assert kinds == ["text", "code_inline", "text"]
    shown = tokens[1].content
    assert visible(shown) == " ".join(raw.split()).replace("\x00", "\ufffd").replace(
        "\u202e", "\ufffd"
    ).replace("\u202c", "\ufffd")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="`ab <!-\n", min_size=1, max_size=60))
def test_code_span_cannot_be_closed_by_its_content(raw: str) -> None:
    out = code(raw, max_len=1000)
    if out == "*(empty)*":
        assert not raw.split()
        return
    tokens = inline_tokens(f"x {out} y")
    assert [t.type for t in tokens] == ["text", "code_inline", "text"]
    assert "<!--" not in out


def test_code_truncates() -> None:
    assert code("y" * 500, max_len=10) == "`" + "y" * 9 + "…`"


# --- block ---------------------------------------------------------------


def test_block_fences_are_longer_than_any_backtick_run_inside() -> None:
    text = "Traceback\n````\n</details>\n```"
    assert block(text) == "`````\nTraceback\n````\n</details>\n```\n`````"


def test_block_keeps_the_tail_by_default_and_the_head_on_request() -> None:
    text = "".join(f"line {i}\n" for i in range(1000))
    tail = block(text, max_len=20)
    assert tail == "```\n…7\nline 998\nline 999\n```"
    head = block(text, max_len=20, keep="head")
    assert head == "```\nline 0\nline 1\nline …\n```"


def test_block_normalizes_line_endings_and_control_characters() -> None:
    assert block("a\r\nb\rc\x00d\te") == "```\na\nb\nc\ufffdd\te\n```"


def test_block_never_reproduces_an_html_comment_opener() -> None:
    out = block(f"before\n{MARKER}\nafter")
    assert MARKER not in out
    assert "<!--" not in out


@pytest.mark.parametrize("raw", [*HOSTILE, "x\n" * 6000])
def test_hostile_block_is_one_code_block_inside_details(raw: str) -> None:
    doc = f"<details><summary>stderr</summary>\n\n{block(raw)}\n\n</details>\n\nafter\n"
    tokens = gfm().parse(doc)
    kinds = [t.type for t in tokens]
    assert kinds == [
        "html_block",
        "fence",
        "html_block",
        "paragraph_open",
        "inline",
        "paragraph_close",
    ]
    assert tokens[2].content == "</details>\n"
    assert len(tokens[1].content) <= 2001 + 1  # max_len plus the trailing newline


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(["`", "~", "\n", "a", " ", "<", "/", "\r"]), max_size=80))
def test_block_content_is_shown_verbatim(raw: str) -> None:
    out = block(raw)
    tokens = gfm().parse(out + "\n")
    assert [t.type for t in tokens] == ["fence"]
    expected = raw.replace("\r\n", "\n").replace("\r", "\n").strip("\n")
    assert tokens[0].content == expected + "\n"


@pytest.mark.parametrize(
    "invisible", ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u2066"]
)
def test_zero_width_and_format_characters_are_shown_not_hidden(invisible: str) -> None:
    # "r1" + an invisible character must not pass for row r1 in the comment.
    assert inline(f"r1{invisible}") == "r1\ufffd"
    assert code(f"r1{invisible}") == "`r1\ufffd`"
    assert block(f"err{invisible}or") == "```\nerr\ufffdor\n```"


# --- the same Markdown in a terminal ---------------------------------------------------

_SAFE_TEXT = st.text(
    st.characters(blacklist_categories=("Cc", "Cs", "Cf", "Zl", "Zp")), max_size=60
)


@given(_SAFE_TEXT)
@settings(max_examples=400)
def test_a_terminal_reads_an_inline_value_as_it_was(value: str) -> None:
    # inline() keeps the value inert on GitHub; for_terminal gives it back as written
    # (whitespace collapsed, as inline does), wherever it sits in a line.
    one_line = " ".join(value.split())
    shown = for_terminal(f"- **Note:** {inline(value, 1000)} · end")
    assert shown == f"- **Note:** {one_line} · end"


def test_a_terminal_shows_no_backslash_before_a_backtick() -> None:
    markdown = "- " + inline("record one with `passk baseline`, then commit it *now*")
    assert "\\`" in markdown
    assert for_terminal(markdown) == "- record one with `passk baseline`, then commit it *now*"


def test_code_spans_and_fenced_blocks_are_shown_as_written() -> None:
    span = code("C:\\path\\*x*")
    fenced = block("a \\` b\n&lt;kept&gt;")
    markdown = f"see {span} and \\*this\\*\n{fenced}\nafter \\| it"
    assert for_terminal(markdown) == (f"see {span} and *this*\n{fenced}\nafter | it")
    assert for_terminal("a lone ` backtick, \\| here") == "a lone ` backtick, | here"
    # As in CommonMark: a backslash before the closing backtick is the span's own.
    assert for_terminal("`a \\` b") == "`a \\` b"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("stdout", "markdown", "shown"),
    [
        (_Terminal(), True, "run `passk baseline`\n"),  # a person reads it
        (io.StringIO(), True, "run \\`passk baseline\\`\n"),  # a pipe or a file: Markdown
        (_Terminal(), False, "run \\`passk baseline\\`\n"),  # JSON and the like: as written
    ],
)
def test_the_cli_shows_markdown_as_read_only_on_a_terminal(
    monkeypatch: pytest.MonkeyPatch, stdout: io.StringIO, markdown: bool, shown: str
) -> None:
    from passk_action.cli.common import write_output

    monkeypatch.setattr("sys.stdout", stdout)
    write_output(None, inline("run `passk baseline`"), markdown=markdown)
    assert stdout.getvalue() == shown
