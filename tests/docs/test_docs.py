"""The docs hold together: links resolve, quoted figures match their bench tables, tables match
the code they describe, and the README's two commands are the ones CI runs.

- Every relative link and ``#anchor`` in the README and ``docs/`` (and the other Markdown
  files a reader follows from them) names a file that exists and a heading it has, with
  GitHub's heading ids.
- A figure lives in one place, a table under ``bench/``.  A doc quotes it between
  ``<!-- quote: PATH#ANCHOR -->`` and ``<!-- /quote -->``; every quoted line must be a line
  of that section of PATH, and no figure of the coverage table appears anywhere else.
- The README's action inputs/outputs are ``action.yml``'s, and its command table names
  every subcommand, in short cells.
- Every citation of a fact of ``tests/specs/FACTS.md`` names one it has (by the path
  outside ``src/`` and ``tests/``), and ``docs/comment.png`` records the digest of the
  golden comment it drew, which must be the golden's today.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
import subprocess
import sys
import unicodedata
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token

from passk_action.cli import COMMANDS
from passk_action.report.how_sure import ERROR_BAR_NOTE
from support.paths import REPO

README = REPO / "README.md"
DOCS = sorted(
    {
        README,
        REPO / "DEVELOPERS.md",
        REPO / "bench" / "README.md",
        REPO / "tests" / "specs" / "README.md",
        *(REPO / "docs").glob("*.md"),
        *(REPO / "examples").glob("*/README.md"),
    }
)
BENCH = REPO / "bench" / "README.md"
COVERAGE_SECTION = "interval-coverage-benchcoveragepy"
QUOTE = re.compile(
    r"<!-- quote: (?P<path>[^#\s]+)(?:#(?P<anchor>\S+))? -->\n(?P<body>.*?)<!-- /quote -->",
    re.DOTALL,
)
SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)


def rel(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


@cache
def tokens(path: Path) -> list[Token]:
    return MarkdownIt("commonmark").enable("table").parse(path.read_text(encoding="utf-8"))


def heading_text(inline: Token) -> str:
    """A heading's text as GitHub slugs it: text and code, no markup."""
    return "".join(
        child.content for child in inline.children or [] if child.type in ("text", "code_inline")
    )


def slug(text: str) -> str:
    """GitHub's heading id: lowercase, punctuation dropped, each space a hyphen."""
    kept = "".join(
        c for c in text.lower() if c in " -_" or unicodedata.category(c)[0] in ("L", "N")
    )
    return kept.replace(" ", "-")


@cache
def anchors(path: Path) -> dict[str, tuple[int, int]]:
    """Heading id -> (level, index of its first line) for every heading of a Markdown file."""
    found: dict[str, tuple[int, int]] = {}
    seen: dict[str, int] = {}
    stream = tokens(path)
    for i, token in enumerate(stream):
        if token.type != "heading_open":
            continue
        base = slug(heading_text(stream[i + 1]))
        count = seen.get(base, 0)
        seen[base] = count + 1
        assert token.map is not None
        found[base if count == 0 else f"{base}-{count}"] = (int(token.tag[1]), token.map[0])
    return found


def links(path: Path) -> list[str]:
    """Every link and image target of a Markdown file (code blocks and spans excluded)."""
    out = []
    for token in tokens(path):
        for child in token.children or []:
            if child.type == "link_open":
                out.append(str(child.attrs["href"]))
            elif child.type == "image":
                out.append(str(child.attrs["src"]))
    return out


def resolve(source: Path, target: str) -> tuple[Path, str | None]:
    where, _, anchor = target.partition("#")
    path = (source.parent / where).resolve() if where else source
    return path, anchor or None


@pytest.mark.parametrize("doc", DOCS, ids=rel)
def test_every_relative_link_and_anchor_resolves(doc: Path) -> None:
    broken = []
    for target in links(doc):
        if SCHEME.match(target):
            continue
        path, anchor = resolve(doc, target)
        if not path.exists():
            broken.append(f"{target}: no such file")
        elif anchor is not None:
            if path.suffix != ".md":
                broken.append(f"{target}: an anchor into a file that is not Markdown")
            elif anchor not in anchors(path):
                broken.append(f"{target}: {rel(path)} has no heading with id {anchor!r}")
    assert not broken, f"{rel(doc)}: " + "; ".join(broken)


def test_the_link_check_can_fail(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text(
        "# Gate your repository in five steps\n\n## 5. The workflow: `passk.yml`\n\n"
        "[ok](#5-the-workflow-passkyml) [ok](#gate-your-repository-in-five-steps) "
        "[bad](#the-workflow) [gone](missing.md) `[in code](missing.md)`\n",
        encoding="utf-8",
    )
    targets = links(doc)
    assert targets == [
        "#5-the-workflow-passkyml",
        "#gate-your-repository-in-five-steps",
        "#the-workflow",
        "missing.md",
    ]
    assert [resolve(doc, t)[1] in anchors(doc) for t in targets[:3]] == [True, True, False]
    assert not resolve(doc, "missing.md")[0].exists()


def section(path: Path, anchor: str | None) -> list[str]:
    """The lines of ``path`` under the heading ``anchor`` (to the next heading as high), or all."""
    lines = path.read_text(encoding="utf-8").splitlines()
    if anchor is None:
        return lines
    found = anchors(path)
    assert anchor in found, f"{rel(path)} has no heading with id {anchor!r}"
    level, start = found[anchor]
    ends = [line for lvl, line in found.values() if line > start and lvl <= level]
    return lines[start : min(ends, default=len(lines))]


def quotes(doc: Path) -> list[tuple[Path, str | None, list[str]]]:
    text = doc.read_text(encoding="utf-8")
    return [
        (resolve(doc, m["path"])[0], m["anchor"], [ln for ln in m["body"].splitlines() if ln])
        for m in QUOTE.finditer(text)
    ]


@pytest.mark.parametrize("doc", DOCS, ids=rel)
def test_every_quoted_figure_is_a_line_of_the_table_it_cites(doc: Path) -> None:
    for path, anchor, body in quotes(doc):
        assert path.is_file(), f"{rel(doc)} quotes {path}, which does not exist"
        source = set(section(path, anchor))
        drifted = [line for line in body if line not in source]
        assert not drifted, (
            f"{rel(doc)} quotes lines that {rel(path)}#{anchor} no longer has (re-quote "
            f"them from the table): {drifted}"
        )


def test_the_statistics_doc_quotes_the_coverage_table() -> None:
    cited = quotes(REPO / "docs" / "statistics.md")
    assert any(p == BENCH and a == COVERAGE_SECTION for p, a, _ in cited), cited


def coverage_table() -> list[list[str]]:
    """The summary table of the coverage benchmark: one list of cells per row."""
    lines = section(BENCH, COVERAGE_SECTION)
    head = next(i for i, ln in enumerate(lines) if ln.startswith("| statistic |"))
    rows = []
    for line in lines[head + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def without_quotes(text: str) -> str:
    return QUOTE.sub("", text)


def test_no_coverage_figure_is_copied_outside_a_quote() -> None:
    # Figures such as 0.935 or 0.132 live in bench/README.md; a doc that needs
    # one quotes the table, and the code's docstrings point at it.
    table = " ".join(" ".join(row) for row in coverage_table())
    figures = set(re.findall(r"\b0\.\d{3}\b", table)) - {"0.000"}
    assert len(figures) >= 8, figures
    places = [*DOCS, *(REPO / "src" / "passk_action").rglob("*.py")]
    copies = {
        rel(path): sorted(f for f in figures if re.search(rf"(?<![\d.]){re.escape(f)}(?!\d)", t))
        for path in places
        if path != BENCH
        for t in [without_quotes(path.read_text(encoding="utf-8"))]
    }
    assert not {p: f for p, f in copies.items() if f}, "quote the bench table instead"


def test_the_reports_coverage_claim_is_what_the_bench_table_measured() -> None:
    # Every error-bar table says the intervals were never measurably below 94%;
    # the benchmark's "after: cells failing" column is that claim.
    assert "never measurably less than 94%" in ERROR_BAR_NOTE
    failing = {row[0]: row[4] for row in coverage_table() if row[4]}
    assert failing and all(cells == "0" for cells in failing.values()), (
        f"bench/README.md measured failing cells {failing}: the report's note "
        "(report/how_sure.py ERROR_BAR_NOTE) no longer says what was measured"
    )


# -- the README against the code it describes ------------------------------------------


def readme_tables() -> list[list[list[str]]]:
    """Every table of the README: rows of cells, the header row first, as source text."""
    lines = README.read_text(encoding="utf-8").splitlines()
    tables: list[list[list[str]]] = []
    current: list[list[str]] = []
    for line in [*lines, ""]:
        if line.startswith("|"):
            cells = re.split(r"(?<!\\)\|", line.strip()[1:-1])
            if not all(re.fullmatch(r"\s*:?-+:?\s*", c) for c in cells):
                current.append([c.strip() for c in cells])
        elif current:
            tables.append(current)
            current = []
    return tables


def table(first_header: str) -> list[list[str]]:
    found = [t for t in readme_tables() if t[0][0] == first_header]
    assert len(found) == 1, f"the README has {len(found)} tables headed {first_header!r}"
    return found[0][1:]


def names(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def test_the_readme_lists_the_actions_inputs_with_their_defaults() -> None:
    action = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
    expected = {name: spec.get("default", "") for name, spec in action["inputs"].items()}
    listed = {}
    for name, default, _ in table("input"):
        (key,) = names(name)
        listed[key] = "" if default == "(none)" else names(default)[0]
    assert listed == expected


def test_the_readme_lists_every_output_of_the_action() -> None:
    action = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
    listed = [n for row in table("output") for n in names(row[0])]
    assert sorted(listed) == sorted(action["outputs"])


def test_the_command_table_names_every_command_in_short_cells() -> None:
    rows = table("command")
    listed = [names(command)[0].split()[1] for command, _ in rows]
    assert listed == list(COMMANDS) or sorted(listed) == sorted(COMMANDS), listed
    long = [cell for row in rows for cell in row if len(cell) > 120]
    assert not long, f"move the detail out of the table, into the list below it: {long}"
    wide = [cell[:60] for t in readme_tables() for row in t for cell in row if len(cell) > 400]
    assert not wide, f"README table cells over 400 characters: {wide}"


def test_the_readme_starts_with_the_two_commands_ci_runs() -> None:
    fences = [t for t in tokens(README) if t.type == "fence"]
    install, suite = fences[0], fences[1]
    assert install.info == suite.info == "bash"
    assert (
        install.content == "python3 -m pip install -e '.[dev]' && bash examples/refunds/demo.sh\n"
    )
    assert (REPO / "examples" / "refunds" / "demo.sh").is_file()
    assert suite.content == "python3 -m pytest -q\n"
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    # .ci/run is the README's install (quietly) and exactly its test command, last.
    assert ci[-1] == suite.content.strip()
    pip = [line for line in ci if " -m pip install " in line]
    assert [re.sub(r" --(quiet|disable-pip-version-check)", "", line) for line in pip] == [
        "python3 -m pip install -e '.[dev]'"
    ]


# -- references and pictures that could drift -------------------------------------------

FACTS = REPO / "tests" / "specs" / "FACTS.md"
FACTS_CITATION = re.compile(
    r"(?P<path>[\w./-]*)FACTS\.md,?\s+(?:§\s?)?(?P<first>[A-Z]\d+)(?:\s*[-/]\s*(?P<last>[A-Z]\d+))?"
)


def tracked_text_files() -> list[Path]:
    """The repository's own text files (the vendored specs excepted: they are copies)."""
    names = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-co", "--exclude-standard"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    found = []
    for name in names:
        path = REPO / name
        if name.startswith("tests/specs/") or not path.is_file():
            continue
        if path.suffix in {".png", ".gz", ".whl", ".json", ".jsonl"}:
            continue
        found.append(path)
    return found


def facts_sections() -> set[str]:
    """The ids of tests/specs/FACTS.md's facts: **A1.** ... (bold, at a line's start or bullet)."""
    return set(re.findall(r"^(?:- )?\*\*([A-Z]\d+)\.", FACTS.read_text(encoding="utf-8"), re.M))


def test_every_facts_citation_names_a_fact_that_exists_where_a_reader_can_find_it() -> None:
    known = facts_sections()
    assert {"A1", "C1", "D1", "E1", "G1"} <= known
    wrong = []
    for path in tracked_text_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        for match in FACTS_CITATION.finditer(text):
            where = f"{rel(path)}: {match.group(0)!r}"
            for fact in filter(None, (match["first"], match["last"])):
                if fact not in known:
                    wrong.append(f"{where}: tests/specs/FACTS.md has no fact {fact}")
            # Code and tests cite by section (tests/specs/README.md says where the file is);
            # a file a user reads on its own (an action.yml, the docs) names the path.
            inside = rel(path).startswith(("src/", "tests/"))
            if not inside and match["path"] != "tests/specs/":
                wrong.append(f"{where}: write tests/specs/FACTS.md, the file's path")
    assert not wrong, wrong


def test_the_citation_check_can_fail() -> None:
    found = [m.groupdict() for m in FACTS_CITATION.finditer("(FACTS.md D1) FACTS.md §E1/E2 x")]
    assert found == [
        {"path": "", "first": "D1", "last": None},
        {"path": "", "first": "E1", "last": "E2"},
    ]
    assert "Z9" not in facts_sections()


def load_comment_png() -> Any:
    spec = importlib.util.spec_from_file_location("comment_png", REPO / "docs" / "comment_png.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_picture_draws_the_current_golden_comment() -> None:
    drawer = load_comment_png()
    recorded = drawer.png_text((REPO / "docs" / "comment.png").read_bytes())
    assert "comment.png" in README.read_text(encoding="utf-8")
    assert recorded.get("passk-golden") == drawer.golden_digest(drawer.GOLDEN.read_bytes()), (
        f"docs/comment.png was drawn from another version of {rel(drawer.GOLDEN)}: "
        "run `python docs/comment_png.py` (needs Chromium) and commit the PNG"
    )


def test_the_picture_check_reads_what_the_drawer_writes() -> None:
    drawer = load_comment_png()
    png = (REPO / "docs" / "comment.png").read_bytes()
    again = drawer.with_text(png, b"other", "text")
    assert drawer.png_text(again) == {**drawer.png_text(png), "other": "text"}
    assert drawer.golden_digest(b"a") != drawer.golden_digest(b"b")
    with pytest.raises(ValueError):
        drawer.png_text(b"GIF89a")


def test_the_local_action_section_writes_its_event_with_passk_action_event_from(
    tmp_path: Path,
) -> None:
    # The section's first command writes the event the next one reads: run it as written.
    lines = section(README, "run-the-action-locally")
    first = next(line for line in lines if line.startswith("passk action --event-from"))
    repo = tmp_path / "repo"
    repo.mkdir()
    who = ["-c", "user.name=Dev", "-c", "user.email=dev@example.com"]
    for args in (
        ["init", "-q", "-b", "main"],
        [*who, "commit", "-q", "--allow-empty", "-m", "base"],
        ["checkout", "-q", "-b", "feature"],
        [*who, "commit", "-q", "--allow-empty", "-m", "head"],
    ):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    argv = [sys.executable, "-m", "passk_action", *shlex.split(first)[1:]]
    subprocess.run(argv, cwd=repo, check=True, capture_output=True)
    event = json.loads((repo / "event.json").read_text(encoding="utf-8"))
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True, text=True
    )
    assert event["pull_request"]["head"]["sha"] == head.stdout.strip()
