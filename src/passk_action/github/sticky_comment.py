"""passk's sticky comment on a pull request: find it, post it, and the record it hides.

Find: passk's own comments for a step (``our_comments``, the newest one's
record, ``find_record``).  Post: ``upsert_sticky_comment`` edits passk's
one comment or creates it, in the mode the input ``comment`` asks for
(``comment_mode``), and ``post_record_parts`` keeps the record's overflow in
part comments.  Each passk step of a workflow has comments of its own, told
apart by the markers its key gives (``StepKey``).  These never crash the
action on a refused write: a pull request from a fork gets a read-only token
(FACTS.md E1/E2), and losing the comment must not lose the gate result; they
return what happened.

The record is the gate record hidden at the end of the sticky comment: no
shopping by re-running.

``<!-- passk:record v1 <base64 of gzip of compact JSON> -->`` says which
head commit (and its tree) and base commit were gated, on which dataset and
settings, by which candidate agent, what the gate decided, and a digest of
the candidate's recorded attempts.  When it fits (40,000 characters encoded) it also holds
those attempts and the baseline's top-up and confirmation attempts, so a
re-run of the same commit replays them instead of asking the agent again:
the decision is reproduced rather than re-rolled.  The record is matched on
the head's *tree*, not its commit: an empty commit, an amend or a
force-push of identical content is the same code, so it gets the same
verdicts instead of a fresh roll.  Records written before the tree was kept
(no ``head_tree``) still match by head commit only.

Reading is defensive: a damaged, foreign or oversized record raises
:class:`RecordError`, which the caller turns into a warning and ignores.
Only comments written by the login passk posts as count (input
``comment-author``, ``github-actions[bot]`` for the job token): anyone can
paste a record into a comment of their own, and any installed app can too.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import hashlib
import json
import re
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from ..core.model import Attempt, EvalSettings, Run, canonical_json, sha256_hex
from ..core.result import CompareResult
from ..errors import ArtifactError, ConfigError, GitHubError
from ..store.artifact import attempt_from_json, attempt_to_json
from ..truncate import COMMENT_LIMIT, fit_comment

if TYPE_CHECKING:
    from .client import GitHubClient

RECORD_VERSION = 1
RECORD_PREFIX = "<!-- passk:record v1 "
RECORD_SUFFIX = " -->"
ATTEMPTS_LIMIT = 40000
"""Encoded size up to which the record carries the attempts themselves."""
_MAX_DECOMPRESSED = 16 * 1024 * 1024
_RECORD = re.compile(r"<!-- passk:record v(\d+) ([A-Za-z0-9+/=]*) -->")


class RecordError(ArtifactError):
    """A record that cannot be trusted or read; ignored with a warning."""


@dataclass(frozen=True)
class RecordedApproval:
    """Who approved the protected changes of which head, against which base."""

    label: str
    login: str
    role: str
    """GitHub's ``role_name`` (admin, maintain, write, or a custom role)."""
    head_sha: str
    base_ref: str
    event_id: int
    """The id of the ``labeled`` event on GitHub: removing and adding the label makes a new one."""

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "login": self.login,
            "role": self.role,
            "head_sha": self.head_sha,
            "base_ref": self.base_ref,
            "event_id": self.event_id,
        }


def _approval(doc: Any) -> RecordedApproval:
    if not isinstance(doc, dict):
        raise RecordError("the record's 'approval' is not an object")
    texts = {k: _field(doc, k, str) for k in ("label", "login", "role", "head_sha", "base_ref")}
    return RecordedApproval(**texts, event_id=_field(doc, "event_id", int))


@dataclass(frozen=True)
class GateRecord:
    head_sha: str
    base_sha: str
    dataset_digest: str
    settings: Mapping[str, Any]
    candidate_agent: str
    passed: bool
    failures: int
    attempts_digest: str
    candidate_attempts: tuple[Attempt, ...] | None = None
    """None when the attempts did not fit in the comment."""
    baseline_attempts: tuple[Attempt, ...] | None = None
    """The baseline's top-up and confirmation attempts (not those of the committed artifact)."""
    head_tree: str | None = None
    """The head commit's tree hash; None in records written before it was kept."""
    step: str | None = None
    """The id of the passk step that wrote it (``StepKey.id``); None in older records."""
    parts: int = 0
    """How many part comments hold the full record (0: this comment holds all of it)."""
    parts_sha256: str | None = None
    """sha256 of the full record's payload, which the parts hold in order."""
    approval: RecordedApproval | None = None
    """The allow label's approval this run counted; None in older records and without one."""

    def matches(
        self,
        head_sha: str,
        dataset_digest: str,
        settings: EvalSettings,
        *,
        head_tree: str | None,
        step: str | None = None,
        default_step: bool = True,
        candidate_agent: str | None = None,
    ) -> bool:
        """Whether this record gated the same content on the same dataset and settings,
        for the same step and the same candidate agent.

        Same content means the same tree when both sides know it, else the
        same commit (a commit names exactly one tree, so that is never looser).
        A record without a step (written before steps were keyed) counts
        only for the default step; ``candidate_agent`` None skips that check
        (a gate of a recorded run that names no agent).
        """
        if self.head_tree is not None and head_tree is not None:
            same_content = self.head_tree == head_tree
        else:
            same_content = self.head_sha == head_sha
        same_step = self.step == step if self.step is not None else default_step
        same_agent = candidate_agent is None or self.candidate_agent == candidate_agent
        return (
            same_content
            and same_step
            and same_agent
            and self.dataset_digest == dataset_digest
            and dict(self.settings) == settings.to_json()
        )


def attempts_digest(attempts: Iterable[Attempt]) -> str:
    """sha256 of the canonical JSON list of the attempts, in (row, number) order."""
    ordered = sorted(attempts, key=lambda a: (a.row_id, a.number))
    return sha256_hex(canonical_json([attempt_to_json(a) for a in ordered]))


def baseline_extras(result_baseline: Run, committed: Run) -> tuple[Attempt, ...]:
    """The baseline attempts made during the comparison, not read from the committed artifact."""
    committed_rows = {r.id: r.input_digest for r in committed.rows}
    current = {r.id: r.input_digest for r in result_baseline.rows}
    reused = {
        (a.row_id, a.number)
        for a in committed.attempts
        if a.row_id in current and committed_rows.get(a.row_id) == current[a.row_id]
    }
    return tuple(a for a in result_baseline.attempts if (a.row_id, a.number) not in reused)


def _document(record: GateRecord, with_attempts: bool) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "v": RECORD_VERSION,
        "head_sha": record.head_sha,
        "base_sha": record.base_sha,
        "dataset_digest": record.dataset_digest,
        "settings": dict(record.settings),
        "candidate_agent": record.candidate_agent,
        "passed": record.passed,
        "failures": record.failures,
        "attempts_digest": record.attempts_digest,
    }
    if record.head_tree is not None:
        doc["head_tree"] = record.head_tree
    if record.step is not None:
        doc["step"] = record.step
    if record.approval is not None:
        doc["approval"] = record.approval.to_json()
    if not with_attempts and record.parts:
        doc["parts"] = record.parts
        doc["parts_sha256"] = record.parts_sha256
    if with_attempts and record.candidate_attempts is not None:
        doc["candidate_attempts"] = [attempt_to_json(a) for a in record.candidate_attempts]
        doc["baseline_attempts"] = [attempt_to_json(a) for a in record.baseline_attempts or ()]
    return doc


def _encode(doc: Mapping[str, Any]) -> str:
    raw = json.dumps(doc, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    packed = gzip.compress(raw.encode("utf-8"), compresslevel=9, mtime=0)
    return RECORD_PREFIX + base64.b64encode(packed).decode("ascii") + RECORD_SUFFIX


def encode_record(record: GateRecord, limit: int = ATTEMPTS_LIMIT) -> str:
    """The hidden comment; the attempts are left out when the whole would exceed ``limit``."""
    text = _encode(_document(record, with_attempts=True))
    if len(text) <= limit or record.candidate_attempts is None:
        return text
    return _encode(_document(record, with_attempts=False))


PART_SIZE = 60000
"""Characters of the record's payload per part comment (GitHub takes 65,536 per comment)."""
_PART = re.compile(r"<!-- passk:record-part ([0-9a-f]{16}) (\d+)/(\d+) ([A-Za-z0-9+/=]*) -->")


def split_record(
    record: GateRecord, limit: int | None = None, part_size: int | None = None
) -> tuple[str, tuple[str, ...]]:
    """The record for the sticky comment, and the part comments that carry the rest.

    When the whole record fits in ``limit`` it is one hidden comment and there
    are no parts.  Otherwise the sticky comment keeps the record without its
    attempts, naming how many parts hold the full one and its sha256; each part
    is ``<!-- passk:record-part <sha256[:16]> i/n <payload slice> -->``.  So a
    re-run of a large dataset replays its attempts too instead of asking again.
    """
    limit = ATTEMPTS_LIMIT if limit is None else limit
    part_size = PART_SIZE if part_size is None else part_size
    full = _encode(_document(record, with_attempts=True))
    if len(full) <= limit or record.candidate_attempts is None:
        return full, ()
    payload = full[len(RECORD_PREFIX) : -len(RECORD_SUFFIX)]
    digest = sha256_hex(payload.encode("ascii")).removeprefix("sha256:")
    chunks = [payload[i : i + part_size] for i in range(0, len(payload), part_size)]
    n = len(chunks)
    head = _encode(
        _document(
            replace(record, parts=n, parts_sha256=digest),
            with_attempts=False,
        )
    )
    parts = tuple(
        f"<!-- passk:record-part {digest[:16]} {i}/{n} {chunk} -->"
        for i, chunk in enumerate(chunks, start=1)
    )
    return head, parts


def join_parts(
    record: GateRecord, comments: Sequence[Mapping[str, Any]], author: str
) -> GateRecord:
    """The full record from its part comments by ``author``; :class:`RecordError` if incomplete."""
    if not record.parts or record.parts_sha256 is None:
        return record
    found: dict[int, str] = {}
    for comment in comments:
        if login_of(comment) != author:
            continue
        for prefix, index, count, chunk in _PART.findall(str(comment.get("body") or "")):
            if prefix == record.parts_sha256[:16] and int(count) == record.parts:
                found[int(index)] = chunk
    missing = [i for i in range(1, record.parts + 1) if i not in found]
    if missing:
        raise RecordError(
            f"{len(missing)} of the record's {record.parts} part comment(s) are missing"
        )
    payload = "".join(found[i] for i in range(1, record.parts + 1))
    if sha256_hex(payload.encode("ascii")).removeprefix("sha256:") != record.parts_sha256:
        raise RecordError("the record's part comments do not match its sha256 (edited?)")
    full = decode_record(RECORD_PREFIX + payload + RECORD_SUFFIX)
    if full.attempts_digest != record.attempts_digest or full.head_sha != record.head_sha:
        raise RecordError("the record's part comments belong to another record")
    return replace(full, parts=record.parts, parts_sha256=record.parts_sha256)


def record_for(
    result: CompareResult,
    *,
    head_sha: str,
    base_sha: str,
    committed_baseline: Run,
    head_tree: str | None = None,
    step: str | None = None,
    approval: RecordedApproval | None = None,
) -> GateRecord:
    """The record of one gate decision; ``head_tree`` None when git could not name it."""
    candidate = result.candidate
    return GateRecord(
        head_sha=head_sha,
        base_sha=base_sha,
        dataset_digest=candidate.dataset_digest,
        settings=candidate.settings.to_json(),
        candidate_agent=candidate.agent.description,
        passed=result.gate.passed,
        failures=len(result.gate.failures),
        attempts_digest=attempts_digest(candidate.attempts),
        candidate_attempts=candidate.attempts,
        baseline_attempts=baseline_extras(result.baseline, committed_baseline),
        head_tree=head_tree,
        step=step,
        approval=approval,
    )


def decode_record(text: str) -> GateRecord:
    """Parse the record found in ``text`` (a comment body); :class:`RecordError` if unusable."""
    found = _RECORD.findall(text)
    if not found:
        raise RecordError("no passk record in the comment")
    if len(found) > 1:
        raise RecordError("the comment holds more than one passk record")
    version, payload = found[0]
    if int(version) != RECORD_VERSION:
        raise RecordError(f"record version {version} is not one this passk reads")
    try:
        packed = base64.b64decode(payload, validate=True)
        inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        raw = inflater.decompress(packed, _MAX_DECOMPRESSED)
        if inflater.unconsumed_tail:
            raise RecordError("the record is too large once decompressed")
        doc = json.loads(raw.decode("utf-8"))
    except (binascii.Error, zlib.error, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise RecordError(f"the record cannot be decoded ({type(exc).__name__})") from exc
    return _from_document(doc)


def _field(doc: Mapping[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
    value = doc.get(key)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise RecordError(f"the record's {key!r} is missing or of the wrong type")
    return value


def _attempts(doc: Mapping[str, Any], key: str) -> tuple[Attempt, ...]:
    items = _field(doc, key, list)
    try:
        attempts = tuple(attempt_from_json(a, f"record {key}[{i}]") for i, a in enumerate(items))
    except ArtifactError as exc:
        raise RecordError(f"the record holds an invalid attempt: {exc.one_line()}") from exc
    if len({(a.row_id, a.number) for a in attempts}) != len(attempts):
        raise RecordError(f"the record's {key} repeat an attempt")
    return attempts


def _from_document(doc: Any) -> GateRecord:
    if not isinstance(doc, dict) or doc.get("v") != RECORD_VERSION:
        raise RecordError("the record is not a passk v1 record")
    settings = _field(doc, "settings", dict)
    candidate: tuple[Attempt, ...] | None = None
    baseline: tuple[Attempt, ...] | None = None
    digest = _field(doc, "attempts_digest", str)
    if "candidate_attempts" in doc:
        candidate = _attempts(doc, "candidate_attempts")
        baseline = _attempts(doc, "baseline_attempts")
        if attempts_digest(candidate) != digest:
            raise RecordError("the record's attempts do not match its digest (edited?)")
    # Optional: records written before the tree was kept have none.
    head_tree = _field(doc, "head_tree", str) if "head_tree" in doc else None
    step = _field(doc, "step", str) if "step" in doc else None
    parts = _field(doc, "parts", int) if "parts" in doc else 0
    parts_sha256 = _field(doc, "parts_sha256", str) if "parts" in doc else None
    approval = _approval(doc["approval"]) if "approval" in doc else None
    return GateRecord(
        head_sha=_field(doc, "head_sha", str),
        base_sha=_field(doc, "base_sha", str),
        dataset_digest=_field(doc, "dataset_digest", str),
        settings=settings,
        candidate_agent=_field(doc, "candidate_agent", str),
        passed=_field(doc, "passed", bool),
        failures=_field(doc, "failures", int),
        attempts_digest=digest,
        candidate_attempts=candidate,
        baseline_attempts=baseline,
        head_tree=head_tree,
        step=step,
        parts=parts,
        parts_sha256=parts_sha256,
        approval=approval,
    )


def login_of(comment: Mapping[str, Any]) -> str | None:
    user = comment.get("user")
    login = user.get("login") if isinstance(user, dict) else None
    return login if isinstance(login, str) else None


def our_comments(
    comments: Sequence[Mapping[str, Any]], marker: str, author: str
) -> list[Mapping[str, Any]]:
    """Comments that start with ``marker`` and were written by ``author``, oldest first."""
    mine = [
        c for c in comments if str(c.get("body") or "").startswith(marker) and login_of(c) == author
    ]
    return sorted(mine, key=lambda c: (str(c.get("created_at", "")), _id(c)))


def _id(comment: Mapping[str, Any]) -> int:
    value = comment.get("id")
    return value if isinstance(value, int) else 0


def find_record(
    comments: Sequence[Mapping[str, Any]], marker: str, author: str
) -> tuple[GateRecord | None, list[str]]:
    """The record of passk's newest comment by ``author``, and warnings about others ignored."""
    warnings: list[str] = []
    for comment in comments:
        body = str(comment.get("body") or "")
        login = login_of(comment)
        if RECORD_PREFIX.strip() in body and login != author:
            warnings.append(
                f"ignored a passk record in comment {_id(comment)} by {login or 'someone'}: "
                f"only comments by {author} (input `comment-author`) are trusted"
            )
    mine = our_comments(comments, marker, author)
    if not mine:
        return None, warnings
    newest = mine[-1]
    try:
        record = decode_record(str(newest.get("body") or ""))
    except RecordError as exc:
        warnings.append(f"ignored the record in passk's comment {_id(newest)}: {exc.message}")
        return None, warnings
    try:
        return join_parts(record, comments, author), warnings
    except RecordError as exc:
        # The verdict stands (a failure stays failed); only the attempts are lost.
        warnings.append(
            f"the attempts of the record in passk's comment {_id(newest)} cannot be read: "
            f"{exc.message}"
        )
        return record, warnings


# -- the comment: find, post, and the parts of a record too large for it ------------------

MARKER = "<!-- passk:sticky-comment -->"
JOB_TOKEN_LOGIN = "github-actions[bot]"
"""Who posts with the job's ``GITHUB_TOKEN`` (FACTS.md G1)."""
_LOGIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?")


def is_login(text: str) -> bool:
    """Whether ``text`` is spelled as a GitHub login (a user's, or an app's ``name[bot]``)."""
    return _LOGIN.fullmatch(text) is not None


COMMENT_MODES = ("update", "new", "off")


LEGACY_MARKER = MARKER
"""The marker of passk's comment before steps were keyed; still the default step's."""


@dataclass(frozen=True)
class StepKey:
    """Which passk step of a workflow this is: its comment, record and check are its own.

    Two passk steps in one job (two configs, or one config from two folders)
    must never read or overwrite each other's comment or record.  The key is
    the config path and working directory (as the workspace names them) and
    the check name.
    """

    config: str
    working_directory: str
    check_name: str

    @property
    def is_default(self) -> bool:
        return (self.config, self.working_directory, self.check_name) == (
            "passk.yml",
            ".",
            "passk",
        )

    @property
    def id(self) -> str:
        """12 hex digits naming the step in its marker and record."""
        doc = [self.config, self.working_directory, self.check_name]
        return hashlib.sha256(json.dumps(doc).encode("utf-8")).hexdigest()[:12]

    @property
    def marker(self) -> str:
        """The first line of this step's comment (the default step keeps the old marker)."""
        if self.is_default:
            return LEGACY_MARKER
        return f"<!-- passk:sticky-comment step={self.id} -->"

    @property
    def parts_marker(self) -> str:
        """The first line of the comments holding this step's record when it is too large."""
        return f"<!-- passk:record-parts step={self.id} -->"


@dataclass(frozen=True)
class CommentOutcome:
    """What happened to the sticky comment."""

    action: Literal["created", "updated", "skipped", "failed"]
    comment_id: int | None = None
    url: str | None = None
    error: str | None = None
    status: int | None = None
    author: str | None = None
    """The login GitHub says wrote the comment."""


def _marked(
    comments: list[dict[str, Any]], marker: str, author: str | None
) -> list[dict[str, Any]]:
    found = [
        c
        for c in comments
        if marker in str(c.get("body") or "")
        and (author is None or (c.get("user") or {}).get("login") == author)
    ]
    # Comment ids grow with time on GitHub; the id breaks ties between equal timestamps.
    return sorted(found, key=lambda c: (str(c.get("created_at", "")), int(c.get("id", 0))))


def find_sticky_comment(
    client: GitHubClient, issue_number: int, marker: str = MARKER, *, author: str | None = None
) -> dict[str, Any] | None:
    """The newest comment carrying ``marker`` (optionally written by ``author``), or None.

    Pass ``author`` (e.g. ``github-actions[bot]``) when the comment's content is
    trusted later: anyone can paste the marker into a comment of their own.
    """
    marked = _marked(client.list_issue_comments(issue_number), marker, author)
    return marked[-1] if marked else None


def upsert_sticky_comment(
    client: GitHubClient,
    issue_number: int,
    body: str,
    mode: str,
    marker: str = MARKER,
    *,
    author: str | None = None,
    limit: int = COMMENT_LIMIT,
) -> CommentOutcome:
    """Post ``body`` as passk's one comment on the pull request.

    ``update``: edit the newest marked comment (searching every page), or create
    one; older marked duplicates are left alone.  ``new``: delete every marked
    comment, then create one.  ``off``: do nothing.  A refused call (e.g. 403 on
    a fork's read-only token) is reported as ``failed``, not raised.
    """
    if mode not in COMMENT_MODES:
        raise ConfigError(
            f"unknown comment mode {mode!r}",
            where="comment-mode",
            hint="use one of: " + ", ".join(COMMENT_MODES),
        )
    if mode == "off":
        return CommentOutcome("skipped")
    if marker not in body:
        body = f"{marker}\n{body}"
    body = fit_comment(body, limit)
    try:
        marked = _marked(client.list_issue_comments(issue_number), marker, author)
        if mode == "update" and marked:
            comment = client.update_issue_comment(int(marked[-1]["id"]), body)
            return _outcome("updated", comment)
        if mode == "new":
            for old in marked:
                client.delete_issue_comment(int(old["id"]))
        return _outcome("created", client.create_issue_comment(issue_number, body))
    except GitHubError as exc:
        return CommentOutcome("failed", error=str(exc), status=exc.status)


def _outcome(action: Literal["created", "updated"], comment: dict[str, Any]) -> CommentOutcome:
    comment_id = comment.get("id")
    url = comment.get("html_url")
    user = comment.get("user")
    login = user.get("login") if isinstance(user, dict) else None
    return CommentOutcome(
        action,
        comment_id=comment_id if isinstance(comment_id, int) else None,
        url=url if isinstance(url, str) else None,
        author=login if isinstance(login, str) else None,
    )


def comment_mode(
    mode: str,
    passed: bool,
    comments: Sequence[Mapping[str, Any]],
    author: str,
    marker: str = MARKER,
) -> str:
    """The comment mode this run uses: ``changes`` becomes ``update`` or ``off``.

    ``changes`` comments when the gate fails, and otherwise only edits passk's
    earlier comment (a failure it now marks resolved, or a pass it refreshes);
    a pull request that never failed gets no comment at all.
    """
    if mode != "changes":
        return mode
    if not passed or our_comments(comments, marker, author):
        return "update"
    return "off"


def without_record(body: str) -> str:
    """The comment body minus the hidden record (check summaries need no machine data)."""
    start = body.find(RECORD_PREFIX)
    return body if start < 0 else body[:start].rstrip() + "\n"


def kept_record(comments: Sequence[Mapping[str, Any]], marker: str, author: str) -> str | None:
    """The record in passk's own comment for this step, as it stands, to carry over."""
    ours = our_comments(comments, marker, author)
    if not ours:
        return None
    body = str(ours[-1].get("body") or "")
    start = body.find(RECORD_PREFIX)
    end = body.find("-->", start)
    return body[start : end + 3] if start >= 0 and end >= 0 else None


PART_NOTE = (
    "<sub>passk keeps part {i} of {n} of its record of this pull request's verdicts here, "
    "so that re-running the job replays them; please leave this comment alone.</sub>"
)


def post_record_parts(
    client: GitHubClient, pr_number: int, parts: Sequence[str], marker: str, author: str
) -> None:
    """Make passk's part comments for this step hold ``parts``: edit, add, delete the rest."""
    comments = client.list_issue_comments(pr_number)
    existing = sorted(
        (
            c
            for c in comments
            if str(c.get("body") or "").startswith(marker) and login_of(c) == author
        ),
        key=lambda c: int(c.get("id") or 0),
    )
    for i, part in enumerate(parts):
        body = f"{marker}\n{PART_NOTE.format(i=i + 1, n=len(parts))}\n{part}"
        if i < len(existing):
            if existing[i].get("body") != body:
                client.update_issue_comment(int(existing[i]["id"]), body)
        else:
            client.create_issue_comment(pr_number, body)
    for stale in existing[len(parts) :]:
        client.delete_issue_comment(int(stale["id"]))
