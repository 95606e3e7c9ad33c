"""passk: gate pull requests on the reliability of an LLM agent's decisions."""

__version__ = "0.1.0"
