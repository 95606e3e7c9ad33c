"""The allow label approves what was reviewed: one head, by a person with write access.

Each attack runs beside its control (the same steps, the label added as a
maintainer would, behaves normally).  GitHub is the local fake: it lists who
added each label (``issues/list-events``) and what access they have
(``repos/get-collaborator-permission-level``), both checked against GitHub's
own description (tests/specs).
"""

from __future__ import annotations

import json

import pytest

from passk_action.github.sticky_comment import decode_record
from support.fakegithub import FakeGitHub
from support.pull_request_repo import (
    RIGHT,
    Checkout,
    checkout,
    edit_rows,
    fake,
    template,
)

__all__ = ["checkout", "fake", "template"]  # the shared fixtures, used by name

ALLOW = "passk-allow-baseline-change"
AUTHOR = "codertocat"
"""The pull request's author in GitHub's example payloads."""


def relabel_r1(checkout: Checkout) -> str:
    """A protected change: must-not-break r1's expected label flips, the agent follows."""
    return checkout.head(
        {**RIGHT, "r1": ["deny"]}, apply=[edit_rows(lambda rows: rows[0].update(expected="deny"))]
    )


def failures(checkout: Checkout) -> list[tuple[str | None, str]]:
    result = json.loads((checkout.repo / ".passk/result.json").read_text("utf-8"))
    return [(f["id"], f["rule"]) for f in result["gate"]["failures"]]


def what_next(fake: FakeGitHub) -> list[str]:
    body = fake.comment_bodies(7)[0]
    return [line for line in body.splitlines() if line.startswith("- **")]


@pytest.mark.parametrize("pushed", ["attack-push-after-label", "control-label-again"])
def test_an_approval_holds_for_the_head_it_was_added_at_only(
    checkout: Checkout, fake: FakeGitHub, pushed: str
) -> None:
    """Attack: a maintainer approves one reviewed change (r1 relabeled); the author then
    pushes another protected change (r1 deleted) under the same label.  The approval
    was for the first head: the push fails the gate, and the comment says whose approval
    was for which head.  Control: the maintainer removes and adds the label again on the
    new head, and it passes."""
    reviewed = relabel_r1(checkout)
    first = checkout.run(fake, reviewed, labels=(ALLOW,))
    assert first.code == 0, first.stdout
    record = decode_record(fake.comment_bodies(7)[0])
    assert record.approval is not None
    assert (record.approval.login, record.approval.head_sha) == ("maya", reviewed)
    assert (
        "- **Protected changes approved:** by @\u2060maya (maintain access) with the label "
        f"`{ALLOW}`, for head `{reviewed[:12]}` against `master`; a later push or another "
        "base needs the label again"
    ) in what_next(fake)
    # A re-run of the same head (no new label event) keeps the approval, from the record.
    again = checkout.run(fake, reviewed, labels=(ALLOW,))
    assert again.code == 0, again.stdout

    later = checkout.head(apply=[edit_rows(lambda rows: rows.pop(0))])
    if pushed == "control-label-again":
        fake.label_event(7, ALLOW, "maya", event="unlabeled")
    outcome = checkout.run(fake, later, labels=(ALLOW,))
    if pushed == "control-label-again":
        assert outcome.code == 0, outcome.stdout
        assert failures(checkout) == []
        assert decode_record(fake.comment_bodies(7)[0]).approval.head_sha == later  # type: ignore[union-attr]
    else:
        assert outcome.code == 1, outcome.stdout
        assert "protected-change" in {rule for _, rule in failures(checkout)}
        refusal = (
            f"the label '{ALLOW}' does not count for {later[:7]}: @maya approved "
            f"{reviewed[:7]}, and commits were pushed since; a person with write access "
            "removes the label and adds it again"
        )
        assert f"::warning title=passk::{refusal}" in outcome.stdout
        # In the comment the @ is kept from mentioning anyone (a word joiner after it).
        shown = refusal.replace("@", "@\u2060")
        assert f"- **The allow label does not count:** {shown}" in what_next(fake)
        assert decode_record(fake.comment_bodies(7)[0]).approval is None
        check = fake.check_runs[-1]
        assert (check["head_sha"], check["conclusion"]) == (later, "failure")
    assert fake.violations == []


@pytest.mark.parametrize(
    ("role", "counts"),
    [
        ("read", False),
        ("triage", False),
        ("write", True),
        ("maintain", True),
        ("admin", True),
    ],
    ids=["attack-read", "attack-triage", "control-write", "control-maintain", "control-admin"],
)
def test_only_a_label_added_with_write_access_counts(
    checkout: Checkout, fake: FakeGitHub, role: str, counts: bool
) -> None:
    """Attack: the pull request's author (read or triage access) sends the ``labeled``
    event of the allow label: GitHub's event and the permission API name them, and the
    label does not count.  Control: the same event from a person with write, maintain or
    admin access approves the change."""
    fake.roles[AUTHOR] = role
    head = relabel_r1(checkout)
    outcome = checkout.run(fake, head, labels=(ALLOW,), labeled_by=AUTHOR)
    if counts:
        assert outcome.code == 0, outcome.stdout
        assert failures(checkout) == []
        assert f"added by @{AUTHOR} ({role} access)" in outcome.stdout
    else:
        assert outcome.code == 1, outcome.stdout
        assert "protected-change" in {rule for _, rule in failures(checkout)}
        assert (
            f"the label '{ALLOW}' does not count: @{AUTHOR} added it, with {role} access; only "
            "a person with write, maintain or admin access approves a protected change"
        ) in outcome.stdout
    asked = [r.operation_id for r in fake.requests]
    assert "issues/list-events" in asked and "repos/get-collaborator-permission-level" in asked
    assert fake.violations == []


@pytest.mark.parametrize("relabeled_by", ["attack-triage", "control-maintainer"])
def test_the_last_person_to_add_the_label_is_the_one_who_counts(
    checkout: Checkout, fake: FakeGitHub, relabeled_by: str
) -> None:
    """Attack: a maintainer's approval is recorded; someone with triage access removes
    the label and adds it again on the same head.  The label on the pull request is
    now theirs, so it no longer counts.  Control: the maintainer does the same, and the
    re-added label counts."""
    head = relabel_r1(checkout)
    assert checkout.run(fake, head, labels=(ALLOW,)).code == 0
    login = "tess" if relabeled_by == "attack-triage" else "maya"
    fake.roles.setdefault(login, "triage")
    fake.label_event(7, ALLOW, login, event="unlabeled")
    outcome = checkout.run(fake, head, labels=(ALLOW,), labeled_by=login)
    assert outcome.code == (1 if relabeled_by == "attack-triage" else 0), outcome.stdout
    assert fake.violations == []


@pytest.mark.parametrize("token", ["attack-no-token", "control-token"])
def test_without_a_token_nobody_can_say_who_added_the_label(
    checkout: Checkout, fake: FakeGitHub, token: str
) -> None:
    """Attack: a run with no github-token (nothing can be asked): the label in the event
    does not count.  Control: with the token it does."""
    head = relabel_r1(checkout)
    env = {"INPUT_GITHUB-TOKEN": ""} if token == "attack-no-token" else {}
    outcome = checkout.run(fake, head, labels=(ALLOW,), extra_env=env)
    if token == "attack-no-token":
        assert outcome.code == 1, outcome.stdout
        assert "with no github-token passk cannot ask GitHub who added it" in outcome.stdout
    else:
        assert outcome.code == 0, outcome.stdout
    assert fake.violations == []
