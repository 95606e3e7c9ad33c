"""A deterministic scorer program: is the agent's free-text answer the expected decision?

passk runs it (from the base commit, as a user of its own) once per recorded
answer.  It reads one JSON object on stdin::

    {"row_id", "attempt", "version", "input", "answer", "expected",
     "expected_checks", "checks", "judgement", "judge_repeats"}

and prints ``{"correct": true|false, "reason": "..."}``.  Right: the first
decision word the answer names (approve, deny, escalate) is the expected one.
"""

from __future__ import annotations

import json
import re
import sys

LABELS = ("approve", "deny", "escalate")


def main() -> int:
    request = json.load(sys.stdin)
    answer = request["answer"]
    answer = answer if isinstance(answer, str) else json.dumps(answer)
    found = re.search(r"\b(" + "|".join(LABELS) + r")", answer.lower())
    decided = found.group(1) if found else None
    right = decided == request["expected"]
    print(json.dumps({"correct": right, "reason": f"the answer decides {decided or 'nothing'}"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
