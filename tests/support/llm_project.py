"""The SDK example (examples/refunds-llm) as a team's repository, for the action tests.

Both action variants (runner/action.yml in tests/action/test_runner_action.py, the
image in tests/container/) gate the same pull request: the base commit runs
prompt v1 in production with the committed baseline, the pull request
switches the agent to prompt v2. The seeded fake provider
(examples/refunds-llm/fake_openai.py) answers on loopback, so both variants
must post the same comment: one golden file, tests/golden/action/.
"""

from __future__ import annotations

import base64
import contextlib
import difflib
import gzip
import importlib.util
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from passk_action import __version__

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "refunds-llm"
KEY = "sk-test-llm-project-0123456789abcdef"
SETUP = "python3 -m pip install -r requirements.txt"
GOLDEN = REPO / "tests" / "golden" / "action" / "refunds_llm_comment.md"
BRANCH = "feature/refund-agent"
BLOCKING = ["q-034", "q-035", "q-036", "q-037", "q-038", "q-040", "q-041"]
"""The must-not-break rows prompt v2 breaks, as the gate's default rule (relative) finds them:
q-038 is stable-correct on its k main attempts and shown worse by the attempts after them;
q-040 and q-041 (an unclear damage story on an expensive item) drop from right 70% of the time
to 50% (fake_openai.py's UNCLEAR_DAMAGE against SKEPTIC_UNCLEAR), which the relative rule
catches side by side and the sequential rule passed (the baseline, run again, "varied")."""
DAMAGE_DIVERGES = BLOCKING[:5]
"""Of them, the rows whose first divergent check the comparison names: ``damage``."""
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Octo Cat",
    "GIT_AUTHOR_EMAIL": "octocat@example.com",
    "GIT_AUTHOR_DATE": "2026-01-05T10:00:00Z",
    "GIT_COMMITTER_NAME": "Octo Cat",
    "GIT_COMMITTER_EMAIL": "octocat@example.com",
    "GIT_COMMITTER_DATE": "2026-01-05T10:00:00Z",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args],
        cwd=cwd,
        env={**os.environ, **GIT_ENV},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def load_fake_openai() -> Any:
    """examples/refunds-llm/fake_openai.py, the example's own fake provider."""
    name = "llm_project_fake_openai"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, EXAMPLE / "fake_openai.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while being built
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def fake_llm_server() -> Iterator[Any]:
    """The example's seeded fake provider on loopback, rate limiting like a real key."""
    fake_openai = load_fake_openai()
    server, thread = fake_openai.serve_in_thread(
        fake_openai.Settings(seed=0, api_key=KEY, rate_limit=0.05, retry_after_s=0.05)
    )
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def example_files() -> list[str]:
    """The example as committed (not whatever a local demo run left beside it)."""
    listed = git(REPO, "ls-files", "--", "examples/refunds-llm")
    files = [line.removeprefix("examples/refunds-llm/") for line in listed.splitlines()]
    assert ".passk/baseline.json" in files and "requirements.txt" in files
    return files


@dataclass(frozen=True)
class Project:
    repo: Path
    base: str
    head: str


def make_project(
    repo: Path, *, setup: bool = True, branch: str = BRANCH, sequential: bool = True
) -> Project:
    """Commit the example into ``repo`` (an empty directory) as a team would have it.

    Base commit: prompt v1 in production with the committed baseline; both
    agents get ``setup`` (unless ``setup`` is false: a team that did not know
    it needs one). Head, on ``branch``: the agent switched to prompt v2.
    Commit dates are fixed, so the commits' ids are the same on every run;
    with ``sequential``, concurrency is 1 (the example's is 4), so the comment is too.
    """
    git(repo, "init", "-q", "-b", "main")
    for name in example_files():
        target = repo / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((EXAMPLE / name).read_bytes())
    config = yaml.safe_load((EXAMPLE / "passk.yml").read_text(encoding="utf-8"))
    assert config["agent"]["command"] == ["python3", "agent.py", "--prompt", "v2"]
    for agent in (config["agent"], config["baseline"]["agent"]):
        if setup:
            agent["setup"] = [SETUP]
    # The seeded fake numbers its answers per prompt in the order calls arrive;
    # with several attempts of a row in flight, which attempt gets which answer
    # (and so the order of tied counts, listed first seen) would vary from run
    # to run. One attempt at a time fixes it, so the whole comment is a golden.
    if sequential:
        config["concurrency"] = 1
    candidate = yaml.safe_dump(config, sort_keys=False)
    config["agent"]["command"] = ["python3", "agent.py", "--prompt", "v1"]
    (repo / "passk.yml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "Refund agent on the openai SDK, prompt v1, its baseline")
    base = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "-b", branch)
    (repo / "passk.yml").write_text(candidate, encoding="utf-8")
    git(repo, "commit", "-q", "-am", "Prompt v2: accept partial proof, doubt damage claims")
    return Project(repo, base, git(repo, "rev-parse", "HEAD"))


LATENCY = re.compile(r"p95 (\S+ m?s) → \S+ m?s \([+-]?\d+%\)")
RECORD = re.compile(r"<!-- passk:record v1 (\S+) -->")


def decode_record(body: str) -> dict[str, Any]:
    (blob,) = RECORD.findall(body)
    record: dict[str, Any] = json.loads(gzip.decompress(base64.b64decode(blob)))
    return record


def normalized_comment(body: str, project: Project) -> str:
    """The comment with what depends on the clock replaced, and only that.

    The candidate's p95 latency is wall time (the fake's 429 windows make it
    vary); the verdict record keeps every attempt's duration (checked apart,
    by :func:`decode_record`); the commits are named by placeholders so the
    file reads the same however git hashes, and passk's version by one, so a
    release changes no golden. The baseline's p95 comes from the committed
    artifact and stays.
    """
    assert len(LATENCY.findall(body)) == 1, body
    text = LATENCY.sub(r"p95 \1 → <candidate p95> (<change>)", body)
    assert len(RECORD.findall(text)) == 1
    text = RECORD.sub("<!-- passk:record v1 <record> -->", text)
    assert text.count(f"passk `{__version__}`") == 1, text
    text = text.replace(f"passk `{__version__}`", "passk `<version>`")
    return text.replace(project.head[:12], "<head>").replace(project.base[:12], "<base>")


def check_comment(body: str, project: Project) -> None:
    """The whole comment against the golden (``PASSK_UPDATE_GOLDEN=1`` rewrites it)."""
    text = normalized_comment(body, project)
    if os.environ.get("PASSK_UPDATE_GOLDEN") == "1":
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(text, encoding="utf-8")
    expected = GOLDEN.read_text(encoding="utf-8")
    assert text == expected, "".join(
        difflib.unified_diff(expected.splitlines(True), text.splitlines(True), "golden", "got")
    )
    record = decode_record(body)
    assert (record["head_sha"], record["base_sha"]) == (project.head, project.base)
    assert record["passed"] is False and record["failures"] == len(BLOCKING)
    assert record["candidate_agent"] == "python3 agent.py --prompt v2"
