"""The runner's own credentials: names no agent, no setup and no config may reach.

The job's token reaches passk as ``INPUT_GITHUB-TOKEN`` (the action's input)
or ``GITHUB_TOKEN``/``GH_TOKEN`` (a step's ``env:``); the Actions runtime
adds ``ACTIONS_RUNTIME_TOKEN``, ``ACTIONS_ID_TOKEN_REQUEST_TOKEN`` and the
URLs they are spent at (``ACTIONS_RUNTIME_URL``, ``ACTIONS_ID_TOKEN_REQUEST_URL``,
``ACTIONS_CACHE_URL``, ``ACTIONS_RESULTS_URL``).  With any of them, the pull
request's agent could post a passing check on its own head commit, so:

- every name in :data:`RUNNER_CREDENTIALS`, and every ``ACTIONS_*`` and
  ``INPUT_*`` name (the runtime's variables and the action's inputs, the
  token among them), is a runner credential (:func:`is_runner_credential`,
  case-insensitive);
- :func:`without_runner_credentials` is the one scrub: those names, and any
  variable whose value holds the token under another name
  (``MY_COPY: ${{ github.token }}``, or a copy of ``GITHUB_TOKEN``'s value),
  are removed whatever a config says;
- a config that names one in ``agent.env``, ``agent.pass_env`` or an HTTP
  header's ``${VAR}`` is refused when it loads (``inputs/config.py``), base
  or head, in the action and on a laptop alike.
"""

from __future__ import annotations

from collections.abc import Mapping

RUNNER_CREDENTIALS = (
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "INPUT_GITHUB-TOKEN",
    "ACTIONS_RUNTIME_TOKEN",
    "ACTIONS_RUNTIME_URL",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
    "ACTIONS_ID_TOKEN_REQUEST_URL",
    "ACTIONS_CACHE_URL",
    "ACTIONS_RESULTS_URL",
)
"""The job's token under the names the runner and workflows give it, and the runtime's own."""

RUNNER_PREFIXES = ("ACTIONS_", "INPUT_")
"""The Actions runtime's variables, and the action's inputs (``github-token`` among them)."""


def is_runner_credential(name: str) -> bool:
    """Whether ``name`` is one of the runner's credentials (case-insensitive)."""
    upper = name.upper()
    return upper in RUNNER_CREDENTIALS or upper.startswith(RUNNER_PREFIXES)


TOKEN_NAMES = (
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "INPUT_GITHUB-TOKEN",
    "ACTIONS_RUNTIME_TOKEN",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
)
"""The credentials whose values are secrets: a copy of one under another name goes too."""

MIN_SECRET_CHARS = 8
"""A shorter value is no token (and dropping every variable holding it would drop innocents)."""


def without_runner_credentials(env: Mapping[str, str], token: str = "") -> dict[str, str]:
    """``env`` without the runner's credentials, and without any value holding a token.

    A token: ``token`` (the action's), and the value of every :data:`TOKEN_NAMES`
    variable in ``env`` itself, so a copy under another name is caught even
    where passk was given no token (``passk run`` in a shard job).  No
    exception: no config setting can keep one (``pass_env`` cannot either).
    """
    secrets = {env.get(name, "") for name in TOKEN_NAMES} | {token}
    secrets = {secret for secret in secrets if len(secret) >= MIN_SECRET_CHARS}
    return {
        name: value
        for name, value in env.items()
        if not is_runner_credential(name) and not any(secret in value for secret in secrets)
    }
