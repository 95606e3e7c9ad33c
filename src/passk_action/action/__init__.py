"""The GitHub Action entrypoint (``passk action``): a thin switch over the modes.

It reads everything from an environment mapping (``os.environ`` in CI, a
plain dict in tests), trusts only the pull request's *base* commit for what
protects the gate, words what it found with the renderers and hands the text
to the GitHub edge, and never lets a failure to post a comment or a check
change the gate's decision.
"""

from .main import main

__all__ = ["main"]
