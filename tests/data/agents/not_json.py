"""Prints a bare word instead of a JSON object."""

import sys

sys.stdin.read()
print("deny")
