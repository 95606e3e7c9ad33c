"""A local fake of GitHub's REST API, validated against GitHub's OpenAPI description."""

from .server import (
    NOT_ACCESSIBLE,
    SECONDARY_LIMIT_MESSAGE,
    FakeFile,
    FakeGitHub,
    FakePull,
    RecordedRequest,
)
from .spec import SPEC_FILE, SPECS_DIR, SpecMissing, load_spec, pointer, schema_errors

__all__ = [
    "NOT_ACCESSIBLE",
    "SECONDARY_LIMIT_MESSAGE",
    "SPECS_DIR",
    "SPEC_FILE",
    "FakeFile",
    "FakeGitHub",
    "FakePull",
    "RecordedRequest",
    "SpecMissing",
    "load_spec",
    "pointer",
    "schema_errors",
]
