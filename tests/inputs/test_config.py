"""passk.yml loading: every key, defaults, warnings, and every error path."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from passk_action.core.model import EvalSettings, Scoring
from passk_action.errors import ConfigError
from passk_action.inputs.agent_config import AgentConfig, HttpAgentConfig
from passk_action.inputs.config import config_schema, load_config, parse_config, parse_config_bytes
from passk_action.inputs.schema_errors import json_path
from support.paths import TESTS

DATA = TESTS / "data" / "loaders"
NAME = Path("passk.yml")
MINIMAL = "dataset: data.jsonl\nagent:\n  command: [python3, agent.py]\n"


def error_of(text: str) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse_config(text, NAME)
    return info.value


# ----------------------------------------------------------------- valid configs


def test_full_config_file_sets_every_field() -> None:
    loaded = load_config(DATA / "passk.yml")
    config = loaded.config
    # pass_env is read (older configs still load) and said to do nothing.
    assert loaded.warnings == (
        f"{DATA / 'passk.yml'}: agent.pass_env: has no effect, ignored: passk removes only the "
        "runner's credentials, which no config can pass; every other variable reaches the agent",
    )
    assert config.path == DATA / "passk.yml"
    assert config.dataset == DATA / "rows.jsonl"
    assert (config.k, config.concurrency) == (5, 8)
    assert config.scoring == Scoring(normalize=("strip", "casefold"))
    assert config.settings == EvalSettings(k=5, scoring=Scoring(("strip", "casefold")))
    agent = config.agent
    assert agent.command == ("python3", "agent.py", "--model", "small model")
    assert agent.http is None
    assert agent.cwd == DATA / "agent"
    assert agent.timeout_s == 12.5
    assert dict(agent.env) == {"MODEL": "small", "TEMPERATURE": "0.7"}
    assert agent.pass_env == ("OPENAI_API_KEY",)
    assert agent.protocol == "process"
    assert config.baseline.artifact == DATA / "artifacts" / "baseline.json"
    baseline_agent = config.baseline.agent
    assert baseline_agent is not None and baseline_agent.command is None
    assert baseline_agent.http == HttpAgentConfig(
        url="https://agent.example.com/decide?token=secret",
        method="PUT",
        headers=(("Authorization", "Bearer s3cret"),),
        timeout_s=5.0,
    )
    assert (config.confirm.attempts, config.confirm.must_not_break_attempts) == (4, 9)
    assert config.must_not_break_tags == ("high-value",)
    assert config.gate.block_on_any_regression is True
    assert config.gate.allow_label == "ok-to-change"
    assert (config.retry.attempts, config.retry.backoff_s, config.retry.max_backoff_s) == (
        1,
        0.5,
        4.0,
    )


def test_full_config_file_is_valid_against_the_schema_itself() -> None:
    import yaml

    document = yaml.safe_load((DATA / "passk.yml").read_text(encoding="utf-8"))
    Draft202012Validator(config_schema()).validate(document)


def test_minimal_config_gets_the_documented_defaults() -> None:
    config = parse_config(MINIMAL, Path("proj/passk.yml")).config
    assert config.dataset == Path("proj/data.jsonl")
    assert (config.k, config.concurrency) == (3, 4)
    assert config.scoring == Scoring(())
    assert config.agent.cwd == Path("proj")
    assert config.agent.timeout_s == 60.0
    assert dict(config.agent.env) == {}
    assert config.agent.pass_env == ()
    assert config.agent.protocol == "process"
    assert config.baseline.artifact == Path("proj/.passk/baseline.json")
    assert config.baseline.agent is None
    assert (config.confirm.attempts, config.confirm.must_not_break_attempts) == (3, 6)
    assert config.must_not_break_tags == ()
    assert config.gate.block_on_any_regression is False
    assert config.gate.allow_label == "passk-allow-baseline-change"
    assert (config.retry.attempts, config.retry.backoff_s, config.retry.max_backoff_s) == (
        2,
        1.0,
        30.0,
    )


def test_schema_defaults_agree_with_the_loader_defaults() -> None:
    """The schema documents defaults for editors; they must be the ones we apply."""
    schema = config_schema()
    config = parse_config(MINIMAL, NAME).config
    built = {
        "k": config.k,
        "concurrency": config.concurrency,
        "scoring.normalize": list(config.scoring.normalize),
        "baseline.artifact": str(config.baseline.artifact),
        "confirm.attempts": config.confirm.attempts,
        "confirm.must_not_break_attempts": config.confirm.must_not_break_attempts,
        "must_not_break.tags": list(config.must_not_break_tags),
        "gate.block_on_any_regression": config.gate.block_on_any_regression,
        "gate.allow_label": config.gate.allow_label,
        "gate.rule": config.gate.rule.rule,
        **{
            f"gate.sequential.{key}": value
            for key, value in config.gate.rule.to_json().items()
            if key not in ("rule", "confirm_attempts")
        },
        "retry.attempts": config.retry.attempts,
        "retry.backoff_s": config.retry.backoff_s,
        "retry.max_backoff_s": config.retry.max_backoff_s,
    }
    for key, value in built.items():
        node = schema
        for part in key.split("."):
            node = node["properties"][part]
        assert node["default"] == value, key
    agent = schema["$defs"]["agent"]["properties"]
    assert agent["timeout_s"]["default"] == config.agent.timeout_s
    assert agent["protocol"]["default"] == config.agent.protocol
    http = schema["$defs"]["http"]["properties"]
    assert http["method"]["default"] == HttpAgentConfig(url="x").method
    assert http["timeout_s"]["default"] == HttpAgentConfig(url="x").timeout_s


def test_schema_is_valid_draft_2020_12() -> None:
    Draft202012Validator.check_schema(config_schema())
    assert config_schema()["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_string_command_is_split_like_a_shell() -> None:
    text = "dataset: d.csv\nagent:\n  command: python3 agent.py --name 'two words'\n"
    agent = parse_config(text, NAME).config.agent
    assert agent.command == ("python3", "agent.py", "--name", "two words")
    assert agent.describe() == "python3 agent.py --name 'two words'"


def test_absolute_paths_stay_absolute(tmp_path: Path) -> None:
    data = tmp_path / "elsewhere" / "rows.jsonl"
    text = f"dataset: {data}\nagent: {{command: [a], cwd: {tmp_path}}}\n"
    config = parse_config(text, Path("sub/passk.yml")).config
    assert config.dataset == data
    assert config.agent.cwd == tmp_path


def test_http_agent_description_hides_credentials_and_header_values() -> None:
    text = (
        "dataset: d.jsonl\nagent:\n  http:\n"
        "    url: https://user:pw@agent.example.com:8443/v1/decide?key=abc\n"
        "    headers: {Authorization: Bearer TOPSECRET}\n"
    )
    agent = parse_config(text, NAME).config.agent
    assert agent.command is None
    assert agent.describe() == "POST https://agent.example.com:8443/v1/decide?…"
    assert "TOPSECRET" not in repr(agent)
    assert "pw" not in agent.describe() and "abc" not in agent.describe()


def test_config_objects_are_frozen() -> None:
    config = parse_config(MINIMAL + "agent_extra: 1\n", NAME).config
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.k = 9  # type: ignore[misc]
    with pytest.raises(TypeError):
        config.agent.env["X"] = "y"  # type: ignore[index]


def test_utf8_bom_is_accepted() -> None:
    loaded = parse_config_bytes(b"\xef\xbb\xbf" + MINIMAL.encode(), NAME)
    assert loaded.config.dataset == Path("data.jsonl")


def test_agent_config_can_be_built_directly_with_defaults() -> None:
    agent = AgentConfig(command=("a", "b c"), http=None, cwd=Path("."))
    assert agent.describe() == "a 'b c'"
    assert agent.timeout_s == 60.0


# ----------------------------------------------------------------------- warnings


def test_unknown_keys_warn_with_the_closest_known_key() -> None:
    text = (
        "dataset: d.jsonl\nkk: 3\nagent:\n  command: [a]\n  timout_s: 5\n"
        "gate: {block_on_any_regresion: true}\nzzz_unrelated: 1\n"
    )
    loaded = parse_config(text, NAME)
    assert loaded.warnings == (
        "passk.yml: kk: unknown key, ignored (did you mean `k`?)",
        "passk.yml: zzz_unrelated: unknown key, ignored (known keys here: dataset, k,"
        " concurrency, scoring, agent, baseline, confirm, must_not_break, gate, pricing, retry)",
        "passk.yml: agent.timout_s: unknown key, ignored (did you mean `timeout_s`?)",
        "passk.yml: gate.block_on_any_regresion: unknown key, ignored"
        " (did you mean `block_on_any_regression`?)",
    )
    # An unknown key is ignored: the misspelt value does not take effect.
    assert loaded.config.agent.timeout_s == 60.0
    assert loaded.config.gate.block_on_any_regression is False


# ------------------------------------------------------------------------ errors


def test_exact_message_for_a_value_out_of_range() -> None:
    error = error_of(MINIMAL + "k: 1\n")
    assert str(error) == (
        "passk.yml: k: must be at least 2, got 1"
        " (attempts per row, a whole number from 2 to 1000; default 3)"
    )
    assert error.where == "passk.yml: k"


def test_exact_message_for_a_missing_required_key() -> None:
    error = error_of("agent: {command: [a]}\n")
    assert str(error) == (
        "passk.yml: dataset: is required but missing"
        " (path of the labeled dataset, .jsonl, .yaml/.yml or .csv, relative to passk.yml)"
    )


def test_exact_message_for_a_number_where_a_string_belongs() -> None:
    error = error_of(MINIMAL.replace("agent:\n", "agent:\n  env: {RETRIES: 3}\n"))
    assert str(error) == (
        "passk.yml: agent.env.RETRIES: expected a string, got the number 3"
        " (quote it so YAML reads it as a string)"
    )


def test_exact_message_for_yaml_syntax_errors_names_the_line() -> None:
    error = error_of("dataset: d.jsonl\nagent:\n  command: [a, b\nk: 3\n")
    assert error.where is not None and error.where.startswith("passk.yml:")
    assert error.where.split(":")[1].isdigit()
    error = error_of("dataset: d.jsonl\nk: 3\nk: 4\nagent: {command: [a]}\n")
    assert str(error) == (
        "passk.yml:3: invalid YAML: found duplicate key 'k'"
        " (a key may appear only once in a mapping; remove or rename one of them)"
    )


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        (
            "dataset: d\nagent: {}\n",
            "passk.yml: agent",
            "needs exactly one of `command`, `http`, found none",
        ),
        (
            "dataset: d\nagent: {command: [a], http: {url: 'http://x'}}\n",
            "passk.yml: agent",
            "needs exactly one of `command`, `http`, found `command` and `http`",
        ),
        ("dataset: d\nagent: {command: []}\n", "passk.yml: agent.command", "must not be empty"),
        ("dataset: d\nagent: {command: ''}\n", "passk.yml: agent.command", "must not be empty"),
        (
            "dataset: d\nagent: {command: '  '}\n",
            "passk.yml: agent.command",
            "the command is blank",
        ),
        (
            "dataset: d\nagent: {command: 'a \"b'}\n",
            "passk.yml: agent.command",
            "cannot split the command like a shell would: No closing quotation",
        ),
        (
            "dataset: d\nagent: {command: 7}\n",
            "passk.yml: agent.command",
            "expected a list or a string, got the number 7",
        ),
        (
            "dataset: d\nagent: {command: ['', x]}\n",
            "passk.yml: agent.command[0]",
            "must not be empty",
        ),
        (
            "dataset: d\nagent: {command: [a, 3]}\n",
            "passk.yml: agent.command[1]",
            "expected a string, got the number 3",
        ),
        (
            "dataset: d\nagent: {command: [a], timeout_s: 0}\n",
            "passk.yml: agent.timeout_s",
            "must be greater than 0, got 0",
        ),
        (
            "dataset: d\nagent: {command: [a], timeout_s: soon}\n",
            "passk.yml: agent.timeout_s",
            'expected a number, got the string "soon"',
        ),
        (
            "dataset: d\nagent: {command: [a], protocol: proces}\n",
            "passk.yml: agent.protocol",
            'must be one of `process`, `worker`, got the string "proces"; did you mean `process`?',
        ),
        (
            "dataset: d\nagent: {command: [a], env: {'A=B': x}}\n",
            "passk.yml: agent.env",
            'the string "A=B" is not allowed here',
        ),
        (
            "dataset: d\nagent: {command: [a], pass_env: KEY}\n",
            "passk.yml: agent.pass_env",
            'expected a list, got the string "KEY"',
        ),
        (
            "dataset: d\nagent: {http: {url: 'ftp://x'}}\n",
            "passk.yml: agent.http.url",
            'the string "ftp://x" is not allowed here',
        ),
        (
            "dataset: d\nagent: {http: {method: POST}}\n",
            "passk.yml: agent.http.url",
            "is required but missing",
        ),
        (
            "dataset: d\nagent: {http: {url: 'http://x', method: DELETE}}\n",
            "passk.yml: agent.http.method",
            'must be one of `POST`, `PUT`, `PATCH`, `GET`, got the string "DELETE"',
        ),
        (
            "dataset: d\nagent: {command: [a]}\nk: 2.5\n",
            "passk.yml: k",
            "expected a whole number, got the number 2.5",
        ),
        (
            "dataset: d\nagent: {command: [a]}\nk: true\n",
            "passk.yml: k",
            "expected a whole number, got true",
        ),
        (
            "dataset: d\nagent: {command: [a]}\nconcurrency: 5000\n",
            "passk.yml: concurrency",
            "must be at most 1024, got 5000",
        ),
        (
            "dataset: d\nagent: {command: [a]}\nscoring: {normalize: [lower]}\n",
            "passk.yml: scoring.normalize[0]",
            'must be one of `strip`, `casefold`, got the string "lower"',
        ),
        (
            "dataset: d\nagent: {command: [a]}\nscoring: {normalize: [strip, strip]}\n",
            "passk.yml: scoring.normalize",
            "has duplicate items",
        ),
        (
            "dataset: d\nagent: {command: [a]}\nconfirm: {attempts: 0}\n",
            "passk.yml: confirm.attempts",
            "must be at least 1, got 0",
        ),
        (
            "dataset: d\nagent: {command: [a]}\nmust_not_break: {tags: [ok, '']}\n",
            "passk.yml: must_not_break.tags[1]",
            "must not be empty",
        ),
        (
            "dataset: d\nagent: {command: [a]}\ngate: {block_on_any_regression: maybe}\n",
            "passk.yml: gate.block_on_any_regression",
            'expected true or false, got the string "maybe"',
        ),
        (
            "dataset: d\nagent: {command: [a]}\nretry: {attempts: -1}\n",
            "passk.yml: retry.attempts",
            "must be at least 0, got -1",
        ),
        (
            "dataset: d\nagent: {command: [a]}\nretry: {backoff_s: 5, max_backoff_s: 2}\n",
            "passk.yml: retry.max_backoff_s",
            "is 2, less than retry.backoff_s (5)",
        ),
        (
            "dataset: d\nagent: {command: [a]}\nbaseline: {agent: {}}\n",
            "passk.yml: baseline.agent",
            "needs exactly one of `command`, `http`, found none",
        ),
        ("dataset: ''\nagent: {command: [a]}\n", "passk.yml: dataset", "must not be empty"),
        (
            "dataset: [a]\nagent: {command: [a]}\n",
            "passk.yml: dataset",
            "expected a string, got a list",
        ),
        (
            "dataset: d\nagent: {command: [a], timeout_s: .nan}\n",
            "passk.yml: agent.timeout_s",
            "is nan, which JSON cannot hold",
        ),
        (
            "dataset: d\nagent: {command: [a], timeout_s: 1.0e+400}\n",
            "passk.yml: agent.timeout_s",
            "is inf, which JSON cannot hold",
        ),
        (
            "dataset: d\nagent: {command: [a], timeout_s: " + "9" * 400 + "}\n",
            "passk.yml: agent.timeout_s",
            "must be a number of seconds from 0 to 10^9",
        ),
        (
            "dataset: d\nagent: {http: {url: 'http://h:99999/x'}}\n",
            "passk.yml: agent.http.url",
            "is not a URL passk can use (Port out of range 0-65535)",
        ),
        (
            "dataset: d\nagent: {http: {url: 'http://h:abc/'}}\n",
            "passk.yml: agent.http.url",
            "is not a URL passk can use",
        ),
        (
            "dataset: d\nagent: {http: {url: 'http://[zz]/'}}\n",
            "passk.yml: agent.http.url",
            "is not a URL passk can use",
        ),
        (
            "dataset: d\nagent: {http: {url: 'http://[::1/x'}}\n",
            "passk.yml: agent.http.url",
            "is not a URL passk can use",
        ),
        (
            "dataset: d\ngate: {max_cost_increase: " + "9" * 401 + "}\n",
            "passk.yml: gate.max_cost_increase",
            "must be a share from 0 to 10^6",
        ),
        (
            "dataset: d\ngate: {max_latency_p95_increase: 10000000}\n",
            "passk.yml: gate.max_latency_p95_increase",
            "must be a share from 0 to 10^6",
        ),
        (
            "dataset: d\npricing: {input_per_mtok: " + "9" * 401 + ", output_per_mtok: 1}\n",
            "passk.yml: pricing.input_per_mtok",
            "must be a price from 0 to 10^5 dollars per million tokens",
        ),
        (
            "dataset: d\npricing: {models: {m: {input_per_mtok: 1, output_per_mtok: 1.0e+300}}}\n",
            "passk.yml: pricing.models.m.output_per_mtok",
            "must be a price from 0 to 10^5",
        ),
        (
            "dataset: d\nagent: {command: [a], env: !!binary aGk=}\n",
            "passk.yml: agent.env",
            "is a bytes value, which JSON cannot hold",
        ),
        (
            "dataset: d\nagent: {command: [a]}\n1: x\n",
            "passk.yml",
            "has the key the number 1; keys must be strings",
        ),
        ("- dataset: d\n", "passk.yml", "the config must be a mapping of keys, got a list"),
        (
            "just words\n",
            "passk.yml",
            'the config must be a mapping of keys, got the string "just words"',
        ),
        (
            "dataset: d\ngate: {rule: lenient}\n",
            "passk.yml: gate.rule",
            'must be one of `relative`, `sequential`, `strict`, got the string "lenient"',
        ),
        (
            "dataset: d\ngate: {sequential: {unreliable: 0.995}}\n",
            "passk.yml: gate.sequential",
            "need 0 < unreliable < reliable < 1",
        ),
        (
            "dataset: d\ngate: {sequential: {max_attempts: 20}}\n",
            "passk.yml: gate.sequential",
            "max_attempts must be at least either test's max_decisions",
        ),
        (
            "dataset: d\ngate: {sequential: {alpha: 0.5}}\n",
            "passk.yml: gate.sequential.alpha",
            "must be less than 0.5, got 0.5",
        ),
        ("", "passk.yml", "the config file is empty"),
        ("# only a comment\n\n", "passk.yml", "the config file is empty"),
        (
            "a: 1\n---\nb: 2\n",
            "passk.yml:2",
            "invalid YAML: expected a single document in the stream",
        ),
        ("dataset: d\n\tagent: x\n", "passk.yml:2", "invalid YAML"),
        ("dataset: d\x07\n", "passk.yml:1", "invalid YAML: unacceptable character #x0007"),
    ],
)
def test_invalid_configs_name_the_key_or_line(text: str, where: str, message: str) -> None:
    error = error_of(text)
    assert error.where == where
    assert error.message.startswith(message), error.message
    assert error.hint  # every error says how to fix it
    assert "\n" not in str(error)


def test_missing_config_file_names_the_path(tmp_path: Path) -> None:
    path = tmp_path / "passk.yml"
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.where == str(path)
    assert info.value.message == "config file not found"
    assert info.value.hint is not None and "--config" in info.value.hint


def test_config_path_that_is_a_directory(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path)
    assert info.value.where == str(tmp_path)


def test_non_utf8_config_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "passk.yml"
    path.write_bytes(b"dataset: d\nagent: {command: [caf\xe9]}\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value) == f"{path}:2: is not valid UTF-8 text (save the file as UTF-8)"


def test_errors_name_the_config_as_given(tmp_path: Path) -> None:
    path = tmp_path / "ci" / "passk.yml"
    path.parent.mkdir()
    path.write_text("dataset: d\nagent: {command: [a]}\nk: 0\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.where == f"{path}: k"


# -------------------------------------------------------------- jsonschema errors


@pytest.mark.parametrize(
    ("parts", "path"),
    [
        ((), ""),
        (("agent", "timeout_s"), "agent.timeout_s"),
        (("agent", "command", 0), "agent.command[0]"),
        (("agent", "env", "MY.VAR"), 'agent.env["MY.VAR"]'),
        ((0, "id"), "[0].id"),
    ],
)
def test_json_path(parts: tuple[str | int, ...], path: str) -> None:
    assert json_path(parts) == path


def test_schema_file_is_shipped_as_package_data() -> None:
    # The loader reads it through importlib.resources; it must parse as JSON.
    from importlib import resources

    text = (
        resources.files("passk_action")
        .joinpath("schemas/config.schema.json")
        .read_text(encoding="utf-8")
    )
    assert json.loads(text) == config_schema()


def test_the_gate_rule_and_its_settings_are_read_once_into_the_policy() -> None:
    config = parse_config(
        MINIMAL + "confirm: {must_not_break_attempts: 9}\n"
        "gate: {rule: strict, sequential: {alpha: 0.0001, beta: 0.05, max_decisions: 60}}\n",
        NAME,
    ).config
    rule = config.gate.policy.rule
    assert (rule.rule, rule.alpha, rule.beta, rule.max_decisions) == ("strict", 0.0001, 0.05, 60)
    assert rule.confirm_attempts == 9  # the strict rule confirms as confirm says
    assert parse_config(MINIMAL, NAME).config.gate.rule.rule == "relative"  # the default


@pytest.mark.parametrize(
    ("agent", "where"),
    [
        ('{command: [a], pass_env: ["INPUT_GITHUB-TOKEN"]}', "agent.pass_env[0]"),
        ("{command: [a], pass_env: [OPENAI_API_KEY, GITHUB_TOKEN]}", "agent.pass_env[1]"),
        ("{command: [a], pass_env: [gh_token]}", "agent.pass_env[0]"),
        ("{command: [a], env: {ACTIONS_RUNTIME_TOKEN: x}}", "agent.env.ACTIONS_RUNTIME_TOKEN"),
        (
            "{command: [a], env: {ACTIONS_ID_TOKEN_REQUEST_URL: x}}",
            "agent.env.ACTIONS_ID_TOKEN_REQUEST_URL",
        ),
        (
            "{http: {url: 'http://h/x', headers: {A: 'token ${GITHUB_TOKEN}'}}}",
            "agent.http.headers.A",
        ),
    ],
)
def test_a_config_naming_a_runner_credential_is_refused_at_load(agent: str, where: str) -> None:
    for key, text in (
        ("agent", f"dataset: d\nagent: {agent}\n"),
        ("baseline.agent", f"dataset: d\nbaseline: {{agent: {agent}}}\n"),
    ):
        with pytest.raises(ConfigError) as info:
            parse_config(text, Path("passk.yml"))
        message = str(info.value)
        assert message.startswith(f"passk.yml: {where.replace('agent', key, 1)}: "), message
        assert "credential of the runner" in message and "\n" not in message


def test_control_a_config_naming_its_own_key_loads() -> None:
    text = (
        "dataset: d\nagent: {command: [a], env: {MODEL: small}, pass_env: []}\n"
        "baseline: {agent: {http: {url: 'http://h/x', headers: {A: 'Bearer ${MODEL_KEY}'}}}}\n"
    )
    loaded = parse_config(text, Path("passk.yml"))
    assert loaded.warnings == ()
    assert dict(loaded.config.agent.env) == {"MODEL": "small"}
