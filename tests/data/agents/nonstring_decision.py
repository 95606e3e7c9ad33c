"""Prints a decision that is a number."""

import sys

sys.stdin.read()
print('{"decision": 1}')
