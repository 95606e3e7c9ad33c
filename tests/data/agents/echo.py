"""Reports what it received (stdin and environment) as checks, for protocol tests."""

import json
import os
import sys

request = json.load(sys.stdin)
checks = {
    "stdin": json.dumps(request, sort_keys=True),
    "cwd": os.getcwd(),
}
for name in (
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "PASSK_VERSION",
    "PASSK_ROW_ID",
    "PASSK_ATTEMPT",
    "FROM_CONFIG",
    "FROM_PARENT",
):
    checks[name] = os.environ.get(name, "<unset>")
print(json.dumps({"decision": "echo", "checks": checks}))
