"""An agent's settings (``agent`` and ``baseline.agent``): a command or an HTTP endpoint.

Read once from a schema-valid block; a block that would hand an agent one of
the runner's credentials is refused here, for the base's config and the pull
request's alike.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ..core.runner_credentials import is_runner_credential
from ..errors import ConfigError
from .settings_values import command as settings_command
from .settings_values import seconds

DEFAULT_TIMEOUT_S = 60.0
DEFAULT_HTTP_TIMEOUT_S = 30.0
DEFAULT_SETUP_TIMEOUT_S = 600.0
"""Seconds one ``agent.setup`` command may take: a ``pip install`` of an SDK fits in 10 minutes."""
HEADER_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
"""A ``${VAR}`` in an HTTP agent's header value: expanded from the environment per request."""
_AGENT_EXAMPLE = '["python3", "agent.py"]'


@dataclass(frozen=True)
class HttpAgentConfig:
    """An agent reached over HTTP instead of a local command."""

    url: str
    method: str = "POST"
    # Header values are credentials more often than not: keep them out of reprs.
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    timeout_s: float = DEFAULT_HTTP_TIMEOUT_S

    def describe(self) -> str:
        """``POST https://host/path``: credentials and query values are left out.

        Descriptions end up in PR comments and artifacts; URLs often carry
        tokens in their userinfo or query string, headers almost always do.
        """
        parts = urlsplit(self.url)
        host = parts.hostname or ""
        if parts.port is not None:
            host = f"{host}:{parts.port}"
        query = "…" if parts.query else ""
        return f"{self.method} {urlunsplit((parts.scheme, host, parts.path, query, ''))}"


@dataclass(frozen=True)
class AgentConfig:
    """How to run one version of the agent: exactly one of ``command`` and ``http``."""

    command: tuple[str, ...] | None
    http: HttpAgentConfig | None
    cwd: Path
    timeout_s: float = DEFAULT_TIMEOUT_S
    env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    pass_env: tuple[str, ...] = ()
    protocol: str = "process"
    setup: tuple[str, ...] = ()
    """Shell commands run once per run, before any attempt (``agents/setup.py``)."""
    setup_timeout_s: float = DEFAULT_SETUP_TIMEOUT_S
    """Seconds each setup command may take before it is stopped (exit 2 naming it)."""
    where: str = field(default="agent", compare=False)
    """The config key this agent came from (``agent`` or ``baseline.agent``), for messages."""
    fingerprint: tuple[Path, ...] = ()
    """What the agent runs (folders or files): a baseline is stale when their git trees change."""

    def describe(self) -> str:
        """A human description: the shell-quoted command, or method and URL.

        Never includes environment or header values, which may be secrets.
        """
        if self.http is not None:
            return self.http.describe()
        return shlex.join(self.command or ())


def build_agent(doc: dict[str, Any], base: Path, name: str, key: str) -> AgentConfig:
    """The schema-valid agent block at ``key`` (``agent`` or ``baseline.agent``) of the
    config ``name``; its relative paths from ``base``, the config's folder."""
    raw = doc.get("command")
    command = (
        None if raw is None else settings_command(raw, f"{name}: {key}.command", _AGENT_EXAMPLE)
    )
    http: HttpAgentConfig | None = None
    http_doc = doc.get("http")
    if http_doc is not None:
        http = HttpAgentConfig(
            url=_http_url(http_doc["url"], f"{name}: {key}.http.url"),
            method=http_doc.get("method", "POST"),
            headers=tuple(http_doc.get("headers", {}).items()),
            timeout_s=seconds(http_doc, "timeout_s", DEFAULT_HTTP_TIMEOUT_S, f"{name}: {key}.http"),
        )
    return AgentConfig(
        command=command,
        http=http,
        cwd=base / doc["cwd"] if "cwd" in doc else base,
        timeout_s=seconds(doc, "timeout_s", DEFAULT_TIMEOUT_S, f"{name}: {key}"),
        env=MappingProxyType(dict(doc.get("env", {}))),
        pass_env=tuple(doc.get("pass_env", ())),
        protocol=str(doc.get("protocol", "process")),
        setup=tuple(doc.get("setup", ())),
        setup_timeout_s=seconds(doc, "setup_timeout_s", DEFAULT_SETUP_TIMEOUT_S, f"{name}: {key}"),
        where=f"{name}: {key}",
        fingerprint=tuple(base / p for p in doc.get("fingerprint", ())),
    )


def _http_url(url: str, where: str) -> str:
    """``url`` when the URL parser can take it: the schema's pattern lets some through.

    ``http://h:99999/``, ``http://h:abc/`` and ``http://[zz]/`` match the
    pattern, and urllib refuses them only when their port or host is read.
    """
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises for a port that is not a number from 0 to 65535
    except ValueError as exc:
        raise ConfigError(
            f"is not a URL passk can use ({exc})",
            where=where,
            hint="write it as http://host:port/path, with a port from 1 to 65535",
        ) from exc
    if not parts.hostname:
        raise ConfigError("names no host", where=where, hint="write it as http://host:port/path")
    return url


def refuse_runner_credentials(doc: Mapping[str, Any], where: str) -> list[str]:
    """Refuse an agent block that names a runner credential; warn that ``pass_env`` does nothing.

    ``env``, ``pass_env`` and an HTTP header's ``${VAR}`` are where a config
    could hand an agent (and its setup) the job's token or the Actions
    runtime's: a config that names one is
    refused, the base's and the pull request's alike.  Any other name in
    ``pass_env`` reaches the agent anyway: passk removes only the runner's
    credentials, which nothing can pass.
    """
    named = [(f"env.{key}", key) for key in doc.get("env", {})]
    named += [(f"pass_env[{i}]", key) for i, key in enumerate(doc.get("pass_env", ()))]
    named += [
        (f"http.headers.{header}", ref)
        for header, value in doc.get("http", {}).get("headers", {}).items()
        for ref in HEADER_ENV_REF.findall(value)
    ]
    for key, variable in named:
        if is_runner_credential(variable):
            raise ConfigError(
                f"{variable} is a credential of the runner (the job's token or the Actions "
                "runtime's); no config can pass it to an agent or its setup",
                where=f"{where}.{key}",
                hint="remove it; give the agent a key of its own under another name "
                "(e.g. a repository secret in the passk step's env:)",
            )
    if doc.get("pass_env"):
        return [
            f"{where}.pass_env: has no effect, ignored: passk removes only the runner's "
            "credentials, which no config can pass; every other variable reaches the agent"
        ]
    return []
