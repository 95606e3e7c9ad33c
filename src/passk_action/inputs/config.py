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
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from ..core import values
from ..core.cost import Price, Pricing
from ..core.gate import GatePolicy
from ..core.model import EvalSettings, Scoring
from ..core.sequential import DEFAULT_RULE, RELATIVE, RuleSettings
from ..errors import ConfigError
from .agent_config import AgentConfig, build_agent, refuse_runner_credentials
from .reading import StrictYamlLoader, decode_text, first_non_json, read_input_file, yaml_load_error
from .schema_errors import (
    describe_value,
    error_message,
    error_parts,
    json_path,
    known_keys,
    most_relevant,
    unknown_keys,
)
from .scoring_config import read_scoring
from .settings_values import ruled, seconds

DEFAULT_K = 3
DEFAULT_CONCURRENCY = 4
DEFAULT_ARTIFACT = ".passk/baseline.json"
DEFAULT_ADDED_ROWS_LIMIT = 5
"""Rows a pull request adds that the two-job gating job measures on the base agent."""
DEFAULT_ALLOW_LABEL = "passk-allow-baseline-change"
DEFAULT_REMEASURE_LABEL = "passk:remeasure"


# ---------------------------------------------------------------------- dataclasses


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
            warnings.extend(refuse_runner_credentials(agent_doc, f"{name}: {key}"))
    return LoadedConfig(config=_build(document, path), warnings=tuple(warnings))


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
    agent = build_agent(doc["agent"], base, name, "agent") if "agent" in doc else None
    baseline_doc = doc.get("baseline", {})
    baseline_agent = baseline_doc.get("agent")
    retry_doc = doc.get("retry", {})
    retry = RetryConfig(
        attempts=int(retry_doc.get("attempts", 2)),
        backoff_s=seconds(retry_doc, "backoff_s", 1.0, f"{name}: retry"),
        max_backoff_s=seconds(retry_doc, "max_backoff_s", 30.0, f"{name}: retry"),
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
        scoring=read_scoring(doc.get("scoring", {}), f"{name}: scoring"),
        agent=agent,
        baseline=BaselineConfig(
            artifact=base / baseline_doc.get("artifact", DEFAULT_ARTIFACT),
            agent=(
                build_agent(baseline_agent, base, name, "baseline.agent")
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
            rule=str(gate_doc.get("rule", RELATIVE)),
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


def _limit(doc: Mapping[str, Any], key: str, name: str) -> float | None:
    if doc.get(key) is None:
        return None
    return ruled(
        doc[key],
        values.relative_limit,
        values.RELATIVE_TEXT,
        f"{name}: gate.{key}",
        "a share of the baseline's figure, e.g. 0.25 for +25%",
    )


def _price(doc: Mapping[str, Any], where: str) -> Price:
    prices = [
        ruled(
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
