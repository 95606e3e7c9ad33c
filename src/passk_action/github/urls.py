"""Where things are on GitHub: the API and the site a runner names by default, a workflow
run's page, and the page that opens a pull request from a pushed branch."""

from __future__ import annotations

DEFAULT_API_URL = "https://api.github.com"
DEFAULT_SERVER_URL = "https://github.com"


def run_page(server_url: str, repository: str, run_id: str | None) -> str | None:
    """The workflow run's page, where its job summary is; None unless the runner named the
    run and the repository on an ``https`` site (the link goes into a comment)."""
    if not run_id or not repository or not server_url.startswith("https://"):
        return None
    return f"{server_url.rstrip('/')}/{repository}/actions/runs/{run_id}"


def compare_page(server_url: str, repository: str, target: str, branch: str) -> str | None:
    """The page that opens a pull request of ``branch`` into ``target``; None without a
    repository to name."""
    if not repository:
        return None
    return f"{server_url.rstrip('/')}/{repository}/compare/{target}...{branch}?expand=1"
