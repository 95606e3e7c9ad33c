"""Starts a grandchild, records its pid in $PIDFILE, then hangs: both must be killed."""

import os
import subprocess
import sys
import time

child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
with open(os.environ["PIDFILE"] + ".tmp", "w") as handle:
    handle.write(str(child.pid))
os.replace(os.environ["PIDFILE"] + ".tmp", os.environ["PIDFILE"])
time.sleep(120)
