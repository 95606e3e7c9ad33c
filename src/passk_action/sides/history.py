"""Each row's history on the base branch, read from the git history of the baseline artifact.

Nothing new is stored: every commit that changed the committed artifact on
the branch's first-parent line holds one version of it, and each version is
one baseline measurement.  ``git log`` lists the commits, one ``git cat-file
--batch-check`` finds each version's blob, and one ``git cat-file --batch``
streams the blobs, each read once (a reverted baseline is the same blob) and
reduced at once to its summary (``core/history.py``).  Older artifacts read
as ``passk report`` reads them; a version that cannot be read is listed,
never fatal.  No agent runs and nothing is written.

Gate mode reads it from the pull request's base commit before any agent
runs, so nothing the pull request does can change the marks, and a re-run
reads the same history again.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from ..core.history import History, HistoryBuilder, VersionSummary, summarize_version
from ..errors import ArtifactError, PasskError
from ..store.blob import RunReader
from .gitrepo import GitRepo

HISTORY_DEPTH = 10
"""How many baselines the gate reads for its marks, and ``passk history`` by default."""


def read_history(
    repo: GitRepo, tip: str, artifact: str, *, last: int, branch: str | None
) -> History:
    """The last ``last`` readable versions of the git path ``artifact`` on ``tip``'s branch.

    Raises GitError when git cannot list the commits at all (``tip`` missing).
    """
    commits = repo.path_commits(tip, artifact)
    oids = repo.blob_ids([f"{sha}:{artifact}" for sha, _ in commits])
    versions = [(sha, date, oid) for (sha, date), oid in zip(commits, oids, strict=True) if oid]
    builder = HistoryBuilder(last)
    # A blob met again further down (a reverted baseline) keeps its summary until then.
    uses = Counter(oid for _, _, oid in versions)
    kept: dict[str, VersionSummary | str] = {}
    reader = RunReader()
    more = False
    # Asked for lazily, in order of first use: reading stops once the window is full.
    contents = repo.blobs(list(dict.fromkeys(oid for _, _, oid in versions)))
    try:
        for sha, date, oid in versions:
            if builder.full:
                more = True
                break
            summary = kept.get(oid)
            if summary is None:
                summary = _summary(reader, next(contents, None), oid, f"{artifact}@{sha[:7]}")
            uses[oid] -= 1
            if uses[oid]:
                kept[oid] = summary
            else:
                kept.pop(oid, None)
            if isinstance(summary, str):
                builder.skip(sha, summary)
            else:
                builder.add(sha, date, summary)
    finally:
        contents.close()
    return builder.build(branch=branch, artifact=artifact, more=more, shallow=repo.is_shallow())


def _summary(
    reader: RunReader, content: tuple[str, bytes] | None, oid: str, where: str
) -> VersionSummary | str:
    """The version's summary, or why it cannot be read (one line)."""
    if content is None or content[0] != oid:
        return f"{where}: git did not return its blob"
    try:
        return summarize_version(reader.read(content[1], where))
    except ArtifactError as exc:
        return exc.one_line()


def base_history(
    repo: GitRepo, tip: str, artifact: str, *, branch: str | None, last: int = HISTORY_DEPTH
) -> History:
    """:func:`read_history`, or a history that says why it could not be read: never raises."""
    try:
        return read_history(repo, tip, artifact, last=last, branch=branch)
    except PasskError as exc:
        return History(branch=branch, artifact=artifact, wanted=last, problem=exc.one_line())


def history_at(
    folder: Path, artifact: Path, ref: str = "HEAD", *, last: int = HISTORY_DEPTH
) -> History:
    """The history of ``artifact`` on the branch ``ref`` names, in the repository of ``folder``.

    For the CLI: ``HEAD`` is named by the checked-out branch.  Raises
    GitError outside a git repository or for a ref that names no commit.
    """
    repo = GitRepo.discover(folder)
    tip = repo.resolve(ref)
    branch = repo.current_branch() if ref == "HEAD" else ref
    return read_history(repo, tip, repo.relative(artifact), last=last, branch=branch)
