"""A verdict names its base, and a verdict against another base never stands for this one.

Issue 28 route 4: a same-repository author pushes a branch whose base config judges
a broken row differently, retargets the pull request to it, gets a green check on
the head commit, and retargets back (which fires only ``edited``).  Each attack runs
beside its control.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from support.fakegithub import SPECS_DIR, FakeGitHub
from support.pull_request_repo import (
    EXAMPLE_BASE_REF,
    RIGHT,
    Checkout,
    checkout,
    commit,
    edit_config,
    fake,
    git,
    template,
)

__all__ = ["checkout", "fake", "template"]  # the shared fixtures, used by name

MAIN = EXAMPLE_BASE_REF


def lenient_branch(checkout: Checkout) -> str:
    """A branch off main that blocks on must-not-break rows only: the attacker's base."""
    repo = checkout.repo
    git(repo, "checkout", "-q", "-b", "lenient", "main")
    edit_config(lambda c: c["gate"].update(block_on_any_regression=False))(repo)
    sha = commit(repo, "a base that blocks on must-not-break rows only")
    git(repo, "checkout", "-q", "feature")
    return sha


def flip_r3() -> dict[str, list[str]]:
    """The candidate breaks r3 (not must-not-break): blocking only under any-regression."""
    return {**RIGHT, "r3": ["approve", "deny"]}


def test_the_edited_event_the_tests_send_is_one_github_describes(checkout: Checkout) -> None:
    schema = json.loads((SPECS_DIR / "events/pull_request.edited.schema.json").read_text("utf-8"))
    payload = json.loads(Path(checkout.event("a" * 40, edited_from="lenient")).read_text("utf-8"))
    assert payload["action"] == "edited"
    changes = schema["properties"]["changes"]
    jsonschema.Draft7Validator(changes).validate(payload["changes"])
    with pytest.raises(jsonschema.ValidationError):  # the check can fail
        jsonschema.Draft7Validator(changes).validate({"base": {"ref": "lenient"}})


@pytest.mark.parametrize("stale", ["attack-rerun-of-old-base", "control-current-base"])
def test_a_retargeted_pull_request_is_gated_against_its_current_base_only(
    checkout: Checkout, fake: FakeGitHub, stale: str
) -> None:
    """Attack: the head breaks r3; against a base that blocks on must-not-break rows
    only it passes, and its check says so, naming that base.  Retargeted back to main
    (an ``edited`` event, which the shipped workflows now handle), the gate fails naming
    main; then a re-run of the old run (its event still names the lenient base) is
    refused before it posts anything, so the failing check stands.  Control: the re-run
    of the current event gates again, against main."""
    main_sha = checkout.base_sha
    lenient = lenient_branch(checkout)
    head = checkout.head(flip_r3())
    checkout.base_sha = lenient
    green = checkout.run(fake, head, base_ref="lenient")
    assert green.code == 0, green.stdout
    assert fake.check_runs[-1]["output"]["title"].endswith(f" · vs lenient at {lenient[:12]}")
    assert f"base `lenient` at `{lenient[:12]}`" in fake.check_runs[-1]["output"]["summary"]

    checkout.base_sha = main_sha
    red = checkout.run(fake, head, edited_from="lenient")
    assert red.code == 1, red.stdout
    assert fake.check_runs[-1]["output"]["title"] == (
        f"1 row regressed: r3 · vs {MAIN} at {main_sha[:12]}"
    )
    posted = (len(fake.check_runs), list(fake.comment_bodies(7)))

    if stale == "attack-rerun-of-old-base":
        checkout.base_sha = lenient
        rerun = checkout.run(fake, head, base_ref="lenient", current_base_ref=MAIN)
        assert rerun.code == 2, rerun.stdout
        assert (
            f"this run's event is for the base 'lenient', but pull request #7 now targets '{MAIN}'"
        ) in rerun.stderr + rerun.stdout
        assert (len(fake.check_runs), fake.comment_bodies(7)) == posted  # nothing posted
        assert fake.check_runs[-1]["conclusion"] == "failure"
    else:
        rerun = checkout.run(fake, head)
        assert rerun.code == 1, rerun.stdout
        assert fake.check_runs[-1]["conclusion"] == "failure"
        assert fake.check_runs[-1]["output"]["title"].endswith(f"vs {MAIN} at {main_sha[:12]}")
    assert fake.violations == []
