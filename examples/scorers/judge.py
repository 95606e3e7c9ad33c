"""An LLM judge as a scorer program: asks an OpenAI-compatible endpoint whether an answer
is right, with no SDK (the standard library's urllib).

passk runs it (from the base commit, as a user of its own) ``judge_repeats`` times
per recorded answer and keeps every verdict, so the judge's own noise (the same
answer judged right and wrong) is measured apart from the agent's.  It reads one
JSON object on stdin (see scorer.py) and prints ``{"correct": ..., "reason": ...}``.

Environment: ``OPENAI_API_KEY``, ``OPENAI_BASE_URL`` (default
https://api.openai.com/v1), ``PASSK_JUDGE_MODEL`` (default gpt-4o-mini).
A 429 or 5xx is retried, honouring Retry-After, up to 5 times; anything else
that is not a verdict exits non-zero, which passk records as the scorer's error
(never a decision).
"""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.error
import urllib.request

RUBRIC = (
    "You grade a refund agent. Grade the answer: it is correct when it decides the "
    "expected decision and nothing else. Reply with only a JSON object: "
    '{"correct": true or false, "reason": "<one sentence>"}.'
)


def ask(body: dict[str, object]) -> dict[str, object]:
    base = os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1").rstrip("/")
    request = urllib.request.Request(
        base + "/chat/completions",
        data=json.dumps(body).encode("utf-8"),
        headers={
            "Authorization": "Bearer " + os.environ["OPENAI_API_KEY"],
            "Content-Type": "application/json",
        },
    )
    for attempt in range(6):
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return json.load(response)
        except urllib.error.HTTPError as exc:
            if (exc.code != 429 and exc.code < 500) or attempt == 5:
                raise
            time.sleep(min(float(exc.headers.get("Retry-After") or 1), 10))
    raise RuntimeError("unreachable")


def main() -> int:
    request = json.load(sys.stdin)
    answer = request["answer"]
    answer = answer if isinstance(answer, str) else json.dumps(answer)
    completion = ask(
        {
            "model": os.environ.get("PASSK_JUDGE_MODEL", "gpt-4o-mini"),
            "messages": [
                {"role": "system", "content": RUBRIC},
                {
                    "role": "user",
                    "content": f"Expected decision: {request['expected']}\nAnswer: {answer}",
                },
            ],
            "response_format": {"type": "json_object"},
        }
    )
    verdict = json.loads(completion["choices"][0]["message"]["content"])
    said = {"correct": bool(verdict["correct"]), "reason": str(verdict.get("reason", ""))}
    print(json.dumps(said))
    return 0


if __name__ == "__main__":
    sys.exit(main())
