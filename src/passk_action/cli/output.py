"""What every subcommand prints besides its result: warnings, and the time it stamps.

Kept apart from ``common`` (which loads configs and builds agents) so a
subcommand that needs neither, like ``passk import``, starts without them.
"""

from __future__ import annotations

import sys
from datetime import datetime, timezone


def warn(message: str) -> None:
    print(f"passk: warning: {message}", file=sys.stderr)


def now_iso() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")
