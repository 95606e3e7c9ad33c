"""A local run's ``pull_request`` payload: the shape the action's event reader accepts."""

import pytest

from passk_action.errors import UsageError
from passk_action.github.event import pull_request_from, trigger_from
from passk_action.github.local_event import (
    LOCAL_REPOSITORY,
    EventSide,
    local_repository,
    pull_request_event,
)

BASE = EventSide("a" * 40, "main", "main")
HEAD = EventSide("b" * 40, "feature", "HEAD")


def test_the_payload_reads_back_as_the_pull_request_it_names() -> None:
    payload = pull_request_event(7, BASE, HEAD, labels=["passk:allow"], repository="o/r")
    pr = pull_request_from(payload, "event")
    assert (pr.number, pr.base_sha, pr.head_sha) == (7, "a" * 40, "b" * 40)
    assert (pr.head_ref, pr.labels, pr.fork) == ("feature", ("passk:allow",), False)
    assert trigger_from(payload).action == "synchronize"
    assert payload["pull_request"]["labels"] == [{"name": "passk:allow"}]
    assert payload["pull_request"]["head"]["ref"] == "feature"


def test_a_pull_request_number_below_one_is_a_usage_error_naming_the_flag() -> None:
    with pytest.raises(UsageError) as caught:
        pull_request_event(0, BASE, HEAD)
    assert caught.value.where == "--pr"


def test_the_repository_is_the_runners_when_set_else_a_placeholder() -> None:
    assert local_repository({"GITHUB_REPOSITORY": "o/r"}) == "o/r"
    assert local_repository({}) == LOCAL_REPOSITORY
