"""Fails the first try of each attempt (marker file in $MARKER_DIR), then answers $DECISION.

Every invocation is also logged as a file, so tests can count tries.
"""

import json
import os
import sys
import time

request = json.load(sys.stdin)
marker_dir = os.environ["MARKER_DIR"]
key = f"{request['id']}-{request['attempt']}"
with open(os.path.join(marker_dir, f"call-{key}-{time.time_ns()}"), "w"):
    pass
marker = os.path.join(marker_dir, f"failed-{key}")
if os.environ.get("ALWAYS_FAIL") or not os.path.exists(marker):
    open(marker, "w").close()
    print("transient failure", file=sys.stderr)
    sys.exit(1)
print(json.dumps({"decision": os.environ.get("DECISION", "approve")}))
