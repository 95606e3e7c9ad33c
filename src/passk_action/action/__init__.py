"""The GitHub Action entrypoint (``passk action``): a thin edge around the engine.

It reads everything from an environment mapping (``os.environ`` in CI, a
plain dict in tests), trusts only the pull request's *base* commit for what
protects the gate, and never lets a failure to post a comment or a check
change the gate's decision.
"""

from .main import main

__all__ = ["main"]
