"""Raises: Python prints a traceback on stderr and exits with status 1."""

import sys

sys.stdin.read()
raise RuntimeError("boom: the model client blew up")
