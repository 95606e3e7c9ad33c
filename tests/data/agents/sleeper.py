"""Sleeps a long time after reading its input: for stop tests."""

import sys
import time

sys.stdin.read()
time.sleep(60)
