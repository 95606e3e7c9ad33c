"""Prints checks as a list instead of an object."""

import sys

sys.stdin.read()
print('{"decision": "deny", "checks": ["return_window"]}')
