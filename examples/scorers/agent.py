"""A refund agent that answers in free text, as many LLM agents do: no label to match.

Reads one JSON request on stdin (``{"id", "input", "attempt", "version"}``) and
prints ``{"decision": "<a sentence>"}``.  The sentences come from
``answers.json`` (row id -> one sentence, or a list played attempt by attempt),
so the demo and the tests know what each attempt said; a scorer program, not
passk's exact match, decides whether it is right.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main() -> int:
    request = json.load(sys.stdin)
    answers = json.loads((Path(__file__).parent / "answers.json").read_text(encoding="utf-8"))
    said = answers.get(request["id"], "I cannot decide on this request.")
    if isinstance(said, list):
        said = said[min(int(request["attempt"]), len(said)) - 1]
    print(json.dumps({"decision": said}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
