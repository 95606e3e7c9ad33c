"""Writes 20 MiB to stderr before answering (or failing, with --fail)."""

import json
import sys

sys.stdin.read()
block = "log line that nobody reads\n" * 2000
for _ in range(20 * (1 << 20) // len(block)):
    sys.stderr.write(block)
sys.stderr.write("LAST WORDS\n")
sys.stderr.flush()
if "--fail" in sys.argv:
    sys.exit(1)
print(json.dumps({"decision": "approve"}))
