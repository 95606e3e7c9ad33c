"""An agent (a worker, ``passk_action.serve``) that tells a re-ask apart, and can kill passk.

Each call appends one line to ``$ANSWERS_LOG``: ``{"key": [version, row, attempt],
"answered": bool}``.  The first answer for a key is fixed by the key alone
(the baseline is always right; the candidate is wrong on attempt 2 of a
``g*`` row and on about a third of its later attempts); an attempt asked
again after it was answered gets the other answer, so a re-ask changes
the verdict instead of hiding.

``$ANSWERS_KILL_AT`` = N: the N-th call for a confirmation attempt (numbered
after ``$ANSWERS_K``, counted over the whole log) SIGKILLs its parent (passk)
instead of answering, once per N: the kill lands between two attempts,
when this one is the only one in flight (the test runs one at a time).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
from typing import Any

from passk_action.serve import agent

RIGHT, WRONG = "deny", "approve"


def first_answer(version: str, row: str, attempt: int) -> str:
    if version == "baseline" or not row.startswith("g"):
        return RIGHT
    if attempt == 2:
        return WRONG
    digest = hashlib.sha256(f"{row}:{attempt}".encode()).digest()
    return WRONG if digest[0] < 80 else RIGHT


def log(path: str, entry: dict[str, object]) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps(entry) + "\n").encode())
    finally:
        os.close(fd)


@agent
def decide(request: dict[str, Any]) -> str:
    key = [request["version"], request["id"], int(request["attempt"])]
    path = os.environ["ANSWERS_LOG"]
    try:
        with open(path, encoding="utf-8") as handle:
            earlier = [json.loads(line) for line in handle]
    except FileNotFoundError:
        earlier = []
    k = int(os.environ["ANSWERS_K"])
    kill_at = int(os.environ.get("ANSWERS_KILL_AT", "0"))
    if key[2] > k and kill_at:
        confirming = sum(1 for e in earlier if e["key"][2] > k)
        killed = any(e.get("kill_at") == kill_at for e in earlier)
        if confirming + 1 >= kill_at and not killed:
            log(path, {"key": key, "answered": False, "kill_at": kill_at})
            os.kill(os.getppid(), signal.SIGKILL)
            raise SystemExit(1)
    answer = first_answer(*key)
    if any(e["key"] == key and e["answered"] for e in earlier):
        answer = RIGHT if answer == WRONG else WRONG
    # Logged as answered before passk reads it: a kill now would show as a re-ask.
    log(path, {"key": key, "answered": True})
    return answer
