"""The runner's credentials: the one scrub every agent's and setup's environment goes through."""

from __future__ import annotations

from passk_action.core.runner_credentials import (
    RUNNER_CREDENTIALS,
    is_runner_credential,
    without_runner_credentials,
)

TOKEN = "ghs_0123456789abcdefghij"


def test_every_runner_credential_goes_by_name_whatever_its_case() -> None:
    names = [*RUNNER_CREDENTIALS, "ACTIONS_CACHE_SERVICE_V2", "INPUT_CONFIG", "github_token"]
    assert all(is_runner_credential(name) for name in names)
    env = {name: "x" for name in names} | {"OPENAI_API_KEY": "sk-1", "HOME": "/h"}
    assert without_runner_credentials(env) == {"OPENAI_API_KEY": "sk-1", "HOME": "/h"}


def test_a_copy_of_a_token_under_another_name_goes_too() -> None:
    env = {"GITHUB_TOKEN": TOKEN, "MY_COPY": f"Bearer {TOKEN}", "HOME": "/h"}
    assert without_runner_credentials(env) == {"HOME": "/h"}  # no token given: read from env
    given = {"MY_COPY": f"x{TOKEN}x", "HOME": "/h"}
    assert without_runner_credentials(given, TOKEN) == {"HOME": "/h"}


def test_control_short_values_and_other_keys_stay() -> None:
    # A value too short to be a token drops nothing that merely contains it.
    env = {"GH_TOKEN": "1", "ADDRESS": "127.0.0.1", "GITHUB_REPOSITORY": "o/r"}
    assert without_runner_credentials(env, "") == {
        "ADDRESS": "127.0.0.1",
        "GITHUB_REPOSITORY": "o/r",
    }
    assert not is_runner_credential("GITHUB_REPOSITORY") and not is_runner_credential("MY_COPY")
