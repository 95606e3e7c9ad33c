"""Prints a valid answer but exits with status 3: the answer must not count."""

import json
import sys

sys.stdin.read()
print(json.dumps({"decision": "deny"}))
print("giving up", file=sys.stderr)
sys.exit(3)
