"""Prints a JSON array instead of an object."""

import sys

sys.stdin.read()
print('["deny"]')
