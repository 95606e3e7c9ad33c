"""Kills itself with SIGKILL, like the OOM killer would."""

import os
import signal
import sys

sys.stdin.read()
os.kill(os.getpid(), signal.SIGKILL)
