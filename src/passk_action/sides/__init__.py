"""Preparing the two sides of a comparison from git, for the action and ``passk compare``.

The base commit's trusted inputs, the exports the base and head agents run
from (the base's set up, then locked), the credentials hidden from agents,
and whether the committed baseline still measures the base commit's agent.
"""
