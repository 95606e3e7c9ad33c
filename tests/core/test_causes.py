"""core/causes: an error attempt's cause by name, and whether it looks transient or key-related."""

from __future__ import annotations

import pytest

from passk_action.agents.scheduler import KEY_HINT, SETUP_HINT, TRANSIENT_HINT, could_not_run
from passk_action.core.causes import Cause, Kind, cause, causes_of, dominant_kind
from passk_action.core.model import Attempt, Phase


@pytest.mark.parametrize(
    ("error", "detail", "name", "kind"),
    [
        # What the SDK example's agent reports through passk_action.serve.
        ("exception", "RateLimitError: Error code: 429 - {'error': 'slow down'}",
         "RateLimitError 429", Kind.TRANSIENT),
        ("exception", "InternalServerError: Error code: 500 - {}", "InternalServerError 500",
         Kind.TRANSIENT),
        ("exception", "openai.APITimeoutError: Request timed out.", "APITimeoutError",
         Kind.TRANSIENT),
        ("exception", "APIConnectionError: Connection error.", "APIConnectionError",
         Kind.TRANSIENT),
        ("exception", "AuthenticationError: Error code: 401 - Incorrect API key provided",
         "AuthenticationError 401", Kind.KEY),
        ("exception", "AgentError: OPENAI_API_KEY is not set: export your provider's key",
         "AgentError", Kind.KEY),
        ("exception", "PermissionDeniedError: Error code: 403", "PermissionDeniedError 403",
         Kind.KEY),
        # The SDK example's own words for what the SDK raised after its retries.
        ("exception", "AgentError: still rate limited after 4 retries (429 from http://x/v1/)",
         "AgentError 429", Kind.TRANSIENT),
        ("exception", "AgentError: http://x/v1/ refused the key (401): check OPENAI_API_KEY",
         "AgentError 401", Kind.KEY),
        ("exception", "AgentError: http://x/v1/ answered 503 after 4 retries: busy",
         "AgentError 503", Kind.TRANSIENT),
        ("exception", "AgentError: cannot reach http://127.0.0.1:9/v1/ after 4 retries",
         "AgentError", Kind.TRANSIENT),
        ("exception", "AgentError: price 1.500 is not 200.5", "AgentError", Kind.OTHER),
        # passk's own reasons.
        ("http-status", "HTTP 503 Service Unavailable: overloaded", "http-status 503",
         Kind.TRANSIENT),
        ("http-status", "HTTP 404 Not Found", "http-status 404", Kind.OTHER),
        ("timeout", "killed after the 60s timeout", "timeout", Kind.TRANSIENT),
        ("connection-error", "connection refused", "connection-error", Kind.TRANSIENT),
        ("exit-status", "exited with status 1\nstderr: ModuleNotFoundError: No module named 'x'",
         "exit-status", Kind.OTHER),
        ("bad-output", "no decision in the answer: {'api_key': 1}", "bad-output", Kind.OTHER),
        ("exception", "AgentError: the model's decision 'maybe' is not one of approve, deny",
         "AgentError", Kind.OTHER),
        ("exception", "ValueError: row_key must be set", "ValueError", Kind.OTHER),
        ("exception", None, "exception", Kind.OTHER),
    ],
)  # fmt: skip
def test_causes_by_name_and_kind(error: str, detail: str | None, name: str, kind: Kind) -> None:
    assert cause(error, detail) == Cause(name, kind)


def _error(row: str, n: int, detail: str, error: str = "exception") -> Attempt:
    return Attempt(row, n, Phase.MAIN, None, error=error, detail=detail)


def test_errors_grouped_most_frequent_first_and_the_kind_they_share() -> None:
    attempts = [
        _error("r1", 1, "RateLimitError: Error code: 429"),
        _error("r1", 2, "InternalServerError: Error code: 500"),
        _error("r2", 1, "RateLimitError: Error code: 429"),
        Attempt("r2", 2, Phase.MAIN, "deny"),
    ]
    assert causes_of(attempts) == [
        (Cause("RateLimitError 429", Kind.TRANSIENT), 2),
        (Cause("InternalServerError 500", Kind.TRANSIENT), 1),
    ]
    assert dominant_kind(attempts) is Kind.TRANSIENT
    assert dominant_kind([*attempts, _error("r3", 1, "boom", "exit-status")]) is None
    assert dominant_kind(attempts[3:]) is None


@pytest.mark.parametrize(
    ("detail", "error", "hint"),
    [
        ("AgentError: OPENAI_API_KEY is not set: export your provider's key", "exception",
         KEY_HINT),
        ("AuthenticationError: Error code: 401 - Incorrect API key", "exception", KEY_HINT),
        ("RateLimitError: Error code: 429", "exception", TRANSIENT_HINT),
        ("exited with status 1\nModuleNotFoundError: No module named 'openai'", "exit-status",
         SETUP_HINT),
    ],
)  # fmt: skip
def test_a_version_that_could_not_run_gets_the_hint_of_its_cause(
    detail: str, error: str, hint: str
) -> None:
    failed = could_not_run([_error("r1", 1, detail, error), _error("r2", 1, detail, error)])
    assert failed.hint == hint
