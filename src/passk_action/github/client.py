"""A thin client for the few GitHub REST operations passk uses.

It is an edge: it receives its collaborators (HTTP session, sleep, clock) so
tests drive it against a local fake GitHub without sleeping.  Retries follow
GitHub's documented rules (FACTS.md B1): 5xx, 429 and rate-limit 403s are
retried, honouring ``retry-after``, then ``x-ratelimit-reset``, then an
exponential backoff; the total wait never exceeds ``Retries.max_retry_wait_s``: the
client gives up early and says so instead of sleeping past the bound.  Every
failure becomes a one-line :class:`GitHubError` naming the request; the token
never appears in any message.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import quote, urlencode, urlsplit

import requests

from passk_action import __version__
from passk_action.core.retry_after import retry_after_s
from passk_action.errors import GitHubError
from passk_action.truncate import fit_comment

API_VERSION = "2022-11-28"
# FACTS.md A2: check run output.summary and output.text are at most 65,535 characters.
CHECK_OUTPUT_LIMIT = 65535
# Commit status descriptions are shown in one line of the PR's checks box; GitHub
# rejects descriptions over 140 characters.
STATUS_DESCRIPTION_LIMIT = 140
CHECK_TRUNCATED_NOTE = (
    "… truncated by passk to fit GitHub's 65,535-character limit; "
    "the full report is in the job summary."
)

ANNOTATIONS_PER_REQUEST = 50
"""GitHub takes at most 50 annotations per check-run request (REST docs, "Update a check run")."""

Conclusion = Literal[
    "action_required", "cancelled", "failure", "neutral", "success", "skipped", "timed_out"
]
StatusState = Literal["error", "failure", "pending", "success"]

_SECONDARY_LIMIT = re.compile(r"secondary rate limit", re.IGNORECASE)
_LINK_NEXT = re.compile(r'<([^>]+)>\s*;\s*rel="?next"?')
# Safety stop for a Link header that never ends (a broken proxy, not GitHub).
_MAX_PAGES = 1000

# What the workflow's `permissions:` must grant for each kind of call (FACTS.md E1).
_PERMISSION = {
    "comments": "`permissions: pull-requests: write` (or issues: write)",
    "checks": "`permissions: checks: write`",
    "statuses": "`permissions: statuses: write`",
    "pulls": "`permissions: pull-requests: read`",
    "events": "`permissions: pull-requests: read` (or issues: read)",
    "collaborators": "metadata: read (every job token has it)",
}


@dataclass(frozen=True)
class _Retry:
    """Why an answer is worth retrying, and how long GitHub asked us to wait."""

    reason: str
    wait_s: float | None  # None: no instruction from GitHub, use the backoff
    backoff_base_s: float


@dataclass(frozen=True)
class Retries:
    """How often and how long the client retries, and how long one request may take."""

    max_retry_wait_s: float = 120.0
    """The most the client sleeps in all for one call; it gives up rather than wait past it."""
    max_attempts: int = 5
    timeout_s: float = 30.0
    rate_limit_backoff_s: float = 60.0
    """The first backoff when a rate limit names no wait (doubled each time after)."""
    server_error_backoff_s: float = 1.0
    """The first backoff after a 5xx or a failed connection (doubled each time after)."""

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")


class GitHubClient:
    """GitHub's REST API for one repository (``owner/name``)."""

    def __init__(
        self,
        *,
        api_url: str,
        token: str,
        repository: str,
        session: requests.Session | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
        retries: Retries = Retries(),
    ) -> None:
        if not token.strip():
            raise GitHubError(
                "no GitHub token was given",
                where="github-token",
                hint="pass `github-token: ${{ github.token }}` or set GITHUB_TOKEN",
            )
        if not re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", repository):
            raise GitHubError(
                f"repository {repository!r} is not of the form owner/name",
                where="GITHUB_REPOSITORY",
                hint="use the owner/name form, e.g. octo-org/refund-agent",
            )
        self.api_url = api_url.rstrip("/")
        self.repository = repository
        self._token = token
        self._session = session if session is not None else requests.Session()
        self._sleep = sleep
        self._clock = clock
        self._retries = retries
        self._headers = {
            "Authorization": f"Bearer {token}",
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": API_VERSION,
            "User-Agent": f"passk-action/{__version__}",
        }

    def __repr__(self) -> str:
        # The token must not leak through a repr in a log or a traceback.
        return f"GitHubClient(api_url={self.api_url!r}, repository={self.repository!r})"

    # -- issue comments ---------------------------------------------------------

    def list_issue_comments(self, issue_number: int) -> list[dict[str, Any]]:
        """Every comment of an issue or pull request, oldest first, across all pages."""
        return self._paginate(
            f"/repos/{self.repository}/issues/{issue_number}/comments", "comments"
        )

    def create_issue_comment(self, issue_number: int, body: str) -> dict[str, Any]:
        path = f"/repos/{self.repository}/issues/{issue_number}/comments"
        return self._object("POST", path, "comments", json={"body": body})

    def update_issue_comment(self, comment_id: int, body: str) -> dict[str, Any]:
        path = f"/repos/{self.repository}/issues/comments/{comment_id}"
        return self._object("PATCH", path, "comments", json={"body": body})

    def delete_issue_comment(self, comment_id: int) -> None:
        path = f"/repos/{self.repository}/issues/comments/{comment_id}"
        self._request("DELETE", self.api_url + path, "comments")

    # -- checks and statuses -------------------------------------------------------

    def create_check_run(
        self,
        *,
        name: str,
        head_sha: str,
        conclusion: Conclusion | None,
        title: str,
        summary: str,
        text: str | None = None,
        annotations: Sequence[Mapping[str, Any]] = (),
        details_url: str | None = None,
    ) -> dict[str, Any]:
        """A check run: completed with ``conclusion``, or ``in_progress`` when it is None.

        Summary and text are cut to GitHub's limit with a note; at most
        :data:`ANNOTATIONS_PER_REQUEST` annotations go in one request (send the
        rest with :meth:`update_check_run`).
        """
        body: dict[str, Any] = {
            "name": name,
            "head_sha": head_sha,
            "output": _check_output(title, summary, text, annotations),
        }
        if conclusion is None:
            body["status"] = "in_progress"
        else:
            body["status"] = "completed"
            body["conclusion"] = conclusion
        if details_url is not None:
            body["details_url"] = details_url
        return self._object("POST", f"/repos/{self.repository}/check-runs", "checks", json=body)

    def list_check_runs(
        self, *, head_sha: str, name: str, status: Literal["queued", "in_progress", "completed"]
    ) -> list[dict[str, Any]]:
        """The check runs named ``name`` on ``head_sha`` in ``status``, newest first, every run
        (``filter=all``, not only the latest of each name); the first 100 of them."""
        query = urlencode({"check_name": name, "status": status, "filter": "all", "per_page": 100})
        path = f"/repos/{self.repository}/commits/{head_sha}/check-runs?{query}"
        runs = self._object("GET", path, "checks").get("check_runs")
        if not isinstance(runs, list):
            raise GitHubError(
                "expected a list of check runs",
                where=self._where("GET", self.api_url + path),
                hint="check that api-url points at the GitHub REST API",
            )
        return [run for run in runs if isinstance(run, dict)]

    def update_check_run(
        self,
        check_run_id: int,
        *,
        conclusion: Conclusion | None,
        title: str,
        summary: str,
        text: str | None = None,
        annotations: Sequence[Mapping[str, Any]] = (),
    ) -> dict[str, Any]:
        """Complete a check run (or only add output when ``conclusion`` is None).

        GitHub appends the annotations of each update to the run's, so more
        than :data:`ANNOTATIONS_PER_REQUEST` go in several updates.
        """
        body: dict[str, Any] = {"output": _check_output(title, summary, text, annotations)}
        if conclusion is not None:
            body["status"] = "completed"
            body["conclusion"] = conclusion
        return self._object(
            "PATCH",
            f"/repos/{self.repository}/check-runs/{int(check_run_id)}",
            "checks",
            json=body,
        )

    def create_commit_status(
        self, *, sha: str, state: StatusState, context: str, description: str
    ) -> dict[str, Any]:
        """A commit status; the description is shortened to 140 characters."""
        if len(description) > STATUS_DESCRIPTION_LIMIT:
            description = description[: STATUS_DESCRIPTION_LIMIT - 1] + "…"
        body = {"state": state, "context": context, "description": description}
        return self._object(
            "POST", f"/repos/{self.repository}/statuses/{sha}", "statuses", json=body
        )

    # -- pull requests ------------------------------------------------------------------

    def get_pull(self, number: int) -> dict[str, Any]:
        return self._object("GET", f"/repos/{self.repository}/pulls/{number}", "pulls")

    def list_issue_events(self, issue_number: int) -> list[dict[str, Any]]:
        """Every event of an issue or pull request (who labeled it, when), oldest first."""
        return self._paginate(f"/repos/{self.repository}/issues/{issue_number}/events", "events")

    def collaborator_permission(self, login: str) -> dict[str, Any]:
        """``login``'s permission on the repository: ``permission`` and ``role_name``."""
        return self._object(
            "GET",
            f"/repos/{self.repository}/collaborators/{quote(login, safe='')}/permission",
            "collaborators",
        )

    def list_pull_files(self, number: int) -> list[dict[str, Any]]:
        """The files a pull request changes (GitHub lists at most 3,000)."""
        return self._paginate(f"/repos/{self.repository}/pulls/{number}/files", "pulls")

    # -- plumbing --------------------------------------------------------------------

    def _where(self, method: str, url: str) -> str:
        path = urlsplit(url).path
        prefix = urlsplit(self.api_url).path
        if prefix and path.startswith(prefix):
            path = path[len(prefix) :]  # GitHub Enterprise serves the API under /api/v3
        return f"GitHub API {method} {path}"

    def _object(
        self, method: str, path: str, kind: str, *, json: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        url = self.api_url + path
        response = self._request(method, url, kind, json=json)
        data = self._decode(method, url, response)
        if not isinstance(data, dict):
            raise GitHubError(
                f"expected a JSON object, got {type(data).__name__}",
                where=self._where(method, url),
                hint="check that api-url points at the GitHub REST API",
                status=response.status_code,
            )
        return data

    def _paginate(self, path: str, kind: str) -> list[dict[str, Any]]:
        url: str | None = self.api_url + path + "?per_page=100"
        items: list[dict[str, Any]] = []
        seen: set[str] = set()
        api_origin = urlsplit(self.api_url)[:2]
        while url is not None:
            if url in seen or len(seen) >= _MAX_PAGES:
                raise GitHubError(
                    "the pagination Link header loops or never ends",
                    where=self._where("GET", url),
                    hint="check that api-url points at the GitHub REST API, not a proxy",
                )
            seen.add(url)
            response = self._request("GET", url, kind)
            page = self._decode("GET", url, response)
            if not isinstance(page, list) or not all(isinstance(i, dict) for i in page):
                raise GitHubError(
                    "expected a JSON array of objects",
                    where=self._where("GET", url),
                    hint="check that api-url points at the GitHub REST API",
                    status=response.status_code,
                )
            items.extend(page)
            match = _LINK_NEXT.search(response.headers.get("Link", ""))
            url = match.group(1) if match else None
            if url is not None and urlsplit(url)[:2] != api_origin:
                # Following a link elsewhere would send our token to another host.
                raise GitHubError(
                    "the next-page link points at another host",
                    where=self._where("GET", self.api_url + path),
                    hint=f"check that api-url ({self.api_url}) is the API host GitHub links to",
                )
        return items

    def _decode(self, method: str, url: str, response: requests.Response) -> Any:
        try:
            return response.json()
        except ValueError as exc:
            snippet = " ".join(response.text[:80].split())
            raise GitHubError(
                f"HTTP {response.status_code} answer is not JSON (starts {snippet!r})",
                where=self._where(method, url),
                hint="check that api-url points at the GitHub REST API (e.g. https://api.github.com)",
                status=response.status_code,
            ) from exc

    def _request(
        self, method: str, url: str, kind: str, *, json: dict[str, Any] | None = None
    ) -> requests.Response:
        where = self._where(method, url)
        budget = self._retries
        waited = 0.0
        backoff_steps = 0
        for attempt in range(1, budget.max_attempts + 1):
            try:
                response = self._session.request(
                    method, url, headers=self._headers, json=json, timeout=budget.timeout_s
                )
            except (requests.ConnectionError, requests.Timeout) as exc:
                retry = _Retry(
                    f"connection failed ({type(exc).__name__})", None, budget.server_error_backoff_s
                )
                last_status: int | None = None
                cause: BaseException | None = exc
            except requests.RequestException as exc:
                raise GitHubError(
                    f"request failed: {self._scrub(type(exc).__name__ + ': ' + str(exc))}",
                    where=where,
                    hint="check api-url",
                ) from exc
            else:
                if response.ok:
                    return response
                retry_or_none = self._retry_for(response)
                if retry_or_none is None:
                    raise self._error(where, kind, response)
                retry, last_status, cause = retry_or_none, response.status_code, None
            if attempt == budget.max_attempts:
                raise GitHubError(
                    f"gave up after {attempt} attempts: {retry.reason}",
                    where=where,
                    hint=_give_up_hint(last_status),
                    status=last_status,
                ) from cause
            if retry.wait_s is not None:
                wait = max(0.0, retry.wait_s)
            else:
                wait = retry.backoff_base_s * 2**backoff_steps
                backoff_steps += 1
            if waited + wait > budget.max_retry_wait_s:
                raise GitHubError(
                    f"{retry.reason}; retrying would need {wait:.0f} s more wait, past the "
                    f"{budget.max_retry_wait_s:.0f} s retry budget (already waited {waited:.0f} s)",
                    where=where,
                    hint="re-run the job later; GitHub asks clients not to retry early",
                    status=last_status,
                ) from cause
            self._sleep(wait)
            waited += wait
        raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover

    def _retry_for(self, response: requests.Response) -> _Retry | None:
        status = response.status_code
        headers = response.headers
        message = _message(response)
        retry_after = retry_after_s(headers.get("retry-after"), self._clock())
        exhausted = headers.get("x-ratelimit-remaining") == "0"
        secondary = bool(_SECONDARY_LIMIT.search(message))
        if status >= 500:
            reason, base = f"HTTP {status} from GitHub", self._retries.server_error_backoff_s
        elif status == 429 or (
            status == 403 and (secondary or exhausted or retry_after is not None)
        ):
            label = "secondary" if secondary else "primary" if exhausted else "a"
            reason = f"HTTP {status}: {label} rate limit exceeded"
            base = self._retries.rate_limit_backoff_s
        else:
            return None
        if retry_after is not None:
            return _Retry(reason, retry_after, base)
        if exhausted:
            reset = headers.get("x-ratelimit-reset", "")
            if reset.isdigit():
                # +1 s: the reset is whole epoch seconds and our clock may lag GitHub's.
                return _Retry(reason, int(reset) - self._clock() + 1.0, base)
        return _Retry(reason, None, base)

    def _error(self, where: str, kind: str, response: requests.Response) -> GitHubError:
        status = response.status_code
        message = self._scrub(_message(response)) or response.reason or "no message"
        detail = _validation_details(response)
        if detail:
            message = f"{message}: {self._scrub(detail)}"
        if status == 401:
            hint = "the token is missing, expired or revoked; check the github-token input"
        elif status == 403:
            hint = (
                f"the token may not do this: grant {_PERMISSION[kind]} in the workflow; "
                "pull requests from forks get a read-only token"
            )
        elif status == 404:
            hint = (
                f"check the repository ({self.repository}) and the number; GitHub also answers "
                "404 when the token cannot see a private repository"
            )
        elif status == 422:
            hint = "GitHub rejected the request body; this is likely a passk bug, please report it"
        else:
            hint = "see https://www.githubstatus.com and re-run the job"
        return GitHubError(f"HTTP {status}: {message}", where=where, hint=hint, status=status)

    def _scrub(self, text: str) -> str:
        return text.replace(self._token, "***")


def _check_output(
    title: str, summary: str, text: str | None, annotations: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    if len(annotations) > ANNOTATIONS_PER_REQUEST:
        raise ValueError(
            f"{len(annotations)} annotations in one request; GitHub takes at most "
            f"{ANNOTATIONS_PER_REQUEST}"
        )
    output: dict[str, Any] = {
        "title": title,
        "summary": fit_comment(summary, CHECK_OUTPUT_LIMIT, CHECK_TRUNCATED_NOTE),
    }
    if text is not None:
        output["text"] = fit_comment(text, CHECK_OUTPUT_LIMIT, CHECK_TRUNCATED_NOTE)
    if annotations:
        output["annotations"] = [dict(a) for a in annotations]
    return output


def _message(response: requests.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        return ""
    if isinstance(data, dict) and isinstance(data.get("message"), str):
        return str(data["message"])
    return ""


def _validation_details(response: requests.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        return ""
    errors = data.get("errors") if isinstance(data, dict) else None
    if not isinstance(errors, list):
        return ""
    parts = []
    for error in errors[:3]:
        if isinstance(error, dict):
            parts.append(str(error.get("message") or error.get("code") or error))
        else:
            parts.append(str(error))
    return "; ".join(parts)


def _give_up_hint(status: int | None) -> str:
    """What to do after the retries ran out, by what kept failing.

    A refused connection or a timeout is not rate limiting: it is the
    network or a wrong api-url, and saying "rate limit" sends people the
    wrong way.
    """
    if status is None:
        return (
            "GitHub's API could not be reached: check api-url (GITHUB_API_URL) and the "
            "runner's network, then re-run the job"
        )
    if status >= 500:
        return "GitHub answered with server errors; re-run the job later"
    return "GitHub is rate-limiting this token; re-run the job later"
