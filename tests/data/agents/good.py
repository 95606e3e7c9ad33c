"""A well-behaved agent: answers from its input, reports checks in a fixed, non-sorted order."""

import json
import sys

request = json.load(sys.stdin)
print("thinking about", request["id"], file=sys.stderr)
answer = {
    "decision": request["input"].get("answer", "deny"),
    "checks": {
        "return_window": "ok",
        "proof_of_purchase": "missing",
        "amount_ok": True,
        "score": 0.5,
        "notes": None,
        "nested": {"b": 1, "a": [1, 2]},
    },
}
print("  " + json.dumps(answer) + "  \n")
