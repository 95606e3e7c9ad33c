"""``python -m passk_action``: the ``passk`` program without relying on the console script.

Tests start real runs as subprocesses (to SIGKILL them), and a bare
``python -m`` works in any environment where the package imports, even one
whose ``bin/`` is not on PATH.
"""

from __future__ import annotations

import sys

from .program import main

if __name__ == "__main__":
    sys.exit(main())
