"""The repository's workflows and actions: loaded, checked against GitHub's schemas, evaluated."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from support.fakegithub import SPECS_DIR

REPO = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted(
    [
        *(REPO / ".github" / "workflows").glob("*.yml"),
        *(REPO / "examples" / "workflows").glob("*.yml"),
    ]
)
PUBLISHED = "passk-dev/passk-action@v1"


@cache
def schema(name: str) -> dict[str, Any]:
    path = SPECS_DIR / name
    if not path.is_file():
        pytest.fail(
            f"{path}: GitHub's JSON schema is missing; restore tests/specs from git "
            "(provenance in tests/specs/README.md)",
            pytrace=False,
        )
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def load_yaml(path: Path) -> dict[str, Any]:
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(doc, dict), f"{path}: not a YAML mapping"
    return doc


def load_workflow(path: Path) -> dict[str, Any]:
    """A workflow as GitHub reads it: PyYAML (YAML 1.1) turns the key ``on`` into True (F1)."""
    doc: dict[Any, Any] = load_yaml(path)
    if True in doc:
        doc["on"] = doc.pop(True)
    return doc


def errors(schema_name: str, doc: dict[str, Any]) -> list[str]:
    validator = jsonschema.Draft7Validator(schema(schema_name))
    found = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
    return [f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}" for e in found]


RUNNER_ACTION = REPO / "runner" / "action.yml"
EXPRESSION = re.compile(r"\$\{\{\s*([^}]+?)\s*\}\}")


def load(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return doc


def evaluate(text: str, context: Mapping[str, str]) -> str:
    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in context:
            raise AssertionError(f"the test does not know the expression {name!r}")
        return context[name]

    return EXPRESSION.sub(value, text)


def bash_step(script: str, path: Path) -> list[str]:
    """What the runner runs for ``shell: bash`` (FACTS.md H3): the script written to a
    file, then ``bash --noprofile --norc -eo pipefail {0}``.  A file, not ``-c``: bash
    may exec the last command of a ``-c`` string itself, which the runner's never does."""
    path.write_text(script, encoding="utf-8")
    path.chmod(0o755)
    return ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(path)]
