"""Baseline mode pushes with the action's token, never with one left on disk.

The example workflows check out with ``persist-credentials: false`` (so no
agent can read the job's token from the checkout), so ``mode: baseline`` must
push without the credentials ``actions/checkout`` would have persisted.  The
remote here is a real smart-HTTP git server on loopback (``git http-backend``
behind a small HTTP server) that accepts a push only with the header
``actions/checkout`` would send; it records every Authorization header.
"""

from __future__ import annotations

import base64
import io
import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from passk_action.action import main as action_main
from passk_action.sides.gitrepo import GitRepo, token_auth_env
from support.pull_request_repo import (
    EVENTS,
    TOKEN,
    git,
    template,  # noqa: F401 - the shared repository fixture
)

BASIC = base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()
EXPECTED = f"basic {BASIC}"


class GitServer:
    """``git http-backend`` for the bare repositories under ``root``, on 127.0.0.1."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.authorizations: list[list[str]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                self.serve()

            def do_POST(self) -> None:
                self.serve()

            def serve(self) -> None:
                sent = self.headers.get_all("Authorization") or []
                server.authorizations.append(sent)
                if sent != [EXPECTED]:
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Basic realm="git"')
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                url = urlsplit(self.path)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                env = {
                    "PATH": os.environ["PATH"],
                    "GIT_PROJECT_ROOT": str(server.root),
                    "GIT_HTTP_EXPORT_ALL": "1",
                    "REMOTE_USER": "x-access-token",  # http-backend then allows receive-pack
                    "REMOTE_ADDR": "127.0.0.1",
                    "REQUEST_METHOD": self.command,
                    "PATH_INFO": url.path,
                    "QUERY_STRING": url.query,
                    "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                    "CONTENT_LENGTH": str(len(body)),
                    "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
                    "GIT_CONFIG_NOSYSTEM": "1",
                }
                out = subprocess.run(
                    ["git", "http-backend"], input=body, env=env, capture_output=True, check=True
                ).stdout
                head, _, payload = out.partition(b"\r\n\r\n")
                status = 200
                headers: list[tuple[str, str]] = []
                for line in head.decode("latin-1").split("\r\n"):
                    name, _, value = line.partition(":")
                    if name.lower() == "status":
                        status = int(value.split()[0])
                    elif name:
                        headers.append((name, value.strip()))
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> GitServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def served(
    template: Path,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[tuple[Path, Path, GitServer]]:
    """A clone of the template whose origin is the loopback git server, holding main."""
    monkeypatch.setenv("GIT_TERMINAL_PROMPT", "0")  # a refused push fails, never prompts
    monkeypatch.delenv("GIT_CONFIG_COUNT", raising=False)
    remotes = tmp_path / "remotes"
    remote = remotes / "octo-org" / "refund-agent.git"
    remote.parent.mkdir(parents=True)
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    repo = tmp_path / "repo"
    shutil.copytree(template, repo, symlinks=True)
    git(remote, "fetch", "-q", str(repo), "main:main")
    with GitServer(remotes) as server:
        git(repo, "remote", "add", "origin", f"{server.url}/octo-org/refund-agent.git")
        yield repo, remote, server


def run_baseline(repo: Path, tmp: Path, server_url: str, token: str) -> tuple[int, str]:
    event = tmp / "push.json"
    payload = json.loads((EVENTS / "push.with-new-branch.json").read_text(encoding="utf-8"))
    payload["after"] = git(repo, "rev-parse", "HEAD")
    event.write_text(json.dumps(payload), encoding="utf-8")
    env = {
        "PATH": "/usr/bin:/bin:/usr/local/bin",
        "GITHUB_EVENT_NAME": "push",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_REPOSITORY": "octo-org/refund-agent",
        "GITHUB_SERVER_URL": server_url,
        "GITHUB_WORKSPACE": str(repo),
        "GITHUB_OUTPUT": str(tmp / "output.txt"),
        "GITHUB_STEP_SUMMARY": str(tmp / "summary.md"),
        "GITHUB_REF_NAME": "main",
        "INPUT_GITHUB-TOKEN": token,
        "INPUT_MODE": "baseline",
        "INPUT_BASELINE-UPDATE": "commit",
    }
    out = io.StringIO()
    code = action_main(env, stdout=out, stderr=io.StringIO(), cwd=repo)
    return code, out.getvalue()


def files_holding(root: Path, needle: str) -> list[Path]:
    return [
        path for path in root.rglob("*") if path.is_file() and needle.encode() in path.read_bytes()
    ]


def test_without_persisted_credentials_the_push_carries_the_token_in_memory_only(
    served: tuple[Path, Path, GitServer], tmp_path: Path
) -> None:
    repo, remote, server = served
    before = git(repo, "rev-parse", "HEAD")
    code, stdout = run_baseline(repo, tmp_path, server.url, TOKEN)

    assert code == 0, stdout
    head = git(remote, "rev-parse", "main")
    assert git(remote, "rev-parse", f"{head}^") == before
    assert git(remote, "show", "--name-only", "--format=", head) == ".passk/baseline.json"
    # Every request carried exactly the header actions/checkout would have sent.
    assert server.authorizations and all(sent == [EXPECTED] for sent in server.authorizations)
    # And nothing on disk holds it: not the checkout's config, not any file.
    for secret in (TOKEN, BASIC):
        assert files_holding(repo, secret) == []
    assert "extraheader" not in (repo / ".git" / "config").read_text()


def test_the_push_is_refused_without_a_token(
    served: tuple[Path, Path, GitServer], tmp_path: Path
) -> None:
    repo, remote, server = served
    before = git(remote, "rev-parse", "main")
    code, stdout = run_baseline(repo, tmp_path, server.url, "")

    assert code == 2, stdout
    assert git(remote, "rev-parse", "main") == before
    assert server.authorizations[0] == []


def test_persisted_credentials_are_used_as_they_are(
    served: tuple[Path, Path, GitServer], tmp_path: Path
) -> None:
    repo, remote, server = served
    before = git(repo, "rev-parse", "HEAD")
    # actions/checkout with persist-credentials: true: git sends its header, and
    # passk adds no second one (two Authorization headers are refused).
    git(repo, "config", f"http.{server.url}/.extraheader", f"AUTHORIZATION: {EXPECTED}")
    code, stdout = run_baseline(repo, tmp_path, server.url, "ghs_anotherTokenNotForPushing")

    assert code == 0, stdout
    assert git(remote, "rev-parse", "main^") == before
    assert all(sent == [EXPECTED] for sent in server.authorizations)
    # The baseline's agent ran from this checkout as passk's own user: it could read it.
    assert [line for line in stdout.splitlines() if "holds a token" in line] == [
        "::warning title=passk::the checkout's git config holds a token that agents can "
        f"read: http.{server.url}/.extraheader in {repo}/.git/config (they run as passk's own "
        "user, so passk cannot hide it); set `persist-credentials: false` on actions/checkout"
    ]


def test_token_auth_env_adds_to_config_already_in_the_environment() -> None:
    env = token_auth_env("https://github.example.com/", TOKEN, {"GIT_CONFIG_COUNT": "2"})
    assert env == {
        "GIT_CONFIG_COUNT": "3",
        "GIT_CONFIG_KEY_2": "http.https://github.example.com/.extraheader",
        "GIT_CONFIG_VALUE_2": f"AUTHORIZATION: {EXPECTED}",
    }


def test_the_header_reaches_git_only_through_the_environment(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    repo = GitRepo.discover(tmp_path)
    env = token_auth_env("https://github.com", TOKEN, {})
    seen = repo.run(
        ("config", "--show-origin", "--get-all", "http.https://github.com/.extraheader"),
        what="read the header",
        env=env,
    ).decode()
    assert seen == f"command line:\tAUTHORIZATION: {EXPECTED}\n"
