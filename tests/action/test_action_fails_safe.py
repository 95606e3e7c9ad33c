"""Whatever stops passk after its check run started, the check is completed, never left
spinning, and the comment says the gate did not decide (issue 21 route 7, issue 25).

The crashes are injected where a bug would strike (inside the comparison, inside
publishing) with pytest's monkeypatch; GitHub is the local fake, so what the pull
request shows is read back from the API's own records.
"""

from __future__ import annotations

import pytest

import passk_action.action.comparison as comparison_phase
import passk_action.action.publish as publishing
from passk_action.errors import REPORT_BUGS_AT
from passk_action.github.sticky_comment import decode_record
from support.fakegithub import FakeGitHub
from support.pull_request_repo import (  # the shared fixtures, used by name
    RIGHT,
    Checkout,
    checkout,
    fake,
    template,
)

__all__ = ["checkout", "fake", "template"]


def overflow(*args: object, **kwargs: object) -> object:
    raise OverflowError("int too large to convert to float")


def statuses_of(fake: FakeGitHub, check_id: int) -> list[str]:
    return [status for _, run_id, status in fake.check_run_history if run_id == check_id]


def test_a_crash_inside_the_comparison_completes_the_check_and_says_so(
    checkout: Checkout, fake: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(comparison_phase, "compare", overflow)
    head = checkout.head(RIGHT)
    outcome = checkout.run(fake, head)
    assert outcome.code == 2
    [check] = fake.check_runs
    assert statuses_of(fake, check["id"]) == ["in_progress", "completed"]
    assert (check["status"], check["conclusion"]) == ("completed", "failure")
    title = check["output"]["title"]
    assert title.startswith("passk could not finish: internal error: OverflowError: int too large")
    assert len(title) <= 200
    [body] = fake.comment_bodies(7)
    assert "The gate did not decide, so it fails." in body
    assert "internal error: OverflowError" in body and REPORT_BUGS_AT in body
    # The log's one line says where to report it (errors.run_guarded).
    [line] = [x for x in outcome.stdout.splitlines() if x.startswith("::error")]
    assert "internal error: OverflowError" in line and REPORT_BUGS_AT in line
    assert "Traceback" not in outcome.stdout + outcome.stderr
    assert fake.violations == []


def test_a_crash_inside_publishing_completes_the_check_and_keeps_the_record(
    checkout: Checkout, fake: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    head = checkout.head(RIGHT)
    first = checkout.run(fake, head)
    assert first.code == 0
    recorded = decode_record(fake.comment_bodies(7)[0])
    # The re-run of the same commit crashes while it renders the comment, after the
    # verdicts were replayed: the check must still complete.
    monkeypatch.setattr(publishing, "render_comment", overflow)
    crashed = checkout.run(fake, head)
    assert crashed.code == 2
    second = fake.check_runs[1]
    assert statuses_of(fake, second["id"]) == ["in_progress", "completed"]
    assert second["conclusion"] == "failure"
    assert "internal error: OverflowError" in second["output"]["title"]
    [body] = fake.comment_bodies(7)
    assert "passk could not finish" in body
    # The error never wiped the record: the next re-run still replays it.
    assert decode_record(body).head_sha == recorded.head_sha
    monkeypatch.undo()
    again = checkout.run(fake, head)
    assert again.code == 0 and again.outputs["reused"] == "true"
    assert again.asked == []
    assert fake.violations == []


def test_control_without_a_crash_the_check_passes(checkout: Checkout, fake: FakeGitHub) -> None:
    outcome = checkout.run(fake, checkout.head(RIGHT))
    assert outcome.code == 0
    [check] = fake.check_runs
    assert statuses_of(fake, check["id"]) == ["in_progress", "completed"]
    assert check["conclusion"] == "success"
    assert "could not finish" not in fake.comment_bodies(7)[0]


def test_an_input_error_after_the_check_started_completes_it_too(
    checkout: Checkout, fake: FakeGitHub
) -> None:
    # A head whose config is not YAML: a PasskError, after the check started.
    head = checkout.head(RIGHT, apply=[lambda repo: (repo / "passk.yml").write_text("k: [")])
    outcome = checkout.run(fake, head)
    assert outcome.code == 2
    [check] = fake.check_runs
    assert (check["status"], check["conclusion"]) == ("completed", "failure")
    assert check["output"]["title"].startswith("passk could not finish: ")
    assert "internal error" not in check["output"]["title"]
    assert "passk could not finish" in fake.comment_bodies(7)[0]
    assert fake.violations == []
