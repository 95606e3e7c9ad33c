"""The action's inputs, read once from the environment and validated.

An input that is unset or blank takes its default, as it would under
``action.yml``; any other invalid value is a one-line :class:`UsageError`
naming the input (exit 2).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UsageError
from ..github.sticky_comment import JOB_TOKEN_LOGIN, is_login
from ..github.workflow import RunnerEnv, action_input, job_token, read_runner_env

COMMENT_MODES = ("update", "changes", "new", "off")
MODES = ("gate", "baseline", "measure", "gate-measured")
"""``measure`` and ``gate-measured`` are the two jobs of the two-job mode."""
BASELINE_UPDATES = ("commit", "pull-request")


def _input(env: Mapping[str, str], name: str, default: str) -> str:
    return action_input(env, name) or default


def _choice(env: Mapping[str, str], name: str, default: str, allowed: tuple[str, ...]) -> str:
    value = _input(env, name, default)
    if value not in allowed:
        raise UsageError(
            f"invalid value {value!r}",
            where=f"input `{name}`",
            hint="use one of: " + ", ".join(allowed),
        )
    return value


@dataclass(frozen=True)
class ActionInputs:
    """The validated ``with:`` inputs, and what the runner says of the job."""

    config: str
    token: str = field(repr=False)
    """Empty when no token was given: then nothing is posted to GitHub."""
    comment: str
    check_name: str
    comment_author: str
    """The only login whose comments (and records) passk trusts as its own."""
    mode: str
    baseline_update: str
    working_directory: Path
    candidate_run: Path | None
    """A recorded candidate run (e.g. merged shards) to gate instead of running the agent."""
    runner: RunnerEnv
    """What the runner says of the job: the checkout, the event, GitHub's addresses."""

    @property
    def config_path(self) -> Path:
        return self.working_directory / self.config


def read_inputs(env: Mapping[str, str], cwd: Path) -> ActionInputs:
    """Validate every input; relative paths resolve against the runner's workspace."""
    runner = read_runner_env(env, cwd)
    workspace = runner.workspace
    config = _input(env, "config", "passk.yml")
    working = _input(env, "working-directory", ".")
    # Lexical, not resolved: a symlinked folder is the pull request's to choose, and
    # the trusted base files are looked up by the path as written.
    working_directory = Path(os.path.normpath(workspace / working))
    if not working_directory.is_dir():
        raise UsageError(
            "is not a directory of the checkout",
            where=f"input `working-directory` ({working})",
            hint="give a folder relative to the repository root, e.g. `.` or `services/refunds`",
        )
    try:
        working_directory.relative_to(workspace)
    except ValueError:
        raise UsageError(
            "points outside the workspace",
            where=f"input `working-directory` ({working})",
            hint="give a folder inside the repository",
        ) from None
    check_name = _input(env, "check-name", "passk")
    if len(check_name) > 100 or "\n" in check_name:
        raise UsageError(
            "must be one line of at most 100 characters",
            where="input `check-name`",
            hint="use a short name such as `passk` or `passk / refunds`",
        )
    comment_author = _input(env, "comment-author", JOB_TOKEN_LOGIN)
    if not is_login(comment_author):
        raise UsageError(
            f"{comment_author!r} is not a GitHub login",
            where="input `comment-author`",
            hint="give the login passk posts as, e.g. `github-actions[bot]` for the job token "
            "or `my-app[bot]` for a GitHub App's token",
        )
    token = job_token(env)
    candidate_run = _input(env, "candidate-run", "")
    return ActionInputs(
        config=config,
        token=token,
        comment=_choice(env, "comment", "update", COMMENT_MODES),
        check_name=check_name,
        comment_author=comment_author,
        mode=_choice(env, "mode", "gate", MODES),
        baseline_update=_choice(env, "baseline-update", "pull-request", BASELINE_UPDATES),
        working_directory=working_directory,
        candidate_run=(working_directory / candidate_run) if candidate_run else None,
        runner=runner,
    )
