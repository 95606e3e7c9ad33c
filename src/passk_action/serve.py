"""The public home of :func:`serve` and :func:`agent` for agent authors.

The README and ``docs/protocol.md`` tell users to write
``from passk_action.serve import agent``; the code lives in ``agents/serve.py``
with the other transports, and this path keeps working.
"""

from .agents.serve import Handler, agent, serve

__all__ = ["Handler", "agent", "serve"]
