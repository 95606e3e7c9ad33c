"""Orchestration: record runs, top up a baseline, confirm lost rows, build a result.

This is the glue between the pure core and the edges.  It receives its
collaborators (agents, progress, clock, stop event) as arguments and holds no
global state, so the CLI, the GitHub Action and tests drive the same code.

- ``session``: how a run or a comparison runs and reports (concurrency,
  retries, clock, progress, the stop signal);
- ``agents``: the runnable agent for a config entry, and closing it;
- ``recording``: one version measured k times per row, journaled, written;
- ``compare``: a candidate against its baseline, to a decision.
"""
