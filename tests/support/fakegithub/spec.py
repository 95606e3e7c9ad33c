"""GitHub's own OpenAPI description of the 12 operations passk uses, ready to validate with.

The spec is vendored in ``tests/specs`` (the subset of 9 operations, an
addition of one more, and the approval subset of two, read as one document), with its provenance in
tests/specs/README.md (FACTS.md and SOURCES.md cited below sit there too).  A
missing spec is an error, never a silent skip: tests that cannot check requests
against GitHub's description would prove nothing about GitHub.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from openapi_schema_validator import OAS30Validator, oas30_format_checker

SPECS_DIR = Path(__file__).resolve().parents[2] / "specs"
"""GitHub's descriptions vendored for the tests: ``tests/specs`` (see its README.md)."""
SPEC_FILE = SPECS_DIR / "github-rest-subset.openapi.json"
ADDITIONS_FILE = SPECS_DIR / "github-rest-additions.openapi.json"
APPROVAL_SPEC_FILE = SPECS_DIR / "github-rest-approval.openapi.json"
"""Who added a label and with what permission: 2 operations, vendored for issue 28."""


class SpecMissing(RuntimeError):
    """The vendored spec is not where the tests expect it."""


@cache
def load_spec() -> dict[str, Any]:
    """The spec as published (unmodified), loaded once per test session: the subset with
    the addition's operations and components in it (they share no name)."""
    spec = _read(SPEC_FILE)
    additions = _read(ADDITIONS_FILE)
    for template, item in additions["paths"].items():
        assert template not in spec["paths"], f"{ADDITIONS_FILE.name}: {template} twice"
        spec["paths"][template] = item
    for kind, parts in additions["components"].items():
        known = spec["components"].setdefault(kind, {})
        assert not set(parts) & set(known), f"{ADDITIONS_FILE.name}: a {kind} twice"
        known.update(parts)
    # The approval subset keeps every component its operations reference, so it shares
    # some with the subset: cut from the same description, a shared one must be equal.
    approval = _read(APPROVAL_SPEC_FILE)
    for template, item in approval["paths"].items():
        assert template not in spec["paths"], f"{APPROVAL_SPEC_FILE.name}: {template} twice"
        spec["paths"][template] = item
    for kind, parts in approval["components"].items():
        known = spec["components"].setdefault(kind, {})
        for name, value in parts.items():
            if name in known and known[name] != value:
                raise SpecMissing(
                    f"{APPROVAL_SPEC_FILE.name}: components/{kind}/{name} differs from the "
                    "subset's; re-vendor both from the same commit"
                )
            known[name] = value
    return spec


def _read(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise SpecMissing(
            f"{path.resolve()}: GitHub's OpenAPI description is missing; the fake GitHub "
            "validates every request against it. Restore tests/specs from git "
            "(provenance in tests/specs/README.md)."
        ) from exc
    spec: dict[str, Any] = json.loads(text)
    return spec


def _allow_null_in_nullable_enums(node: Any) -> None:
    # OAS 3.0.3 says `nullable: true` admits null even with an `enum`; the
    # validator does not (SOURCES.md §1 step 5 (a)): a completed-later check run
    # with conclusion null is valid GitHub output, so teach the enum about null.
    if isinstance(node, dict):
        enum = node.get("enum")
        if node.get("nullable") is True and isinstance(enum, list) and None not in enum:
            enum.append(None)
        for value in node.values():
            _allow_null_in_nullable_enums(value)
    elif isinstance(node, list):
        for value in node:
            _allow_null_in_nullable_enums(value)


def _drop_discriminators(node: Any) -> None:
    # FACTS.md F2: `discriminator` without `mapping` makes the validator look up
    # `#/components/schemas/<status>`, which does not exist; `oneOf` alone is exact.
    if isinstance(node, dict):
        node.pop("discriminator", None)
        for value in node.values():
            _drop_discriminators(value)
    elif isinstance(node, list):
        for value in node:
            _drop_discriminators(value)


@cache
def validation_spec() -> dict[str, Any]:
    """A copy of the spec with the two documented validator quirks worked around."""
    spec = copy.deepcopy(load_spec())
    _drop_discriminators(spec["paths"])
    _allow_null_in_nullable_enums(spec["components"]["schemas"])
    return spec


def pointer(*parts: str) -> str:
    """A JSON pointer (RFC 6901) into the spec, escaping ``~`` and ``/``."""
    escaped = (part.replace("~", "~0").replace("/", "~1") for part in parts)
    return "#/" + "/".join(escaped)


def schema_errors(ref: str, instance: Any) -> list[str]:
    """Every way ``instance`` fails the schema at ``ref`` (a pointer into the spec)."""
    spec = validation_spec()
    # The whole spec is the root resource, so every `#/components/...` $ref in
    # the target schema resolves; a draft-4 style `$ref` ignores its siblings.
    root = {"$ref": ref, "components": spec["components"], "paths": spec["paths"]}
    validator = OAS30Validator(root, format_checker=oas30_format_checker)
    errors = sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path))
    return [f"{_location(error.absolute_path)}: {error.message[:300]}" for error in errors]


def _location(path: Iterable[Any]) -> str:
    parts = [str(part) for part in path]
    return "/".join(parts) if parts else "(root)"


@dataclass(frozen=True)
class Operation:
    """One operation of the spec, with what the fake needs to route and check it."""

    operation_id: str
    method: str
    path_template: str
    regex: re.Pattern[str]
    parameters: tuple[dict[str, Any], ...]
    body_ref: str | None
    body_required: bool
    success_status: int
    success_ref: str | None

    def path_params(self) -> tuple[dict[str, Any], ...]:
        return tuple(p for p in self.parameters if p["in"] == "path")

    def query_params(self) -> tuple[dict[str, Any], ...]:
        return tuple(p for p in self.parameters if p["in"] == "query")


def _resolve(spec: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        target: Any = spec
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part.replace("~1", "/").replace("~0", "~")]
        node = target
    return node


@cache
def operations() -> tuple[Operation, ...]:
    """The spec's operations, parsed once."""
    spec = load_spec()
    found: list[Operation] = []
    for template, item in spec["paths"].items():
        for method, op in item.items():
            if method not in {"get", "post", "patch", "put", "delete"}:
                continue
            params = tuple(_resolve(spec, p) for p in op.get("parameters", []))
            regex = "^" + re.escape(template) + "$"
            for param in params:
                if param["in"] != "path":
                    continue
                # x-multi-segment (the commit `sha`) may itself contain slashes.
                piece = "(?P<{}>.+)" if param.get("x-multi-segment") else "(?P<{}>[^/]+)"
                regex = regex.replace(
                    re.escape("{" + param["name"] + "}"), piece.format(param["name"])
                )
            body = op.get("requestBody")
            body_ref = None
            if body is not None:
                body_ref = pointer(
                    "paths",
                    template,
                    method,
                    "requestBody",
                    "content",
                    "application/json",
                    "schema",
                )
            success = min(int(code) for code in op["responses"] if code.startswith("2"))
            content = op["responses"][str(success)].get("content")
            success_ref = None
            if content is not None:
                success_ref = pointer(
                    "paths",
                    template,
                    method,
                    "responses",
                    str(success),
                    "content",
                    "application/json",
                    "schema",
                )
            found.append(
                Operation(
                    operation_id=op["operationId"],
                    method=method.upper(),
                    path_template=template,
                    regex=re.compile(regex),
                    parameters=params,
                    body_ref=body_ref,
                    body_required=bool(body and body.get("required")),
                    success_status=success,
                    success_ref=success_ref,
                )
            )
    return tuple(found)


def example(name: str) -> Any:
    """A deep copy of one of the spec's embedded examples (a response template)."""
    return copy.deepcopy(load_spec()["components"]["examples"][name]["value"])


def value_errors(schema: dict[str, Any], value: Any) -> list[str]:
    """Every way a parameter value fails its (reference-free) parameter schema."""
    validator = OAS30Validator(schema, format_checker=oas30_format_checker)
    return [error.message[:300] for error in validator.iter_errors(value)]
