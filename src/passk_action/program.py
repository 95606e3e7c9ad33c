"""``passk``, the program: the command line (``cli/``) and, as ``passk action``, the Action.

The two shells import nothing of each other: the command line parses every
command, ``action`` included (its ``--help`` and usage errors are the CLI's),
and hands ``action`` to the entry point this module gives it.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``passk`` command; exit 0 (ok / gate passed), 1 (gate failed), 2 (input)."""
    from .cli import main as cli_main

    return cli_main(argv, delegated={"action": _action})


def _action() -> int:
    # Imported when chosen: the action pulls in requests, and `passk --help` must not.
    from .action.main import main as action_main

    return action_main()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
