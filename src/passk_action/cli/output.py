"""What every subcommand prints besides its result: warnings.

Kept apart from ``common`` (which loads configs and builds agents) so a
subcommand that needs neither, like ``passk import``, starts without them.
"""

from __future__ import annotations

import sys


def warn(message: str) -> None:
    print(f"passk: warning: {message}", file=sys.stderr)
