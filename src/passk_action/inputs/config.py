"""Load ``passk.yml`` once into frozen dataclasses.

The file is parsed as YAML, checked against ``schemas/config.schema.json`` (the
same schema editors can use) and then built into :class:`Config`.  Problems are
one-line :class:`~passk_action.errors.ConfigError` s naming the key
(``passk.yml: agent.timeout_s``) or, for YAML syntax, the line
(``passk.yml:7``).  Unknown keys do not fail the run: they come back as
warnings with a "did you mean" so a typo is visible but an older passk can
still read a newer config.

Relative paths in the config (dataset, agent cwd, baseline artifact) are
relative to the config file's folder, never to the process's working
directory, so ``passk`` behaves the same from any directory.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import json
import math
import re
import shlex
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar
from urllib.parse import urlsplit, urlunsplit

import yaml
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from ..core import values
from ..core.cost import Price, Pricing
from ..core.gate import GatePolicy
from ..core.model import (
    BY_COMMAND,
    BY_ENVIRONMENT,
    BY_EXPECTED,
    DEFAULT_SCORER_TIMEOUT_S,
    DEFAULT_THRESHOLD,
    EXACT,
    SET,
    EvalSettings,
    Extractor,
    FieldRule,
    Scoring,
)
from ..core.regex import Unsupported, compile_pattern
from ..core.runner_credentials import is_runner_credential
from ..core.scoring import pointer_parts
from ..core.sequential import DEFAULT_RULE, RuleSettings
from ..errors import ConfigError, PasskError
from ..files import read_bounded
from .schema_errors import (
    describe_value,
    error_message,
    error_parts,
    json_path,
    known_keys,
    most_relevant,
    unknown_keys,
)

DEFAULT_K = 3
DEFAULT_CONCURRENCY = 4
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_HTTP_TIMEOUT_S = 30.0
DEFAULT_SETUP_TIMEOUT_S = 600.0
"""Seconds one ``agent.setup`` command may take: a ``pip install`` of an SDK fits in 10 minutes."""
DEFAULT_ARTIFACT = ".passk/baseline.json"
DEFAULT_ADDED_ROWS_LIMIT = 5
"""Rows a pull request adds that the two-job gating job measures on the base agent."""
DEFAULT_ALLOW_LABEL = "passk-allow-baseline-change"
DEFAULT_REMEASURE_LABEL = "passk:remeasure"
HEADER_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
"""A ``${VAR}`` in an HTTP agent's header value: expanded from the environment per request."""


# --------------------------------------------------------------------------- YAML


_BaseLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_TIMESTAMP = "tag:yaml.org,2002:timestamp"


class StrictYamlLoader(_BaseLoader):  # type: ignore[valid-type,misc]
    """A YAML safe loader fit for JSON-shaped documents (configs and datasets).

    - Dates stay strings: JSON has no dates, and ``id: 2024-01-31`` or an
      input field holding a date should reach the agent as written, not as a
      Python ``date`` that cannot be serialized.
    - A key repeated in one mapping is an error: YAML would silently keep the
      last one, which hides e.g. a second ``must_not_break:`` that undoes the
      first.
    """

    yaml_implicit_resolvers: ClassVar[dict[Any, Any]] = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP]
        for first, resolvers in _BaseLoader.yaml_implicit_resolvers.items()
    }

    def construct_mapping(self, node: yaml.Node, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, yaml.MappingNode):
            seen: set[tuple[str, str]] = set()
            for key_node, _ in node.value:
                if not isinstance(key_node, yaml.ScalarNode):
                    continue
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = (key_node.tag, key_node.value)
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping",
                        node.start_mark,
                        f"found duplicate key {key_node.value!r}",
                        key_node.start_mark,
                    )
                seen.add(key)
        result: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        return result

    def get_single_node(self) -> yaml.Node | None:
        node: yaml.Node | None = super().get_single_node()
        if node is not None:
            check_aliases(node)
        return node


ALIAS_GROWTH = 10
"""How many times the nodes written aliases may expand a document to (plus ALIAS_SLACK)."""
ALIAS_SLACK = 100_000


def check_aliases(root: yaml.Node) -> None:
    """Refuse an alias that refers to a node holding it, or aliases that expand too far.

    YAML's aliases share one value: ``&a [x, x]`` used ten times in ``&b``,
    ``&b`` ten times in ``&c``, and so on, is a few lines that expand to a
    billion values when passk walks, validates or serializes the document
    (an alias bomb), and ``&a [*a]`` holds itself and never ends.  The
    document as passk will walk it may hold at most ``ALIAS_GROWTH`` times
    the nodes written plus ``ALIAS_SLACK``; anchors for shared defaults stay
    well inside that.  Iterative: a deep document must not exhaust the stack.
    """
    expanded: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        children = _children(node)
        if done:
            open_nodes.discard(key)
            expanded[key] = 1 + sum(expanded[id(child)] for child in children)
            continue
        if key in expanded:
            continue
        if key in open_nodes:
            raise yaml.composer.ComposerError(
                None, None, "an alias refers to the node that holds it", node.start_mark
            )
        open_nodes.add(key)
        stack.append((node, True))
        for child in children:
            if id(child) in open_nodes:
                raise yaml.composer.ComposerError(
                    None, None, "an alias refers to the node that holds it", child.start_mark
                )
            if id(child) not in expanded:
                stack.append((child, False))
    written = len(expanded)
    if expanded[id(root)] > ALIAS_GROWTH * written + ALIAS_SLACK:
        raise yaml.composer.ComposerError(
            None,
            None,
            f"its aliases expand {written:,} values to {expanded[id(root)]:,} "
            f"(at most {ALIAS_GROWTH} times the values written plus {ALIAS_SLACK:,})",
            root.start_mark,
        )


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


StrictYamlLoader.add_constructor(_TIMESTAMP, yaml.SafeLoader.construct_yaml_str)


def yaml_error_line(exc: yaml.YAMLError, text: str) -> int | None:
    """The 1-based line a YAML error points at, if it says."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    if mark is not None:
        return int(mark.line) + 1
    position = getattr(exc, "position", None)  # ReaderError: bad characters
    if isinstance(position, int):
        return text.count("\n", 0, position) + 1
    return None


def yaml_problem(exc: yaml.YAMLError) -> str:
    """The YAML error's own words, on one line, without its excerpt of the file."""
    problem = getattr(exc, "problem", None)
    context = getattr(exc, "context", None)
    if problem:
        text = f"{context}: {problem}" if context and "duplicate" not in problem else problem
    else:
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return " ".join(text.split())


def yaml_hint(exc: yaml.YAMLError) -> str:
    if "duplicate key" in str(getattr(exc, "problem", "")):
        return "a key may appear only once in a mapping; remove or rename one of them"
    if "alias" in str(getattr(exc, "problem", "")):
        return "write the values out instead of nesting aliases (anchors `&`, aliases `*`)"
    return "fix the YAML syntax at that line"


# The loaders of the config and of a dataset read, decode and parse YAML the
# same way; these helpers give both the same messages, each in its own error class.


def yaml_load_error(
    exc: Exception, text: str, source: str, error: type[PasskError], *, default_line: int | None
) -> PasskError:
    """Translate an exception from loading YAML ``text`` (a YAMLError, or too-deep nesting).

    ``where`` is ``source:line`` when the line is known, else ``source:default_line``
    (just ``source`` when ``default_line`` is None).  Raise it ``from exc``.
    """
    if isinstance(exc, yaml.YAMLError):
        line = yaml_error_line(exc, text) or default_line
        return error(
            f"invalid YAML: {yaml_problem(exc)}",
            where=f"{source}:{line}" if line else source,
            hint=yaml_hint(exc),
        )
    return error(
        f"cannot read this YAML: {type(exc).__name__}",
        where=f"{source}:{default_line}" if default_line else source,
        hint="simplify the document: very deep nesting or out-of-range values",
    )


def read_input_file(
    path: Path,
    error: type[PasskError],
    *,
    kind: str,
    not_found_hint: str,
    directory_hint: str,
    unreadable: str,
) -> bytes:
    """The bytes of a user's input file, or ``error`` saying why it cannot be read.

    ``kind`` names the file ("config file"), ``unreadable`` what could not be
    read ("the config file").
    """
    try:
        return read_bounded(path)
    except FileNotFoundError as exc:
        raise error(f"{kind} not found", where=str(path), hint=not_found_hint) from exc
    except IsADirectoryError as exc:
        raise error(f"is a directory, not a {kind}", where=str(path), hint=directory_hint) from exc
    except OSError as exc:
        raise error(
            f"cannot read {unreadable}: {exc.strerror or exc}",
            where=str(path),
            hint="check the path and its permissions",
        ) from exc


def decode_text(data: bytes, source: str, error: type[PasskError]) -> str:
    """Decode a user's file as UTF-8 (a BOM from Excel or Notepad is fine); name the bad line."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise error(
            "is not valid UTF-8 text", where=f"{source}:{line}", hint="save the file as UTF-8"
        ) from exc


def first_non_json(value: Any) -> tuple[tuple[str | int, ...], str] | None:
    """The path to, and a description of, the first non-JSON thing in ``value``.

    YAML can express sets, binary, non-string keys and NaN; none of them
    survive the trip to the agent or into a digest, so loaders reject them at
    load time, naming where they are.  Iterative, so deep nesting cannot
    exhaust the stack; nesting past :data:`~.values.MAX_NESTING` levels is
    refused here too, before any recursive code (the schema validator, the
    digest) meets it.
    """
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(value, ())]
    while stack:
        item, where = stack.pop()
        if len(where) > values.MAX_NESTING:
            return where[:3], f"is nested more than {values.MAX_NESTING} levels"
        if item is None or isinstance(item, (bool, int, str)):
            continue
        if isinstance(item, float):
            if not math.isfinite(item):
                return where, f"is {item!r}, which JSON cannot hold"
            continue
        if isinstance(item, list):
            stack.extend((v, (*where, i)) for i, v in reversed(list(enumerate(item))))
            continue
        if isinstance(item, dict):
            for key in item:
                if not isinstance(key, str):
                    return where, f"has the key {describe_value(key)}; keys must be strings"
            stack.extend((v, (*where, k)) for k, v in reversed(list(item.items())))
            continue
        return where, f"is {describe_value(item)}, which JSON cannot hold"
    return None


# ---------------------------------------------------------------------- dataclasses


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


@dataclass(frozen=True)
class BaselineConfig:
    artifact: Path
    agent: AgentConfig | None = None
    when_stale: str = "remeasure"
    """remeasure | warn | fail: what a baseline whose agent fingerprint changed gets."""
    added_rows_limit: int = DEFAULT_ADDED_ROWS_LIMIT
    """In the two-job mode's gating job (``mode: gate-measured``), the base agent runs at
    most this many rows a pull request adds (a fork's rows, on the base repository's key)."""


@dataclass(frozen=True)
class ConfirmConfig:
    attempts: int = 3
    must_not_break_attempts: int = 6


@dataclass(frozen=True)
class GateConfig:
    block_on_any_regression: bool = False
    allow_label: str = DEFAULT_ALLOW_LABEL
    remeasure_label: str = DEFAULT_REMEASURE_LABEL
    """PR label that makes a re-run measure again instead of replaying the record."""
    max_cost_increase: float | None = None
    max_latency_p95_increase: float | None = None
    rule: RuleSettings = DEFAULT_RULE
    """``gate.rule`` and ``gate.sequential``; the strict rule's confirmation is
    ``confirm.must_not_break_attempts``."""

    @property
    def policy(self) -> GatePolicy:
        return GatePolicy(
            block_on_any_regression=self.block_on_any_regression,
            max_cost_increase=self.max_cost_increase,
            max_latency_p95_increase=self.max_latency_p95_increase,
            rule=self.rule,
        )


@dataclass(frozen=True)
class RetryConfig:
    """Retries of *errored* attempts only; a wrong answer is a result, never retried."""

    attempts: int = 2
    backoff_s: float = 1.0
    max_backoff_s: float = 30.0


@dataclass(frozen=True)
class Config:
    path: Path
    dataset: Path
    k: int
    concurrency: int
    scoring: Scoring
    agent: AgentConfig | None
    """None when passk.yml names no agent: it then only gates recorded runs."""
    baseline: BaselineConfig
    confirm: ConfirmConfig
    must_not_break_tags: tuple[str, ...]
    gate: GateConfig
    retry: RetryConfig
    pricing: Pricing = field(default_factory=Pricing)

    @property
    def settings(self) -> EvalSettings:
        """What pins a recorded run besides the dataset."""
        return EvalSettings(k=self.k, scoring=self.scoring)

    def require_agent(self, purpose: str) -> AgentConfig:
        """The agent, or a one-line error saying that ``purpose`` needs one."""
        if self.agent is None:
            raise ConfigError(
                f"{purpose} needs an agent, and the config has no `agent:`",
                where=f"{self.path}: agent",
                hint='add `agent: {command: ["python3", "agent.py"]}` '
                "(without one, passk only gates recorded runs: "
                "`passk compare --baseline A --candidate B`)",
            )
        return self.agent


@dataclass(frozen=True)
class LoadedConfig:
    """A config and the warnings (unknown keys) the caller should print."""

    config: Config
    warnings: tuple[str, ...] = ()


# -------------------------------------------------------------------------- loading


@functools.lru_cache(maxsize=1)
def config_schema() -> dict[str, Any]:
    """The packaged JSON Schema of passk.yml."""
    text = (
        resources.files("passk_action")
        .joinpath("schemas/config.schema.json")
        .read_text(encoding="utf-8")
    )
    schema: dict[str, Any] = json.loads(text)
    return schema


@functools.lru_cache(maxsize=1)
def _validator() -> Draft202012Validator:
    return Draft202012Validator(config_schema())


def load_config(path: Path) -> LoadedConfig:
    """Read and validate the config file at ``path``."""
    data = read_input_file(
        path,
        ConfigError,
        kind="config file",
        not_found_hint="create passk.yml (see the README) or pass --config PATH",
        directory_hint="pass the passk.yml file",
        unreadable="the config file",
    )
    return parse_config_bytes(data, path)


def parse_config_bytes(data: bytes, path: Path) -> LoadedConfig:
    """Decode (UTF-8, an optional BOM is fine) and parse a config file's bytes."""
    return parse_config(decode_text(data, str(path), ConfigError), path)


def parse_config(text: str, path: Path) -> LoadedConfig:
    """Parse and validate config text; ``path`` names it in messages and anchors relative paths.

    Pure: reads no files, so tests and property tests feed it any text.
    """
    name = str(path)
    document = _load_yaml(text.removeprefix("\ufeff"), name)
    if document is None:
        raise ConfigError(
            "the config file is empty",
            where=name,
            hint="at least `dataset:` and `agent: {command: [...]}` are required",
        )
    if not isinstance(document, dict):
        raise ConfigError(
            f"the config must be a mapping of keys, got {describe_value(document)}",
            where=name,
            hint="start with `dataset: data.jsonl` and `agent: {command: [...]}`",
        )
    problem = first_non_json(document)
    if problem is not None:
        parts, message = problem
        raise ConfigError(
            message,
            where=f"{name}: {json_path(parts)}" if parts else name,
            hint="use plain strings, numbers, true/false, lists and mappings (quote other values)",
        )

    errors: list[ValidationError] = []
    warnings: list[str] = []
    for error in _validator().iter_errors(document):
        if error.validator == "additionalProperties":
            warnings.extend(_unknown_key_warnings(error, name))
        else:
            errors.append(error)
    worst = most_relevant(errors)
    if worst is not None:
        raise _schema_error(worst, name)
    for key in ("agent", "baseline.agent"):
        agent_doc = (
            document.get("agent") if key == "agent" else document.get("baseline", {}).get("agent")
        )
        if agent_doc is not None:
            warnings.extend(_refuse_runner_credentials(agent_doc, f"{name}: {key}"))
    return LoadedConfig(config=_build(document, path), warnings=tuple(warnings))


def _refuse_runner_credentials(doc: Mapping[str, Any], where: str) -> list[str]:
    """Refuse an agent block that names a runner credential; warn that ``pass_env`` does nothing.

    ``env``, ``pass_env`` and an HTTP header's ``${VAR}`` are where a config
    could hand an agent (and its setup) the job's token or the Actions
    runtime's (``core/runner_credentials.py``): a config that names one is
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


def _load_yaml(text: str, name: str) -> Any:
    loader = StrictYamlLoader(text)
    try:
        return loader.get_single_data()
    except (yaml.YAMLError, RecursionError, ValueError, OverflowError) as exc:
        raise yaml_load_error(exc, text, name, ConfigError, default_line=None) from exc
    finally:
        loader.dispose()


def _unknown_key_warnings(error: ValidationError, name: str) -> Iterator[str]:
    known = known_keys(error)
    for key in unknown_keys(error):
        where = json_path((*error.absolute_path, key))
        text = f"{name}: {where}: unknown key, ignored"
        close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
        if close:
            text += f" (did you mean `{close[0]}`?)"
        elif known:
            text += f" (known keys here: {', '.join(known)})"
        yield text


def _schema_error(error: ValidationError, name: str) -> ConfigError:
    parts = error_parts(error)
    where = f"{name}: {json_path(parts)}" if parts else name
    value = error.instance
    if (
        error.validator == "type"
        and error.validator_value == "string"
        and (isinstance(value, (bool, int, float)))
    ):
        # YAML turns `yes`, `1.10` and `on` into booleans and numbers.
        hint = "quote it so YAML reads it as a string"
    else:
        hint = _description(parts) or "see the config reference in the README"
    return ConfigError(error_message(error), where=where, hint=hint)


def _description(parts: tuple[str | int, ...]) -> str | None:
    """The schema's description of the innermost described key along ``parts``."""
    root = config_schema()
    schema: Any = root
    found: str | None = schema.get("description") if not parts else None
    for part in parts:
        schema = _resolve(root, schema)
        if isinstance(part, int):
            prefix = schema.get("prefixItems", [])
            schema = prefix[part] if part < len(prefix) else schema.get("items", {})
        else:
            # A rule written either way (``amount: set`` or a mapping) keeps its keys in "else".
            props = schema.get("properties") or schema.get("else", {}).get("properties", {})
            schema = props[part] if part in props else schema.get("additionalProperties", {})
        if isinstance(schema, Mapping) and "description" in schema:
            found = str(schema["description"])
    return found


def _resolve(root: Mapping[str, Any], schema: Any) -> Mapping[str, Any]:
    if not isinstance(schema, Mapping):
        return {}
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        resolved: Mapping[str, Any] = root["$defs"][ref.removeprefix("#/$defs/")]
        return resolved
    return schema


def _build(doc: dict[str, Any], path: Path) -> Config:
    """Build the dataclasses from a schema-valid document, filling in defaults."""
    name = str(path)
    base = path.parent
    agent = _build_agent(doc["agent"], base, name, "agent") if "agent" in doc else None
    baseline_doc = doc.get("baseline", {})
    baseline_agent = baseline_doc.get("agent")
    retry_doc = doc.get("retry", {})
    retry = RetryConfig(
        attempts=int(retry_doc.get("attempts", 2)),
        backoff_s=_seconds(retry_doc, "backoff_s", 1.0, f"{name}: retry"),
        max_backoff_s=_seconds(retry_doc, "max_backoff_s", 30.0, f"{name}: retry"),
    )
    if retry.max_backoff_s < retry.backoff_s:
        raise ConfigError(
            f"is {retry.max_backoff_s:g}, less than retry.backoff_s ({retry.backoff_s:g})",
            where=f"{name}: retry.max_backoff_s",
            hint="make max_backoff_s at least backoff_s",
        )
    confirm_doc = doc.get("confirm", {})
    confirm = ConfirmConfig(
        attempts=int(confirm_doc.get("attempts", 3)),
        must_not_break_attempts=int(confirm_doc.get("must_not_break_attempts", 6)),
    )
    gate_doc = doc.get("gate", {})
    return Config(
        path=path,
        dataset=base / doc["dataset"],
        k=int(doc.get("k", DEFAULT_K)),
        concurrency=int(doc.get("concurrency", DEFAULT_CONCURRENCY)),
        scoring=_scoring(doc.get("scoring", {}), f"{name}: scoring"),
        agent=agent,
        baseline=BaselineConfig(
            artifact=base / baseline_doc.get("artifact", DEFAULT_ARTIFACT),
            agent=(
                _build_agent(baseline_agent, base, name, "baseline.agent")
                if baseline_agent is not None
                else None
            ),
            when_stale=str(baseline_doc.get("when_stale", "remeasure")),
            added_rows_limit=int(baseline_doc.get("added_rows_limit", DEFAULT_ADDED_ROWS_LIMIT)),
        ),
        confirm=confirm,
        must_not_break_tags=tuple(doc.get("must_not_break", {}).get("tags", ())),
        gate=GateConfig(
            block_on_any_regression=bool(gate_doc.get("block_on_any_regression", False)),
            allow_label=str(gate_doc.get("allow_label", DEFAULT_ALLOW_LABEL)),
            remeasure_label=str(gate_doc.get("remeasure_label", DEFAULT_REMEASURE_LABEL)),
            max_cost_increase=_limit(gate_doc, "max_cost_increase", name),
            max_latency_p95_increase=_limit(gate_doc, "max_latency_p95_increase", name),
            rule=_rule(gate_doc, confirm, name),
        ),
        retry=retry,
        pricing=_pricing(doc.get("pricing", {}), f"{name}: pricing"),
    )


def _ruled(
    value: Any, rule: Callable[[object], float | None], text: str, where: str, hint: str
) -> float:
    """``value`` by one of ``core/values.py``'s rules (the schema checked type and sign)."""
    number = rule(value)
    if number is None:
        raise ConfigError(f"must be {text}, not {describe_value(value)}", where=where, hint=hint)
    return number


def _rule(gate_doc: Mapping[str, Any], confirm: ConfirmConfig, name: str) -> RuleSettings:
    """``gate.rule`` and ``gate.sequential`` (schema-valid) as the rule's settings.

    The schema checks each value alone; what holds between them (unreliable
    below reliable, attempts enough for both tests) is checked here.
    """
    # Unknown keys were warned about and are ignored (they raised TypeError).
    known = {f.name for f in dataclasses.fields(RuleSettings)} - {"rule", "confirm_attempts"}
    fields = {k: v for k, v in dict(gate_doc.get("sequential", {})).items() if k in known}
    try:
        return RuleSettings(
            rule=str(gate_doc.get("rule", "sequential")),
            confirm_attempts=confirm.must_not_break_attempts,
            **fields,
        )
    except ValueError as exc:
        raise ConfigError(
            str(exc),
            where=f"{name}: gate.sequential",
            hint="see docs/gate-rule.md; `passk plan --false-block 0.05 --miss 0.1` suggests "
            "settings",
        ) from exc


def _scoring(doc: Mapping[str, Any], where: str) -> Scoring:
    """The schema-valid ``scoring`` section, every rule checked: a regex that compiles with one
    group, a JSON pointer, tolerances by ``core/values.py``, and keys that fit together."""
    by = str(doc.get("by", "expected"))
    fields = tuple(
        _field_rule(name, rule, f"{where}.fields.{name}")
        for name, rule in doc.get("fields", {}).items()
    )
    extract = _extractor(doc["extract"], f"{where}.extract") if "extract" in doc else None
    if by in (BY_ENVIRONMENT, BY_COMMAND) and (fields or extract is not None):
        raise ConfigError(
            f"{'fields' if fields else 'extract'} does not apply when scoring.by is {by}",
            where=f"{where}.{'fields' if fields else 'extract'}",
            hint="the environment scores each task from the outcome the agent reports; "
            "remove the key, or score decisions with by: expected",
        )
    threshold = DEFAULT_THRESHOLD
    if "threshold" in doc:
        if by not in (BY_ENVIRONMENT, BY_COMMAND):
            raise ConfigError(
                "applies only when scoring.by is environment",
                where=f"{where}.threshold",
                hint="add `by: environment` (the agent reports a score per task) or remove it",
            )
        threshold = _ruled(
            doc["threshold"],
            values.finite,
            "a finite number",
            f"{where}.threshold",
            "a reported score at or above it is a success, e.g. 1.0",
        )
    command = _scorer_command(doc, by, where)
    return Scoring(
        normalize=tuple(doc.get("normalize", ())),
        fields=fields,
        extract=extract,
        checks=str(doc.get("checks", "reported")),
        by=by,
        threshold=threshold,
        command=command,
        judge_repeats=int(doc.get("judge_repeats", 1)),
        timeout_s=_seconds(doc, "timeout_s", DEFAULT_SCORER_TIMEOUT_S, where),
    )


def _scorer_command(doc: Mapping[str, Any], by: str, where: str) -> tuple[str, ...]:
    """The scorer program's command: needed by ``by: command``, allowed with ``by:
    environment``; ``judge_repeats`` and ``timeout_s`` only beside it."""
    raw = doc.get("command")
    if raw is None:
        if by == BY_COMMAND:
            raise ConfigError(
                "by: command needs the scorer program",
                where=f"{where}.command",
                hint='name it, e.g. command: ["python3", "scorer.py"] (run in the config folder)',
            )
        for key in ("judge_repeats", "timeout_s"):
            if key in doc:
                raise ConfigError(
                    "applies only to a scorer program",
                    where=f"{where}.{key}",
                    hint="add scoring.command (with by: command or environment), or remove it",
                )
        return ()
    if by == BY_EXPECTED:
        raise ConfigError(
            "a scorer program needs by: command (or by: environment)",
            where=f"{where}.command",
            hint="add `by: command` so the program judges each answer, or remove command",
        )
    if isinstance(raw, str):
        try:
            command = tuple(shlex.split(raw))
        except ValueError as exc:
            raise ConfigError(
                f"cannot split the command like a shell would: {exc}",
                where=f"{where}.command",
                hint='close the quote, or write it as a list: ["python3", "scorer.py"]',
            ) from exc
        if not command:
            raise ConfigError(
                "the command is blank",
                where=f"{where}.command",
                hint='write the program to run, e.g. ["python3", "scorer.py"]',
            )
        return command
    return tuple(raw)


def _field_rule(name: str, doc: Any, where: str) -> FieldRule:
    """One field's rule; the shorthand ``amount: set`` is ``{compare: set}``."""
    if isinstance(doc, str):
        return FieldRule(name, compare=doc)
    compare = str(doc.get("compare", EXACT))
    tolerance = doc.get("tolerance")
    relative = doc.get("relative_tolerance")
    if compare == SET and (tolerance is not None or relative is not None):
        raise ConfigError(
            "a tolerance applies to single numbers, not to a list compared as a set",
            where=f"{where}.{'tolerance' if tolerance is not None else 'relative_tolerance'}",
            hint="use compare: exact or any_of with a tolerance",
        )
    normalize = doc.get("normalize")
    return FieldRule(
        name,
        compare=compare,
        normalize=None if normalize is None else tuple(normalize),
        tolerance=None
        if tolerance is None
        else _ruled(
            tolerance,
            values.tolerance,
            values.TOLERANCE_TEXT,
            f"{where}.tolerance",
            "how far from the expected number an answer may be, e.g. 0.01",
        ),
        relative_tolerance=None
        if relative is None
        else _ruled(
            relative,
            values.relative_tolerance,
            values.RELATIVE_TOLERANCE_TEXT,
            f"{where}.relative_tolerance",
            "a share of the expected number, e.g. 0.02 for 2%",
        ),
    )


def _extractor(doc: Mapping[str, Any], where: str) -> Extractor:
    if "json_pointer" in doc:
        pointer = str(doc["json_pointer"])
        if pointer_parts(pointer) is None:
            raise ConfigError(
                f"{pointer!r} is not a JSON pointer",
                where=f"{where}.json_pointer",
                hint='start it with "/" (e.g. /decision/action; ~1 stands for "/", ~0 for "~"),'
                ' or "" for the whole answer',
            )
        return Extractor(json_pointer=pointer)
    pattern = str(doc["regex"])
    try:
        groups = compile_pattern(pattern).groups
    except re.error as exc:
        at = f" at position {exc.pos}" if exc.pos is not None else ""
        raise ConfigError(
            f"{pattern!r} does not compile: {exc.msg}{at}",
            where=f"{where}.regex",
            hint="write a Python regular expression; in YAML, single quotes keep backslashes",
        ) from exc
    except (Unsupported, RecursionError, OverflowError) as exc:
        reason = str(exc) if isinstance(exc, Unsupported) else "it is nested too deeply"
        raise ConfigError(
            f"{pattern!r} cannot be matched safely: {reason}",
            where=f"{where}.regex",
            hint="passk matches without backtracking so no answer can hang it: write the "
            "pattern without backreferences or lookaround, or extract with a json_pointer",
        ) from exc
    if groups != 1:
        raise ConfigError(
            f"{pattern!r} has {groups} groups; it needs exactly one, around the decision",
            where=f"{where}.regex",
            hint="e.g. 'DECISION: (\\w+)'; make other groups non-capturing with (?:...)",
        )
    return Extractor(regex=pattern)


def _limit(doc: Mapping[str, Any], key: str, name: str) -> float | None:
    if doc.get(key) is None:
        return None
    return _ruled(
        doc[key],
        values.relative_limit,
        values.RELATIVE_TEXT,
        f"{name}: gate.{key}",
        "a share of the baseline's figure, e.g. 0.25 for +25%",
    )


def _price(doc: Mapping[str, Any], where: str) -> Price:
    prices = [
        _ruled(
            doc[key],
            values.price,
            values.PRICE_TEXT,
            f"{where}.{key}",
            "US dollars per million tokens, e.g. 0.15",
        )
        for key in ("input_per_mtok", "output_per_mtok")
    ]
    return Price(*prices)


def _pricing(doc: Mapping[str, Any], where: str) -> Pricing:
    """The schema-valid ``pricing`` section: one default price and prices by model."""
    default = _price(doc, where) if "input_per_mtok" in doc else None
    models = tuple(
        (model, _price(price, f"{where}.models.{model}"))
        for model, price in doc.get("models", {}).items()
    )
    return Pricing(
        default=default, models=models, prefer_tokens=doc.get("prefer", "reported") == "tokens"
    )


def _build_agent(doc: dict[str, Any], base: Path, name: str, key: str) -> AgentConfig:
    command: tuple[str, ...] | None = None
    raw = doc.get("command")
    if isinstance(raw, str):
        try:
            command = tuple(shlex.split(raw))
        except ValueError as exc:
            raise ConfigError(
                f"cannot split the command like a shell would: {exc}",
                where=f"{name}: {key}.command",
                hint='close the quote, or write the command as a list: ["python3", "agent.py"]',
            ) from exc
        if not command:
            raise ConfigError(
                "the command is blank",
                where=f"{name}: {key}.command",
                hint='write the command to run, e.g. ["python3", "agent.py"]',
            )
    elif raw is not None:
        command = tuple(raw)
    http: HttpAgentConfig | None = None
    http_doc = doc.get("http")
    if http_doc is not None:
        http = HttpAgentConfig(
            url=_http_url(http_doc["url"], f"{name}: {key}.http.url"),
            method=http_doc.get("method", "POST"),
            headers=tuple(http_doc.get("headers", {}).items()),
            timeout_s=_seconds(
                http_doc, "timeout_s", DEFAULT_HTTP_TIMEOUT_S, f"{name}: {key}.http"
            ),
        )
    return AgentConfig(
        command=command,
        http=http,
        cwd=base / doc["cwd"] if "cwd" in doc else base,
        timeout_s=_seconds(doc, "timeout_s", DEFAULT_TIMEOUT_S, f"{name}: {key}"),
        env=MappingProxyType(dict(doc.get("env", {}))),
        pass_env=tuple(doc.get("pass_env", ())),
        protocol=str(doc.get("protocol", "process")),
        setup=tuple(doc.get("setup", ())),
        setup_timeout_s=_seconds(doc, "setup_timeout_s", DEFAULT_SETUP_TIMEOUT_S, f"{name}: {key}"),
        where=f"{name}: {key}",
        fingerprint=tuple(base / p for p in doc.get("fingerprint", ())),
    )


def _seconds(doc: Mapping[str, Any], key: str, default: float, where: str) -> float:
    """A duration by the duration rule; the schema checked the type and the sign."""
    return _ruled(
        doc.get(key, default),
        values.seconds,
        values.SECONDS_TEXT,
        f"{where}.{key}",
        "use a duration in seconds such as 60",
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
