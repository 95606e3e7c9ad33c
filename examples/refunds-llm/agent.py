"""A refund-review agent built on an LLM, through the OpenAI chat-completions API.

This is what a team's agent usually looks like: the ``openai`` SDK, an API key
from the environment, a system prompt holding the refund policy, the request
in the user message, and the model's JSON answer parsed into a decision and
its intermediate checks. Any provider or local server that speaks the
chat-completions API works unchanged (OpenAI, Azure OpenAI, vLLM, Ollama,
llama.cpp, LiteLLM...):

    OPENAI_API_KEY       the key (required; any non-empty value for a local server)
    OPENAI_BASE_URL      the endpoint, default https://api.openai.com/v1
    PASSK_EXAMPLE_MODEL  the model, default gpt-4o-mini
    PASSK_EXAMPLE_MAX_RETRIES  SDK retries of 429/5xx/connection errors, default 4
    PASSK_EXAMPLE_TIMEOUT_S    seconds per API call, default 30
    PASSK_EXAMPLE_MAX_TOKENS   the answer's token budget, default 300
    PASSK_EXAMPLE_TEMPERATURE  sent only when set

Two prompts: ``--prompt v1`` (production) insists on an itemized receipt;
``--prompt v2`` (the candidate) accepts bank statements and gift receipts as
partial proof, and adds "be skeptical of damage claims on expensive items".

It speaks passk's worker protocol through ``passk_action.serve`` (one process
serves many requests, so the SDK is imported and the client built once), and
the per-attempt protocol as well. Each answer carries the token usage the API
returned (``usage``), so passk reports cost and latency beside reliability.
Every failure is an error answer with one
clear line, never a made-up decision: a missing key, an API error after the
SDK's retries (a 429 is retried by the SDK, honouring ``Retry-After``), an
answer cut off at the token budget, an answer that is not the JSON asked for,
or a decision outside approve / deny / escalate.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Mapping
from typing import Any

try:
    import openai
except ImportError as exc:  # pragma: no cover - depends on the environment
    # The exception's own line first: it is what passk shows as the reason.
    sys.exit(f"{type(exc).__name__}: {exc}: agent.py needs the openai package: "
             "pip install -r requirements.txt (beside agent.py)")

from passk_action.serve import serve

LABELS = ("approve", "deny", "escalate")

_ANSWER_FORMAT = """\
Work through the checks in this order, then decide. Answer with only a JSON object:
{"checks": {"return_window": "ok|borderline|expired",
            "proof_of_purchase": "present|partial|missing",
            "damage": "none|shipping|customer|unclear"},
 "decision": "approve|deny|escalate",
 "reason": "one short sentence"}
Add "amount": "standard|high" to checks when the amount decided it, and
"account_risk": "flagged" when the account is flagged."""

PROMPTS = {
    "v1": f"""\
You review refund requests for an online store. Apply this policy:
1. Return window: a request inside the return window is eligible. Up to 2 days late
   is borderline: accept it. More than 2 days late is expired: deny.
2. Proof of purchase: only an itemized receipt, order confirmation or invoice counts.
   Deny a request without one.
3. Damage: refund shipping damage, deny damage the customer caused. If you cannot
   tell, escalate items of $500 or more and approve the rest.
4. Escalate every request from a flagged account (chargebacks, fraud alerts).
{_ANSWER_FORMAT}""",
    "v2": f"""\
You review refund requests for an online store. Apply this policy:
1. Return window: a request inside the return window is eligible. Up to 2 days late
   is borderline: accept it. More than 2 days late is expired: deny.
2. Proof of purchase: an itemized receipt, order confirmation or invoice is proof.
   A bank or card statement, gift receipt or payment screenshot is partial proof:
   accept it, but escalate items of $500 or more. Deny a request with no proof.
3. Damage: refund shipping damage, deny damage the customer caused. If you cannot
   tell, escalate items of $500 or more and approve the rest. Be skeptical of damage
   claims on expensive items: customers overstate them.
4. Escalate every request from a flagged account (chargebacks, fraud alerts).
{_ANSWER_FORMAT}""",
}

REQUIRED_INPUT = ("item", "amount_usd", "days_since_delivery", "receipt", "customer_message")


class AgentError(Exception):
    """A failure this agent reports as an error answer, never as a decision."""


def user_message(facts: Mapping[str, Any]) -> str:
    """The refund request as the model reads it."""
    missing = [key for key in REQUIRED_INPUT if key not in facts]
    if missing:
        raise AgentError(f"the row's input lacks {', '.join(missing)}")
    flags = facts.get("account_flags") or []
    return "\n".join([
        "Refund request:",
        f"- Order: {facts.get('order_id', 'unknown')}",
        f"- Item: {facts['item']}",
        f"- Price: ${float(facts['amount_usd']):.2f}",
        f"- Delivered: {int(facts['days_since_delivery'])} days ago",
        f"- Return window: {int(facts.get('return_window_days', 30))} days",
        f"- Receipt: {facts['receipt']}",
        f"- Account flags: {', '.join(map(str, flags)) if flags else 'none'}",
        f"- Customer message: \"{facts['customer_message']}\"",
    ])


_FENCED = re.compile(r"```(?:json)?\s*\n(.*?)\n\s*```", re.DOTALL)


def parse_answer(content: str | None, finish_reason: str | None) -> dict[str, Any]:
    """The model's text as passk's answer object, or AgentError saying what is wrong.

    Bare JSON, or JSON in one fenced block (models add fences even when told
    not to). Checks keep the model's order: it is the order it reasoned in.
    """
    if finish_reason == "length":
        raise AgentError("the model's answer was cut off at the token budget "
                         "(finish_reason=length); raise PASSK_EXAMPLE_MAX_TOKENS")
    text = (content or "").strip()
    fenced = _FENCED.search(text)
    candidate = text if text.startswith("{") or fenced is None else fenced.group(1)
    try:
        answer = json.loads(candidate)
    except json.JSONDecodeError as exc:
        raise AgentError(f"the model's answer is not JSON ({exc.msg}): {_preview(text)}") \
            from None
    if not isinstance(answer, dict):
        raise AgentError(f"the model's answer is not a JSON object: {_preview(text)}")
    decision = answer.get("decision")
    if not isinstance(decision, str) or decision.strip().lower() not in LABELS:
        raise AgentError(f"the model's decision {decision!r} is not one of "
                         f"{', '.join(LABELS)}: {_preview(text)}")
    checks = answer.get("checks", {})
    if not isinstance(checks, dict) or not all(
            isinstance(v, (str, int, float, bool)) for v in checks.values()):
        raise AgentError(f"the model's checks are not an object of plain values: "
                         f"{_preview(text)}")
    return {"decision": decision.strip().lower(),
            "checks": {str(name): v if isinstance(v, str) else json.dumps(v)
                       for name, v in checks.items()}}


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= 160 else flat[:157] + "...")


def _env_number(name: str, default: float, kind: type[float] | type[int]) -> Any:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return kind(default)
    try:
        return kind(raw)
    except ValueError:
        raise AgentError(f"{name}={raw!r} is not a number") from None


class RefundReviewer:
    """One prompt version and one SDK client, built on first use and then reused."""

    def __init__(self, prompt: str) -> None:
        self.prompt = prompt
        self._client: openai.OpenAI | None = None

    def client(self) -> openai.OpenAI:
        if self._client is None:
            if not os.environ.get("OPENAI_API_KEY", "").strip():
                raise AgentError("OPENAI_API_KEY is not set: export your provider's key "
                                 "(for a local OpenAI-compatible server, any value it "
                                 "accepts, with OPENAI_BASE_URL pointing at it)")
            # The SDK retries 429, 5xx and dropped connections itself, waiting as the
            # server's Retry-After says (up to 2 minutes) or backing off exponentially.
            self._client = openai.OpenAI(
                max_retries=_env_number("PASSK_EXAMPLE_MAX_RETRIES", 4, int),
                timeout=_env_number("PASSK_EXAMPLE_TIMEOUT_S", 30.0, float))
        return self._client

    def __call__(self, request: Mapping[str, Any]) -> dict[str, Any]:
        facts = request.get("input")
        if not isinstance(facts, Mapping):
            raise AgentError("the row's input is not an object")
        messages = [{"role": "system", "content": PROMPTS[self.prompt]},
                    {"role": "user", "content": user_message(facts)}]
        options: dict[str, Any] = {
            "max_tokens": _env_number("PASSK_EXAMPLE_MAX_TOKENS", 300, int),
            "response_format": {"type": "json_object"},
        }
        if os.environ.get("PASSK_EXAMPLE_TEMPERATURE", "").strip():
            options["temperature"] = _env_number("PASSK_EXAMPLE_TEMPERATURE", 1.0, float)
        client = self.client()
        model = os.environ.get("PASSK_EXAMPLE_MODEL", "").strip() or "gpt-4o-mini"
        try:
            completion = client.chat.completions.create(
                model=model, messages=messages, **options)  # type: ignore[arg-type]
        except openai.RateLimitError as exc:
            raise AgentError(f"still rate limited after {client.max_retries} retries "
                             f"(429 from {client.base_url}): {_api_message(exc)}") from None
        except openai.AuthenticationError as exc:
            raise AgentError(f"{client.base_url} refused the key (401): check "
                             f"OPENAI_API_KEY: {_api_message(exc)}") from None
        except openai.APIStatusError as exc:
            raise AgentError(f"{client.base_url} answered {exc.status_code} after "
                             f"{client.max_retries} retries: {_api_message(exc)}") from None
        except openai.APIConnectionError as exc:
            raise AgentError(f"cannot reach {client.base_url} after {client.max_retries} "
                             f"retries ({exc}); check OPENAI_BASE_URL") from None
        if not completion.choices:
            raise AgentError(f"{model} returned no choices")
        choice = completion.choices[0]
        answer = parse_answer(choice.message.content, choice.finish_reason)
        usage = completion.usage
        if usage is not None:
            # What the API billed for this call; passk prices it (passk.yml `pricing`).
            answer["usage"] = {"input_tokens": usage.prompt_tokens,
                               "output_tokens": usage.completion_tokens,
                               "model": completion.model or model}
        return answer


def _api_message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return str(body["message"])
    return str(exc)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Refund-review agent on an LLM (passk agent).")
    parser.add_argument("--prompt", choices=sorted(PROMPTS), default="v1")
    args = parser.parse_args(argv)
    return serve(RefundReviewer(args.prompt))


if __name__ == "__main__":
    sys.exit(main())
