"""The readers the config's sections share: one command reader for an agent and a scorer."""

from __future__ import annotations

from pathlib import Path

import pytest

from passk_action.errors import ConfigError
from passk_action.inputs.config import parse_config
from passk_action.inputs.settings_values import command

SCORER = "dataset: d.jsonl\nagent: {{command: [python3]}}\nscoring: {{by: command, command: {0}}}\n"
AGENT = "dataset: d.jsonl\nagent: {{command: {0}}}\n"


def test_a_list_is_taken_as_written_and_a_string_is_split_like_a_shell() -> None:
    assert command(["python3", "a b.py"], "k", "[]") == ("python3", "a b.py")
    assert command("python3 'a b.py' -v", "k", "[]") == ("python3", "a b.py", "-v")


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ('"   "', "the command is blank"),
        ('"python3 \'open"', "cannot split the command like a shell would: No closing quotation"),
    ],
    ids=["blank", "open-quote"],
)
@pytest.mark.parametrize(
    ("template", "key", "example"),
    [(AGENT, "agent.command", "agent.py"), (SCORER, "scoring.command", "scorer.py")],
    ids=["agent", "scorer"],
)
def test_an_agent_and_a_scorer_refuse_a_bad_command_in_the_same_words(
    raw: str, message: str, template: str, key: str, example: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(template.format(raw), Path("passk.yml"))
    assert caught.value.message == message
    assert caught.value.where == f"passk.yml: {key}"
    assert example in (caught.value.hint or "")
