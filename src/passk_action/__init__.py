"""passk: gate pull requests on the reliability of an LLM agent's decisions."""

__version__ = "1.0.0"
"""The one version: the package's (pyproject.toml reads it), the release tag's
(v + it) and every pin in the docs and example workflows (tests/project/test_version.py)."""
