"""The git operations the action needs, through the ``git`` command.

Files of the pull request's base commit are read from git objects (never
checked out over the candidate); the base agent runs in an export of the
base commit's files to a temporary directory, always removed afterwards (so
does the candidate, when agents run as another user: ``exports.py``).
No git call runs a hook (``core.hooksPath=/dev/null``).  Every git call gets
``-c safe.directory=*``: in a container action the workspace belongs to
another user, and git would otherwise refuse to read it.
"""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit

from ..errors import GitError
from .tree import TreeFile, check_paths, make_read_only, write_files

BOT_NAME = "passk[bot]"
BOT_EMAIL = "passk[bot]@users.noreply.github.com"


def _one_line(text: str, limit: int = 300) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


@dataclass(frozen=True)
class GitEntry:
    """One path of a git tree: its mode (``100644``, ``100755``, ``120000``, …) and object."""

    mode: str
    oid: str

    @property
    def kind(self) -> str:
        """The mode in words, e.g. ``a symlink``."""
        return MODE_KINDS.get(self.mode, f"an entry of mode {self.mode}")


MODE_KINDS = {
    "100644": "a regular file",
    "100755": "an executable file",
    "120000": "a symlink",
    "160000": "a submodule",
    "040000": "a directory",
}
REGULAR_MODES = frozenset({"100644", "100755"})
NOT_IN_TREE = "a path that is not in the head commit (reached through a symlink, or untracked)"


@dataclass(frozen=True)
class ConfigEntry:
    """One git config entry and where git read it (``file:.git/config``, ``command line:``)."""

    origin: str
    key: str
    value: str

    def file(self, cwd: Path) -> Path | None:
        """The file holding the entry (relative origins are from ``cwd``); None if not a file."""
        kind, _, name = self.origin.partition(":")
        if kind != "file" or not name:
            return None
        return Path(os.path.normpath(cwd / name))


@dataclass(frozen=True)
class GitRepo:
    """A git checkout at ``root`` (its top level)."""

    root: Path

    @classmethod
    def discover(cls, start: Path) -> GitRepo:
        """The repository containing ``start``."""
        out = _git(start, ("rev-parse", "--show-toplevel"), what="find the git repository")
        return cls(Path(out.decode("utf-8").strip()).resolve())

    def run(
        self,
        args: Sequence[str],
        *,
        what: str,
        env: Mapping[str, str] | None = None,
        stdin: bytes | None = None,
        none_found: int | None = None,
    ) -> bytes:
        """git's stdout; exit code ``none_found`` (e.g. 1 for ``git config``) is empty output."""
        return _git(self.root, args, what=what, env=env, stdin=stdin, none_found=none_found)

    def relative(self, path: Path) -> str:
        """``path`` as git names it inside the repository (POSIX, relative to the root).

        Lexical: symlinks inside the checkout are *not* followed, because they
        are the pull request's to choose (``passk.yml -> lax.yml`` must not make
        the base's ``lax.yml`` the trusted config).  Only a prefix that leads
        to the checkout itself (e.g. a symlinked workspace) is resolved.
        """
        lexical = Path(os.path.normpath(os.path.abspath(path)))
        rel: Path | None = None
        for ancestor in (*reversed(lexical.parents), lexical):
            if ancestor == self.root or ancestor.resolve() == self.root:
                rel = lexical.relative_to(ancestor)
                break
        if rel is None:
            raise GitError(
                "is outside the git repository",
                where=str(path),
                hint=f"keep passk's files inside {self.root}",
            )
        return str(PurePosixPath(*rel.parts)) if rel.parts else "."

    def entry(self, sha: str, path: str) -> GitEntry | None:
        """The tree entry for git path ``path`` at ``sha``; None when the tree has none.

        A path through a symlinked directory has no entry: git stores the link,
        not what it points to.
        """
        out = self.run(
            ("--literal-pathspecs", "ls-tree", "-z", "--full-tree", sha, "--", path),
            what=f"list {path} at {sha[:12]}",
        )
        for item in out.split(b"\0"):
            meta, _, name = item.partition(b"\t")
            if name.decode("utf-8", errors="surrogateescape") == path:
                mode, _kind, oid = meta.decode("ascii").split(" ")
                return GitEntry(mode=mode, oid=oid)
        return None

    def has_commit(self, sha: str) -> bool:
        return self._has(f"{sha}^{{commit}}", "look up a commit")

    def _has(self, spec: str, what: str) -> bool:
        """Whether ``spec`` names an object of its kind in the checkout (``cat-file -e``)."""
        try:
            self.run(("cat-file", "-e", spec), what=what)
        except GitError:
            return False
        return True

    def show(self, sha: str, path: str) -> bytes | None:
        """The bytes of ``path`` at commit ``sha``, or None when the file is not there."""
        proc = subprocess.run(
            ["git", "-c", "safe.directory=*", "cat-file", "blob", f"{sha}:{path}"],
            cwd=self.root,
            capture_output=True,
            check=False,
        )
        if proc.returncode == 0:
            return proc.stdout
        if not self.has_commit(sha) and not self._has(f"{sha}^{{tree}}", "look up a tree"):
            raise GitError(
                f"commit {sha[:12]} is not in the checkout",
                where=str(self.root),
                hint="check out with `actions/checkout` and `fetch-depth: 0`",
            )
        return None

    def merge_tree(self, base: str, head: str) -> str:
        """The tree of ``head`` merged into ``base``, as a pull request's merge commit has it.

        Computed here from the two commits' objects (``git merge-tree
        --write-tree``, git 2.38 or later), so a job that must run none of the
        pull request's code reads what it would merge as git objects, whatever
        the checkout holds.  A conflict is an error: there is nothing to gate.
        """
        for sha, what in ((base, "base"), (head, "head")):
            if not self.has_commit(sha):
                raise GitError(
                    f"the pull request's {what} commit {sha[:12]} is not in the checkout",
                    where=str(self.root),
                    hint="check out the pull request's head commit with `fetch-depth: 0` "
                    "(`ref: ${{ github.event.workflow_run.head_sha }}` under workflow_run)",
                )
        proc = subprocess.run(
            ["git", "-c", "safe.directory=*", "merge-tree", "--write-tree", "--no-messages",
             base, head],
            cwd=self.root,
            capture_output=True,
            check=False,
        )  # fmt: skip
        first = proc.stdout.decode("utf-8", errors="replace").splitlines()[:1]
        if proc.returncode == 0 and first and len(first[0]) in (40, 64):
            return first[0]
        if proc.returncode == 1:
            raise GitError(
                f"the pull request's head {head[:12]} does not merge cleanly into its base "
                f"{base[:12]}: there is nothing to gate",
                where=str(self.root),
                hint="resolve the conflicts in the pull request (merge or rebase its base)",
            )
        raise GitError(
            f"cannot merge {head[:12]} into {base[:12]}: "
            + _one_line(proc.stderr.decode("utf-8", errors="replace")),
            where=str(self.root),
            hint="passk needs git 2.38 or later for `git merge-tree --write-tree`",
        )

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        proc = subprocess.run(
            ["git", "-c", "safe.directory=*", "merge-base", "--is-ancestor", ancestor, descendant],
            cwd=self.root,
            capture_output=True,
            check=False,
        )
        return proc.returncode == 0

    def tree_sha(self, sha: str) -> str:
        """The hash of commit ``sha``'s tree: equal trees are identical content.

        Commits with the same tree (an empty commit, an amend that changed
        only the message, a force-push of the same files) differ only in
        metadata, so what was measured on one holds for the other.
        """
        out = self.run(
            ("rev-parse", "--verify", "--quiet", f"{sha}^{{tree}}"),
            what=f"read the tree of commit {sha[:12]}",
        )
        return out.decode().strip()

    def resolve(self, ref: str) -> str:
        """The full sha of the commit ``ref`` names (a branch, tag or sha)."""
        proc = subprocess.run(
            [
                "git",
                "-c",
                "safe.directory=*",
                "rev-parse",
                "--verify",
                "--quiet",
                "--end-of-options",
                f"{ref}^{{commit}}",
            ],
            cwd=self.root,
            capture_output=True,
            check=False,
        )
        if proc.returncode != 0:
            raise GitError(
                f"{ref!r} names no commit in this repository",
                where=str(self.root),
                hint="name a branch, tag or commit, e.g. --base main (fetch it first if remote)",
            )
        return proc.stdout.decode().strip()

    def fingerprint(self, treeish: str, paths: Sequence[str]) -> tuple[tuple[str, str], ...]:
        """Git path -> object id (a tree for a folder) of each of ``paths`` at ``treeish``.

        Equal ids are identical content, so the fingerprint changes exactly
        when a file under one of the paths does.  A path not in the tree
        maps to ``"missing"``.
        """
        out: dict[str, str] = {}
        for path in paths:
            if path in ("", "."):
                out["."] = self.tree_sha(treeish)
                continue
            entry = self.entry(treeish, path)
            out[path] = entry.oid if entry is not None else "missing"
        return tuple(sorted(out.items()))

    def working_tree(self, paths: Sequence[str]) -> str:
        """The tree id of HEAD with the working tree's content of ``paths`` (untracked
        files included, ignored ones not, deleted ones gone), built on a private index,
        so it is what a commit of those paths would hold."""
        whole = any(p in ("", ".") for p in paths)
        named = [p for p in paths if p not in ("", ".")]
        # A path reached through a symlinked folder is not in any commit: git stores the link.
        present = [p for p in named if os.path.lexists(self.root / p) and not self._beyond_link(p)]
        ignored = self._ignored_untracked(present)
        with tempfile.TemporaryDirectory(prefix="passk-index-") as tmp:
            env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
            self.run(("read-tree", "HEAD"), what="read HEAD's tree", env=env)
            gone = [p for p in named if p not in present or p in ignored]
            if gone and not whole:
                self.run(
                    (
                        "--literal-pathspecs",
                        "rm",
                        "-r",
                        "-q",
                        "--cached",
                        "--ignore-unmatch",
                        "--",
                        *gone,
                    ),
                    what="read the working tree",
                    env=env,
                )
            added = ["."] if whole else [p for p in present if p not in ignored]
            # A file left is tracked or not ignored, so --force adds only one the real
            # index tracks; a folder's ignored files stay out.
            files = [
                p for p in added if (self.root / p).is_symlink() or not (self.root / p).is_dir()
            ]
            folders = [p for p in added if p not in files]
            for force, group in ((("--force",), files), ((), folders)):
                if group:
                    self.run(
                        ("--literal-pathspecs", "add", "--all", *force, "--", *group),
                        what="read the working tree",
                        env=env,
                    )
            return self.run(("write-tree",), what="write a tree", env=env).decode().strip()

    def _beyond_link(self, path: str) -> bool:
        parents = PurePosixPath(path).parents
        return any((self.root / parent).is_symlink() for parent in parents if str(parent) != ".")

    def _ignored_untracked(self, paths: Sequence[str]) -> set[str]:
        """Those of ``paths`` git ignores and does not track: a commit would leave them out."""
        if not paths:
            return set()
        out = self.run(
            (
                "--literal-pathspecs",
                "ls-files",
                "-z",
                "--others",
                "--ignored",
                "--exclude-standard",
                "--directory",
                "--",
                *paths,
            ),
            what="list ignored files",
        )
        listed = {os.fsdecode(p).rstrip("/") for p in out.split(b"\0") if p}
        # An ignored folder is listed once, as itself, for the paths inside it.
        return {p for p in paths if any(p == i or p.startswith(i + "/") for i in listed)}

    def is_dirty(self) -> bool:
        """True when tracked files have uncommitted changes (staged or not)."""
        out = self.run(
            ("status", "--porcelain", "--untracked-files=no"), what="read the working tree status"
        )
        return bool(out.strip())

    def commits_between(self, old: str, new: str) -> int:
        """How many commits ``new`` has that ``old`` has not."""
        out = self.run(("rev-list", "--count", f"{old}..{new}"), what="count commits")
        return int(out.decode().strip() or 0)

    def changed_files(self, old: str, new: str) -> list[str]:
        """Git paths that differ between commits ``old`` and ``new``."""
        out = self.run(
            ("diff", "--name-only", "-z", "--no-renames", old, new, "--"),
            what=f"list the files changed since {old[:12]}",
        )
        return [os.fsdecode(p) for p in out.split(b"\0") if p]

    def head_sha(self) -> str:
        return self.run(("rev-parse", "HEAD"), what="read HEAD").decode().strip()

    def current_branch(self) -> str | None:
        proc = subprocess.run(
            ["git", "-c", "safe.directory=*", "symbolic-ref", "--quiet", "--short", "HEAD"],
            cwd=self.root,
            capture_output=True,
            check=False,
        )
        if proc.returncode != 0:
            return None  # detached HEAD
        return proc.stdout.decode().strip() or None

    @contextlib.contextmanager
    def export(self, sha: str, *, side: str = "base") -> Iterator[Path]:
        """The files of commit ``sha``, written read-only to a temporary directory; removed after.

        Read straight from git objects (``ls-tree`` and ``cat-file``): no
        checkout, so no hook, filter, ``.gitattributes`` conversion or LFS
        smudge runs, and nothing in the directory is shared with the checkout.
        Submodules are left out (their commits are not in this repository).
        ``side`` names the directory (``passk-base-…``, ``passk-head-…``).
        """
        parent = Path(tempfile.mkdtemp(prefix=f"passk-{side}-"))
        # mkdtemp makes it private to passk; agents may run as another user
        # (PASSK_AGENT_USER) and must read the base version's files.
        parent.chmod(0o755)
        root = parent / "tree"
        try:
            root.mkdir()
            self._write_tree(sha, root)
            make_read_only(root)
            yield root
        finally:
            _make_writable(parent)
            shutil.rmtree(parent, ignore_errors=True)

    def _write_tree(self, sha: str, root: Path) -> None:
        """The commit's files into ``root``, after its listing is checked (``tree.py``)."""
        listing = self.run(
            ("ls-tree", "-r", "-z", "--full-tree", sha),
            what=f"list the files of commit {sha[:12]}",
        )
        listed: list[tuple[str, str]] = []
        entries: list[tuple[str, str, str]] = []
        for item in listing.split(b"\0"):
            if not item:
                continue
            meta, _, name = item.partition(b"\t")
            mode, kind, oid = meta.decode("ascii").split(" ")
            listed.append((mode, os.fsdecode(name)))
            if kind == "blob":
                entries.append((mode, oid, os.fsdecode(name)))
        check_paths(listed, sha)
        if not entries:
            return
        batch = "".join(f"{oid}\n" for _, oid, _ in entries).encode("ascii")
        out = self.run(
            ("cat-file", "--batch"), what=f"read the files of commit {sha[:12]}", stdin=batch
        )

        def files() -> Iterator[TreeFile]:
            offset = 0
            for mode, _oid, rel in entries:
                header_end = out.index(b"\n", offset)
                size = int(out[offset:header_end].split(b" ")[2])
                yield TreeFile(rel, mode, out[header_end + 1 : header_end + 1 + size])
                offset = header_end + 1 + size + 1

        write_files(root, files(), sha)

    def commit_files(self, paths: Sequence[str], message: str, *, parent: str = "HEAD") -> str:
        """A commit on top of ``parent`` holding the working-tree content of ``paths``.

        Built with plumbing on a private index: neither the checkout's index
        nor its branch moves, so the caller decides where the commit goes.
        """
        with tempfile.TemporaryDirectory(prefix="passk-index-") as tmp:
            env = {"GIT_INDEX_FILE": str(Path(tmp) / "index"), **_bot_identity()}
            self.run(("read-tree", parent), what="read the tree", env=env)
            for rel in paths:
                blob = self.run(("hash-object", "-w", "--", rel), what=f"store {rel}").decode()
                self.run(
                    ("update-index", "--add", "--cacheinfo", f"100644,{blob.strip()},{rel}"),
                    what=f"stage {rel}",
                    env=env,
                )
            tree = self.run(("write-tree",), what="write the tree", env=env).decode().strip()
            commit = self.run(
                ("commit-tree", tree, "-p", parent, "-m", message),
                what="create the commit",
                env=env,
            )
        return commit.decode().strip()

    def push(
        self, remote: str, commit: str, branch: str, *, auth: Mapping[str, str] | None = None
    ) -> None:
        """Push ``commit`` to ``branch``, with ``auth`` (:func:`token_auth_env`) or else the
        credentials the checkout configured."""
        self.run(
            ("push", "--quiet", remote, f"{commit}:refs/heads/{branch}"),
            what=f"push to {remote} {branch}",
            env=auth,
        )

    def config_entries(self, pattern: str) -> list[ConfigEntry]:
        """The config entries whose key matches the regex ``pattern``, with where each is set.

        Every scope git reads in this checkout (system, global, the repository's,
        the environment's), with ``include``/``includeIf`` files followed, as any
        git command run here would see them.
        """
        out = self.run(
            ("config", "--show-origin", "-z", "--get-regexp", pattern),
            what=f"read the git config ({pattern})",
            none_found=1,
        )
        fields = out.split(b"\0")
        entries: list[ConfigEntry] = []
        for origin, item in zip(fields[0::2], fields[1::2], strict=False):
            key, _, value = item.partition(b"\n")
            entries.append(
                ConfigEntry(
                    origin=os.fsdecode(origin), key=os.fsdecode(key), value=os.fsdecode(value)
                )
            )
        return entries

    def git_dirs(self) -> tuple[Path, ...]:
        """The checkout's git directory and, in a linked worktree, the common one (with config)."""
        out = self.run(
            ("rev-parse", "--absolute-git-dir", "--git-common-dir"), what="find the git directory"
        )
        dirs: list[Path] = []
        for line in os.fsdecode(out).splitlines():
            path = (self.root / line).resolve() if line else None
            if path is not None and path not in dirs:
                dirs.append(path)
        return tuple(dirs)

    def fast_forward(self, commit: str) -> None:
        """Move the checked-out branch and index to ``commit``; the working tree stays."""
        self.run(("reset", "--quiet", "--mixed", commit), what="advance the branch")

    def is_shallow(self) -> bool:
        """Whether the clone is shallow (``fetch-depth: 1``): older commits are not here."""
        out = self.run(("rev-parse", "--is-shallow-repository"), what="ask if the clone is shallow")
        return out.strip() == b"true"

    def path_commits(self, tip: str, path: str) -> list[tuple[str, str]]:
        """(sha, committer date) of the commits that changed ``path``, newest first.

        Along ``tip``'s first parents only: the versions the branch itself
        held, not those of the branches merged into it.
        """
        out = self.run(
            ("--literal-pathspecs", "log", "--first-parent", "--format=%H %cI", tip, "--", path),
            what=f"list the commits that changed {path}",
        )
        found = []
        for line in out.decode("ascii").splitlines():
            sha, _, date = line.partition(" ")
            found.append((sha, date))
        return found

    def blob_ids(self, names: Sequence[str]) -> list[str | None]:
        """The blob each ``<commit>:<path>`` names; None where there is none (a deleted file)."""
        if not names:
            return []
        if any("\n" in name for name in names):
            raise GitError("a path holds a line break", where="git cat-file", hint="rename it")
        out = self.run(
            ("cat-file", "--batch-check=%(objectname) %(objecttype)"),
            what="look up blobs",
            stdin="".join(f"{name}\n" for name in names).encode("utf-8", "surrogateescape"),
        )
        ids: list[str | None] = []
        for line in out.decode("utf-8", "surrogateescape").splitlines():
            oid, _, kind = line.rpartition(" ")
            ids.append(oid if kind == "blob" else None)
        return ids

    def blobs(self, oids: Sequence[str]) -> Generator[tuple[str, bytes], None, None]:
        """Each blob's bytes, one at a time from one ``git cat-file --batch``.

        Asked for one by one, so only one blob is in memory at a time, and
        stopping early (closing the generator) ends the process.
        """
        proc = subprocess.Popen(
            ["git", "-c", "safe.directory=*", "-c", "core.hooksPath=/dev/null",
             "cat-file", "--batch"],
            cwd=self.root,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        assert proc.stdin is not None and proc.stdout is not None
        try:
            for oid in oids:
                proc.stdin.write(f"{oid}\n".encode("ascii"))
                proc.stdin.flush()
                header = proc.stdout.readline().split()
                if len(header) != 3 or header[1] != b"blob":
                    raise GitError(
                        f"cannot read the blob {oid[:12]}",
                        where="git cat-file",
                        hint="check out the repository with `actions/checkout` and "
                        "`fetch-depth: 0`",
                    )
                size = int(header[2])
                data = proc.stdout.read(size + 1)
                if len(data) != size + 1:
                    raise GitError(f"the blob {oid[:12]} ends early", where="git cat-file")
                yield oid, data[:size]
        finally:
            proc.stdin.close()
            proc.kill()
            proc.wait()
            proc.stdout.close()


def token_auth_env(server_url: str, token: str, environ: Mapping[str, str]) -> dict[str, str]:
    """The environment that makes one git call send ``token`` to ``server_url``, as checkout would.

    The same header ``actions/checkout`` persists (``http.<origin>/.extraheader``,
    ``AUTHORIZATION: basic`` of ``x-access-token:<token>``), but as config given
    through the environment (``GIT_CONFIG_COUNT``, git 2.31+) of that one call:
    never on disk, where an agent could read it, nor on a command line, which
    ``/proc/<pid>/cmdline`` shows to every user.  Entries already in ``environ``
    keep their numbers.
    """
    parts = urlsplit(server_url)
    origin = f"{parts.scheme}://{parts.netloc}"
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode("ascii")
    try:
        count = int(environ.get("GIT_CONFIG_COUNT", "0"))
    except ValueError:
        count = 0
    return {
        "GIT_CONFIG_COUNT": str(count + 1),
        f"GIT_CONFIG_KEY_{count}": f"http.{origin}/.extraheader",
        f"GIT_CONFIG_VALUE_{count}": f"AUTHORIZATION: basic {basic}",
    }


def _bot_identity() -> dict[str, str]:
    return {
        "GIT_AUTHOR_NAME": BOT_NAME,
        "GIT_AUTHOR_EMAIL": BOT_EMAIL,
        "GIT_COMMITTER_NAME": BOT_NAME,
        "GIT_COMMITTER_EMAIL": BOT_EMAIL,
    }


def _make_writable(root: Path) -> None:
    """Folders writable again, so that ``rmtree`` can empty them; root needs none of it.

    As root nothing is changed: the tree may belong to the agent user (the
    candidate's export), whose leftover processes could swap a folder for a
    symlink between the check and the ``chmod``; ``rmtree`` alone never
    follows one.
    """
    if os.geteuid() == 0:
        return
    for path in (root, *root.rglob("*")):
        if path.is_dir() and not path.is_symlink():
            with contextlib.suppress(OSError):
                path.chmod(0o755)


def _git(
    cwd: Path,
    args: Sequence[str],
    *,
    what: str,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    none_found: int | None = None,
) -> bytes:
    full_env = None
    if env:
        full_env = dict(os.environ)
        full_env.update(env)
    try:
        proc = subprocess.run(
            # No hook ever runs from passk's own git calls: hooks are the checkout's
            # (and so the pull request's agent could have planted one).
            ["git", "-c", "safe.directory=*", "-c", "core.hooksPath=/dev/null", *args],
            cwd=cwd,
            input=stdin,
            capture_output=True,
            check=False,
            env=full_env,
        )
    except FileNotFoundError as exc:
        raise GitError(
            "git is not installed", where="git", hint="install git in the job's image"
        ) from exc
    except NotADirectoryError as exc:
        raise GitError("not a directory", where=str(cwd)) from exc
    if none_found is not None and proc.returncode == none_found:
        return b""
    if proc.returncode != 0:
        stderr = proc.stderr.decode("utf-8", errors="replace")
        raise GitError(
            f"cannot {what}: {_one_line(stderr) or f'git exited with {proc.returncode}'}",
            where=f"git {args[0]}",
            hint="check out the repository with `actions/checkout` and `fetch-depth: 0`",
        )
    return proc.stdout


def short_sha(sha: str) -> str:
    return sha[:7]
