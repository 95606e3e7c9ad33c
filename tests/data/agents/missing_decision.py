"""Prints an object without a decision."""

import sys

sys.stdin.read()
print('{"checks": {"return_window": "ok"}}')
