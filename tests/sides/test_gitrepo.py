"""Git as the sides read it: a commit's tree, paths inside the checkout, the base's export."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from passk_action.errors import GitError
from passk_action.sides.gitrepo import GitRepo


def test_the_tree_of_a_commit_ignores_its_message_and_parents(tmp_path: Path) -> None:
    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=tmp_path, check=True, capture_output=True, text=True
        ).stdout.strip()

    git("init", "-q")
    git("config", "user.name", "Dev")
    git("config", "user.email", "dev@example.com")
    (tmp_path / "a.txt").write_text("one\n", encoding="utf-8")
    git("add", "a.txt")
    git("commit", "-q", "-m", "first")
    first = git("rev-parse", "HEAD")
    git("commit", "-q", "--allow-empty", "-m", "empty")
    empty = git("rev-parse", "HEAD")
    (tmp_path / "a.txt").write_text("two\n", encoding="utf-8")
    git("commit", "-q", "-am", "change")
    changed = git("rev-parse", "HEAD")
    repo = GitRepo.discover(tmp_path)
    assert repo.tree_sha(first) == repo.tree_sha(empty) == git("rev-parse", "HEAD~1^{tree}")
    assert repo.tree_sha(changed) != repo.tree_sha(first)
    with pytest.raises(GitError, match="read the tree of commit"):
        repo.tree_sha("0" * 40)


def test_git_paths_are_lexical_inside_the_checkout(tmp_path: Path) -> None:
    real = tmp_path / "real"
    (real / "lax").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(real)], check=True)
    (real / "strict").symlink_to("lax")
    (tmp_path / "workspace").symlink_to(real)
    repo = GitRepo.discover(real)
    # A symlink inside the checkout is the pull request's: not followed.
    assert repo.relative(real / "strict" / "passk.yml") == "strict/passk.yml"
    assert repo.relative(real / "strict" / ".." / "passk.yml") == "passk.yml"
    # A symlink leading to the checkout itself (the runner's, not the PR's) is.
    assert repo.relative(tmp_path / "workspace" / "passk.yml") == "passk.yml"
    with pytest.raises(GitError, match="outside the git repository"):
        repo.relative(tmp_path / "elsewhere.yml")


def test_the_base_export_is_the_commits_files_read_only_and_without_hooks(tmp_path: Path) -> None:
    repo_dir = tmp_path / "repo"
    run = lambda *a: subprocess.run(  # noqa: E731
        ["git", "-c", "user.name=t", "-c", "user.email=t@x", *a],
        cwd=repo_dir,
        check=True,
        capture_output=True,
    )
    repo_dir.mkdir()
    run("init", "-q")
    (repo_dir / ".gitattributes").write_text("* text eol=crlf\n", encoding="utf-8")
    (repo_dir / "sub").mkdir()
    (repo_dir / "sub" / "agent.sh").write_text("echo hi\n", encoding="utf-8")
    (repo_dir / "sub" / "agent.sh").chmod(0o755)
    (repo_dir / "link").symlink_to("sub/agent.sh")
    run("add", "-A")
    run("commit", "-q", "-m", "base")
    sha = run("rev-parse", "HEAD").stdout.decode().strip()
    hooks = repo_dir / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    (hooks / "post-checkout").write_text(f"#!/bin/sh\ntouch {tmp_path}/hooked\n")
    (hooks / "post-checkout").chmod(0o755)
    repo = GitRepo.discover(repo_dir)
    with repo.export(sha) as tree:
        assert not tree.is_relative_to(repo_dir)
        assert (tree / "sub" / "agent.sh").read_bytes() == b"echo hi\n"  # the blob, no CRLF
        assert (tree / "sub" / "agent.sh").stat().st_mode & 0o777 == 0o555
        assert (tree / "link").is_symlink() and str((tree / "link").readlink()) == "sub/agent.sh"
        assert (tree / "sub").stat().st_mode & 0o222 == 0
    assert not tree.exists()
    assert not (tmp_path / "hooked").exists()
