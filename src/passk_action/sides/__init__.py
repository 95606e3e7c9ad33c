"""Preparing the two sides of a comparison from git, for the action and ``passk compare``.

The base commit's trusted inputs, the exports the base and head agents run
from (the base's set up, then locked), the credentials hidden from agents,
whether the committed baseline still measures the base commit's agent, and
its history: each row's class in the baselines committed on the base branch.
"""
