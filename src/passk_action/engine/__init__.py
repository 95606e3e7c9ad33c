"""Orchestration: measure runs, top up a baseline, confirm lost rows, build a result.

This is the glue between the pure core and the edges, and the one place that
runs agents.  It receives its collaborators (agents, progress, clock, stop
event) as arguments and holds no global state, so the CLI, the GitHub Action
and tests drive the same code; it returns data (notes as kinds, not words).

- ``session``: how a run or a comparison runs and reports (concurrency,
  retries, clock, progress, the stop signal);
- ``agents``: the runnable agent for a config entry, the agents a comparison
  asks (built on first use), closing them;
- ``asking``: attempts replayed from a record first, the rest asked, counted;
- ``measuring``: one version measured k times per row, journaled, written;
- ``request``: what a comparison is given (and what a base commit adds);
- ``baseline``, ``candidate``, ``confirm``: the comparison's phases;
- ``compare``: the phases in order, to a decision.
"""
