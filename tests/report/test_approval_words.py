"""What the comment and the check title say about the base and the allow label's approval."""

from __future__ import annotations

from passk_action.report.check_run import with_base
from passk_action.report.comment import CommentContext, LabelApproval, render_comment
from support.scenarios import passed_scenario

BASE = "9f8e7d6c5b4a39281706f5e4d3c2b1a098765432"
HEAD = "0123abcdef9988776655443322110000ffffeeee"


def test_a_check_title_names_its_base_branch_and_commit_and_keeps_it_whole() -> None:
    assert with_base("passed: 1 gained, 0 lost", "main", BASE) == (
        "passed: 1 gained, 0 lost · vs main at 9f8e7d6c5b4a"
    )
    long = with_base("x" * 300, "release/2026", BASE)
    assert len(long) == 200 and long.endswith("… · vs release/2026 at 9f8e7d6c5b4a")
    assert with_base("t", None, BASE) == "t · vs 9f8e7d6c5b4a"
    assert with_base("t" * 300, "main", None) == "t" * 200  # no base known: only cut


def _lines(context: CommentContext) -> list[str]:
    body = render_comment(
        passed_scenario(), marker="<!-- m -->", record="<!-- r -->", context=context
    )
    return [line for line in body.splitlines() if line.startswith("- **")]


def test_the_comment_says_who_approved_which_head_against_which_base() -> None:
    approval = LabelApproval(
        label="passk-allow-baseline-change",
        login="maya",
        role="maintain",
        head_sha=HEAD,
        base_ref="main",
    )
    context = CommentContext(head_sha=HEAD, base_sha=BASE, base_ref="main", approval=approval)
    lines = _lines(context)
    assert (
        "- **Compared:** candidate at head `0123abcdef99` with the baseline committed on base "
        "`main` at `9f8e7d6c5b4a`"
    ) in [line.split(" (recorded")[0] for line in lines]
    assert (
        "- **Protected changes approved:** by @\u2060maya (maintain access) with the label "
        "`passk-allow-baseline-change`, for head `0123abcdef99` against `main`; a later push "
        "or another base needs the label again"
    ) in lines


def test_a_label_that_does_not_count_says_why_and_mentions_nobody() -> None:
    why = "the label 'x' does not count: @eve added it, with triage access"
    lines = _lines(CommentContext(label_refusal=why))
    assert (
        "- **The allow label does not count:** the label 'x' does not count: @\u2060eve added "
        "it, with triage access"
    ) in lines
    assert not any("approved:**" in line for line in lines)
