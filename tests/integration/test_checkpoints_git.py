"""Checkpoints against real git: semantics, interop, incrementality, rollback.

git itself is the oracle: a checkpoint's tree must equal what ``git add -A``
into a copy of the index followed by ``git write-tree`` produces, and git
must read, check and keep every checkpoint.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from choragos.gitstore.checkpoints import (
    REF_PREFIX,
    CheckpointError,
    CheckpointStore,
    NotARepository,
)
from choragos.gitstore.objects import ObjectWriter
from tests.integration.gitrepo import (  # noqa: F401 - the fixture is autouse
    OLD,
    add_submodule,
    age_tree,
    git,
    git_tree,
    init_repo,
    isolated_git,
    ls_tree,
    settle,
    write,
)


def git_state(root: Path) -> dict[str, object]:
    """Everything of the user's that checkpoints must never change."""
    index = root / ".git" / "index"
    return {"head": git(root, "rev-parse", "--verify", "-q", "HEAD").strip(),
            "index": index.read_bytes() if index.exists() else b"",
            "stash": git(root, "stash", "list"),
            "refs": git(root, "for-each-ref", "refs/heads", "refs/tags", "refs/stash")}


def manifest(root: Path, paths: list[str]) -> dict[str, tuple]:
    """Content, executable bit and symlink target of each existing path."""
    out = {}
    for rel in paths:
        path = root / rel
        if path.is_symlink():
            out[rel] = ("link", os.readlink(path))
        elif path.is_file():
            out[rel] = ("file", path.read_bytes(), bool(path.stat().st_mode & 0o100))
    return out


def kept_files(root: Path) -> dict[str, tuple]:
    """git's view of the checkpointed files: tracked and untracked, not ignored."""
    listed = git(root, "ls-files", "-z", "-c", "-o", "--exclude-standard").split("\0")
    return manifest(root, sorted({p for p in listed if p}))


def ignored_files(root: Path) -> dict[str, tuple]:
    listed = git(root, "ls-files", "-z", "-o", "-i", "--exclude-standard").split("\0")
    return manifest(root, [p for p in listed if p])


# ---- random workspaces -------------------------------------------------------------

NAMES = ["a", "b", "c.txt", "Ünï", "日本.md", "sp ace", "x.log", "n.o", "keep.log", "build",
         "-dash", "e"]
KINDS = ["text", "binary", "exec", "empty", "link"]


def _content(kind: str, seed: int) -> bytes:
    if kind == "binary":
        return bytes((seed * 7 + i * 13) % 256 for i in range(64 + seed % 50)) + b"\0\xff"
    if kind == "empty":
        return b""
    return f"line {seed}\n".encode() * (1 + seed % 5)


@st.composite
def workspaces(draw: st.DrawFn) -> dict[str, tuple[str, int]]:
    paths = draw(st.lists(st.lists(st.sampled_from(NAMES), min_size=1, max_size=3),
                          min_size=1, max_size=12))
    spec: dict[str, tuple[str, int]] = {}
    for parts in paths:
        rel = "/".join(parts)
        # A path cannot be both a file and a directory holding another.
        if any(rel.startswith(p + "/") or p.startswith(rel + "/") for p in spec):
            continue
        spec[rel] = (draw(st.sampled_from(KINDS)), draw(st.integers(0, 1000)))
    return spec


OPS = st.lists(st.tuples(st.sampled_from(["edit", "delete", "create", "chmod", "to_dir",
                                          "to_file"]),
                         st.integers(0, 100), st.sampled_from(NAMES)), min_size=1, max_size=8)


def build(root: Path, spec: dict[str, tuple[str, int]], commit_mask: int) -> None:
    init_repo(root)
    write(root, ".gitignore", "*.log\nbuild/\n")
    if "a" not in spec:
        write(root, "a/.gitignore", "!keep.log\n*.o\n")
    for i, (rel, (kind, seed)) in enumerate(sorted(spec.items())):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if kind == "link":
            os.symlink("../" * rel.count("/") + (f"target{seed % 3}"), path)
        else:
            write(root, rel, _content(kind, seed), 0o755 if kind == "exec" else 0o644)
        if commit_mask >> (i % 16) & 1:
            git(root, "add", "-f", "--", rel)
    write(root, "tracked.txt", "base\n")
    git(root, "add", "-A", ".gitignore", "tracked.txt")
    git(root, "commit", "-q", "-m", "base")
    # One stash entry, so "the stash is untouched" means something.
    write(root, "tracked.txt", "stashed change\n")
    git(root, "stash", "-q")


def mutate(root: Path, ops: list[tuple[str, int, str]]) -> None:
    for op, pick, name in ops:
        files = sorted(kept_files(root))
        files = [f for f in files if not f.endswith(".gitignore")]
        dirs = sorted({str(Path(f).parent) for f in files} - {"."})
        if op == "create":
            base = dirs[pick % len(dirs)] + "/" if dirs and pick % 2 else ""
            target = root / (base + name)
            if not target.parent.is_dir() or target.is_dir():
                continue
            target.unlink(missing_ok=True)
            target.write_bytes(b"created %d\n" % pick)
        elif op == "to_file" and dirs:
            folder = root / dirs[pick % len(dirs)]
            shutil.rmtree(folder)
            folder.write_bytes(b"was a directory\n")
        elif files:
            _change_file(root / files[pick % len(files)], op, pick)


def _change_file(path: Path, op: str, pick: int) -> None:
    if op == "edit":
        path.unlink()
        path.write_bytes(b"edited %d\n" % pick)
    elif op == "delete":
        path.unlink()
    elif op == "chmod" and not path.is_symlink():
        path.chmod(path.stat().st_mode ^ 0o100)
    elif op == "to_dir":
        path.unlink()
        path.mkdir()
        (path / "inner").write_bytes(b"inner\n")


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(spec=workspaces(), commit_mask=st.integers(0, 2**16 - 1), ops=OPS)
def test_rollback_restores_checkpoint_and_undo_restores_mutation(spec, commit_mask, ops):
    with tempfile.TemporaryDirectory(prefix="chg-prop-") as tmp:
        root = Path(tmp) / "ws"
        build(root, spec, commit_mask)
        before = kept_files(root)
        with CheckpointStore(root) as store:
            checkpoint = store.snapshot("T1", "coder", "property")
            assert checkpoint.tree == git_tree(root)
            mutate(root, ops)
            mutated, ignored, state = kept_files(root), ignored_files(root), git_state(root)
            plan = store.plan_rollback("T1")
            event("conflict" if plan.conflicts else "nothing to do" if plan.empty
                  else "rolled back")
            if plan.conflicts:
                with pytest.raises(CheckpointError):
                    store.rollback("T1")
                assert kept_files(root) == mutated
                return
            result = store.rollback("T1")
            assert kept_files(root) == before
            assert store.plan_rollback("T1").empty
            assert sorted(result.restored) == plan.restore
            assert sorted(result.deleted) == plan.delete
            assert manifest(root, list(ignored)) == ignored
            assert git_state(root) == state
            if result.saved is not None:
                store.rollback("pre-rollback-T1")
                assert kept_files(root) == mutated
                assert manifest(root, list(ignored)) == ignored
                assert git_state(root) == state


# ---- git semantics and interop -------------------------------------------------------

def test_modes_symlinks_empty_binary_and_unicode_names(repo: Path) -> None:
    write(repo, "plain.txt", "hello\n")
    write(repo, "run.sh", "#!/bin/sh\n", 0o755)
    write(repo, "empty", b"")
    write(repo, "bin.dat", bytes(range(256)) * 4)
    write(repo, "dir/ünïcødé ✓.txt", "u\n")
    os.symlink("plain.txt", repo / "link")
    os.symlink("does/not/exist", repo / "dangling")
    with CheckpointStore(repo) as store:
        checkpoint = store.snapshot("T1", "coder", "modes")
    entries = ls_tree(repo, checkpoint.ref)
    assert entries == {"plain.txt": "100644", "run.sh": "100755", "empty": "100644",
                       "bin.dat": "100644", "dir/ünïcødé ✓.txt": "100644",
                       "link": "120000", "dangling": "120000"}
    assert git(repo, "cat-file", "-p", f"{checkpoint.ref}:link") == "plain.txt"
    assert checkpoint.tree == git_tree(repo)


def test_a_non_utf8_file_name_survives_snapshot_and_rollback(repo: Path) -> None:
    name = os.fsencode(repo) + b"/caf\xe9.txt"
    with open(name, "wb") as f:
        f.write(b"latin-1 name\n")
    with CheckpointStore(repo) as store:
        checkpoint = store.snapshot("T1", "coder", "bytes")
        os.unlink(name)
        result = store.rollback("T1")
    assert result.restored == [os.fsdecode(b"caf\xe9.txt")]
    with open(name, "rb") as f:
        assert f.read() == b"latin-1 name\n"
    assert checkpoint.tree == git_tree(repo)


def test_ignore_rules_match_git(repo: Path) -> None:
    write(repo, ".gitignore", "*.log\n/top-only\nbuild/\ndocs/**/*.tmp\n!important.log\n")
    write(repo, "sub/.gitignore", "*.txt\n!keep.txt\n")
    write(repo, ".git/info/exclude", "secret*\n")
    excludes = repo.parent / "global-ignore"
    excludes.write_text("*.bak\n")
    git(repo, "config", "core.excludesFile", str(excludes))
    for rel in ["a.log", "important.log", "top-only", "sub/top-only", "build/x", "sub/build/y",
                "docs/a/b.tmp", "docs/c.tmp", "sub/x.txt", "sub/keep.txt", "secret.key",
                "sub/secretive", "old.bak", "kept.py", "sub/deeper/z.txt"]:
        write(repo, rel, rel)
    with CheckpointStore(repo) as store:
        checkpoint = store.snapshot("T1", "coder", "ignores")
    assert checkpoint.tree == git_tree(repo)
    assert set(ls_tree(repo, checkpoint.ref)) == {
        ".gitignore", "sub/.gitignore", "important.log", "sub/top-only", "sub/keep.txt",
        "kept.py"}


def test_a_long_lived_store_sees_git_config_change_between_snapshots(
        repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The session's store lives for hours and keeps what it read of git's
    config: an excludesFile set in the repository and an ignorecase set in
    the user's own config are both in force from the next snapshot on."""
    write(repo, "old.bak", "x\n")
    write(repo, ".gitignore", "*.log\n")
    write(repo, "LOUD.LOG", "x\n")
    user_config = repo.parent / "user.gitconfig"
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(user_config))
    with CheckpointStore(repo) as store:
        first = store.snapshot("T1", "coder", "before")
        excludes = repo.parent / "global-ignore"
        excludes.write_text("*.bak\n")
        git(repo, "config", "core.excludesFile", str(excludes))
        second = store.snapshot("T2", "coder", "excludesFile")
        user_config.write_text("[core]\n\tignorecase = true\n")
        third = store.snapshot("T3", "coder", "ignorecase")
    assert {"old.bak", "LOUD.LOG"} <= set(ls_tree(repo, first.ref))
    assert "old.bak" not in ls_tree(repo, second.ref) and "LOUD.LOG" in ls_tree(repo, second.ref)
    assert "LOUD.LOG" not in ls_tree(repo, third.ref)
    assert third.tree == git_tree(repo)


def test_tracked_ignored_files_stay_and_choragos_dir_is_left_out(repo: Path) -> None:
    write(repo, ".gitignore", "*.log\n")
    write(repo, "tracked.log", "tracked though ignored\n")
    git(repo, "add", "-f", "tracked.log", ".gitignore")
    git(repo, "commit", "-q", "-m", "t")
    write(repo, "untracked.log", "ignored\n")
    write(repo, ".choragos/logs/events.jsonl", "{}\n")
    write(repo, "sub/.choragos/tasks/T1.md", "task\n")
    with CheckpointStore(repo / "sub") as store:
        checkpoint = store.snapshot("T1", "coder", "tracked")
        assert store.root == repo
    assert set(ls_tree(repo, checkpoint.ref)) == {".gitignore", "tracked.log"}


def test_submodule_is_a_gitlink_and_never_entered(repo: Path, tmp_path: Path) -> None:
    add_submodule(repo, tmp_path / "upstream")
    write(repo, "sub/untracked-inside.txt", "not ours\n")
    nested = init_repo(repo / "nested")
    write(nested, "n.txt", "n\n")
    git(nested, "add", "-A")
    git(nested, "commit", "-q", "-m", "nested")
    settle(repo)
    with CheckpointStore(repo) as store:
        checkpoint = store.snapshot("T1", "coder", "submodules")
        store.snapshot("T2", "coder", "again")
        assert (store.last_stats.listed, store.last_stats.hashed) == (0, 0)
    entries = ls_tree(repo, checkpoint.ref)
    assert entries["sub"] == "160000" and entries["nested"] == "160000"
    assert not any(p.startswith(("sub/", "nested/")) for p in entries)
    head = git(repo / "sub", "rev-parse", "HEAD").strip()
    assert git(repo, "rev-parse", f"{checkpoint.ref}:sub").strip() == head
    assert checkpoint.tree == git_tree(repo)


def test_git_reads_checks_and_keeps_checkpoints(repo: Path) -> None:
    write(repo, "a.txt", "a\n")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-q", "-m", "a")
    write(repo, "new.txt", "untracked\n")
    for i in range(150):  # enough new objects for a pack of our own
        write(repo, f"many/f{i}.txt", f"{i}\n")
    status = git(repo, "status", "--porcelain", "--ignored")
    with CheckpointStore(repo) as store:
        first = store.snapshot("T1", "coder", "one")
        assert list((repo / ".git/objects/pack").glob("pack-*.idx"))
        write(repo, "new.txt", "changed\n")
        second = store.snapshot("T2", "reviewer", "two")
    assert git(repo, "status", "--porcelain", "--ignored") == status
    git(repo, "fsck", "--strict", "--no-dangling")
    git(repo, "gc", "-q", "--prune=now")
    for checkpoint in (first, second):
        assert git(repo, "rev-parse", checkpoint.ref).strip() == checkpoint.commit
        assert git(repo, "cat-file", "-t", checkpoint.tree).strip() == "tree"
    assert git(repo, "show", f"{first.ref}:new.txt") == "untracked\n"
    assert git(repo, "show", f"{second.ref}:new.txt") == "changed\n"
    git(repo, "fsck", "--strict", "--no-dangling")
    with CheckpointStore(repo) as store:  # packed refs after gc
        assert [c.task_id for c in store.list()] == ["T2", "T1"]


def test_snapshot_changes_nothing_git_can_see(repo: Path) -> None:
    write(repo, ".gitignore", "*.o\n")
    write(repo, "a.txt", "a\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a")
    write(repo, "a.txt", "modified\n")
    write(repo, "b.o", "ignored\n")
    write(repo, "c.txt", "untracked\n")
    git(repo, "stash", "-q")
    write(repo, "a.txt", "modified again\n")
    state, status = git_state(repo), git(repo, "status", "--porcelain", "--ignored")
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "quiet")
    assert git_state(repo) == state
    assert git(repo, "status", "--porcelain", "--ignored") == status


def test_commit_records_task_role_label_time_and_head(repo: Path) -> None:
    write(repo, "a.txt", "a\n")
    with CheckpointStore(repo) as store:
        unborn = store.snapshot("T1", "coder", "first\nsecond \x1b[31mred",
                                now=1_700_000_000.5)
        git(repo, "add", "a.txt")
        git(repo, "commit", "-q", "-m", "a")
        born = store.snapshot("T2", "reviewer", "look", now=1_700_000_100.0)
    assert unborn.ref == f"{REF_PREFIX}1700000000-T1"
    assert (unborn.task_id, unborn.role, unborn.head) == ("T1", "coder", "unborn")
    assert unborn.label == "first" and unborn.created == pytest.approx(1_700_000_000.5)
    assert born.head == git(repo, "rev-parse", "HEAD").strip()
    message = git(repo, "log", "-1", "--format=%B", born.ref)
    assert "Choragos-Task: T2" in message and f"Choragos-Head: {born.head}" in message
    assert git(repo, "log", "-1", "--format=%P", born.ref).strip() == ""  # parentless


def test_incremental_snapshots_rehash_only_what_changed(repo: Path) -> None:
    for i in range(30):
        write(repo, f"d{i % 3}/f{i}.txt", f"{i}\n")
    write(repo, ".gitignore", "*.tmp\n")
    age_tree(repo)
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "first")
        assert store.last_stats.hashed == 31
        store.snapshot("T2", "coder", "unchanged")
        assert (store.last_stats.hashed, store.last_stats.listed) == (0, 0)
        write(repo, "d2/new.tmp", "ignored\n")
        settle(repo)
        store.snapshot("T3", "coder", "ignored file added")
        assert (store.last_stats.hashed, store.last_stats.listed) == (0, 1)
        os.utime(repo / "d1/f1.txt", (OLD + 5, OLD + 5))
        settle(repo)
        store.snapshot("T4", "coder", "touched")
        assert (store.last_stats.hashed, store.last_stats.listed) == (1, 0)
    with CheckpointStore(repo) as fresh:  # the private index persists on disk
        fresh.snapshot("T5", "coder", "fresh instance")
        assert (fresh.last_stats.hashed, fresh.last_stats.listed) == (0, 0)


def test_a_racy_file_is_hashed_again(repo: Path) -> None:
    path = write(repo, "hot.txt", "one\n")
    with CheckpointStore(repo) as store:
        future = time.time() + 60  # "modified during the walk": never trusted
        os.utime(path, (future, future))
        store.snapshot("T1", "coder", "racy")
        store.snapshot("T2", "coder", "again")
        assert store.last_stats.hashed == 1


def test_a_file_exactly_as_new_as_the_walk_clock_is_racy(repo: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The boundary of git's racy rule: a stat time equal to the walk's
    clock could still change within the same tick, so it is not trusted."""
    path = write(repo, "edge.txt", "one\n")
    st = os.lstat(path)
    edge = max(st.st_mtime_ns, st.st_ctime_ns)
    real_lock = CheckpointStore._locked

    @contextmanager
    def lock_at_the_edge(self: CheckpointStore) -> Iterator[int]:
        with real_lock(self):
            yield edge  # the filesystem clock reads exactly the file's times

    with CheckpointStore(repo) as store:
        monkeypatch.setattr(CheckpointStore, "_locked", lock_at_the_edge)
        store.snapshot("T1", "coder", "at the edge")
        monkeypatch.undo()
        settle(repo)
        store.snapshot("T2", "coder", "again")
        assert store.last_stats.hashed == 1
        store.snapshot("T3", "coder", "settled")
        assert store.last_stats.hashed == 0  # trusted once the clock has moved on


def test_cache_survives_pruning_of_the_checkpoint_it_was_built_for(repo: Path) -> None:
    write(repo, "a.txt", "a\n")
    age_tree(repo)
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "one", now=100.0)
        store.snapshot("T2", "coder", "two", now=200.0)
        store.prune(1)
        store.snapshot("T3", "coder", "three", now=300.0)
        assert store.last_stats.hashed == 0
        store.prune(0)
        store.snapshot("T4", "coder", "four", now=400.0)
        assert store.last_stats.hashed == 1  # no checkpoint protects the cache's objects
    git(repo, "fsck", "--strict", "--no-dangling")


def test_list_resolve_and_prune(repo: Path) -> None:
    write(repo, "a.txt", "a\n")
    with CheckpointStore(repo) as store:
        for n, task in enumerate(["T1", "T2", "T1", "T3"]):
            store.snapshot(task, "coder", f"take {n}", now=1000.0 + n)
        assert [c.task_id for c in store.list()] == ["T3", "T1", "T2", "T1"]
        newest_t1 = store.resolve("T1")
        assert newest_t1.label == "take 2"
        assert store.resolve(newest_t1.ref) == newest_t1
        assert store.resolve(newest_t1.name) == newest_t1
        for bad in ["T9", "refs/heads/main", f"{REF_PREFIX}1-T9"]:
            with pytest.raises(CheckpointError):
                store.resolve(bad)
        with pytest.raises(CheckpointError):
            store.snapshot("bad id!", "coder", "x")
        removed = store.prune(2)
        assert [r.rsplit("/", 1)[1] for r in removed] == ["1001-T2", "1000-T1"]
        assert [c.task_id for c in store.list()] == ["T3", "T1"]
        assert store.prune(5) == []


def test_same_task_same_second_gets_distinct_refs(repo: Path) -> None:
    write(repo, "a.txt", "a\n")
    with CheckpointStore(repo) as store:
        one = store.snapshot("T1", "coder", "one", now=5000.2)
        two = store.snapshot("T1", "coder", "two", now=5000.7)
        assert one.ref != two.ref
        assert store.resolve("T1") == two


def test_not_a_repository_and_bare_repository(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(NotARepository, match="not inside a git repository"):
        CheckpointStore(plain)
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    with pytest.raises(NotARepository, match="bare"):
        CheckpointStore(bare)


def test_rollback_keeps_head_and_reports_head_moved(repo: Path) -> None:
    write(repo, "a.txt", "v1\n")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-q", "-m", "v1")
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "before")
        write(repo, "a.txt", "v2\n")
        write(repo, "made/by/agent.txt", "new\n")
        git(repo, "commit", "-q", "-am", "v2 by the agent")
        head = git(repo, "rev-parse", "HEAD").strip()
        plan = store.plan_rollback("T1")
        assert plan.head_moved and plan.head_now == head
        assert (plan.restore, plan.delete) == (["a.txt"], ["made/by/agent.txt"])
        result = store.rollback("T1")
    assert (repo / "a.txt").read_text() == "v1\n"
    assert not (repo / "made").exists()  # emptied directories go too
    assert result.removed_dirs == ["made/by", "made"]
    assert git(repo, "rev-parse", "HEAD").strip() == head


def file_then_directory(repo: Path, store: CheckpointStore, *inside: str,
                        ignore: str = "*.log\n") -> None:
    """Checkpoint "thing" as a file, then make it a directory holding ``inside``."""
    write(repo, ".gitignore", ignore)
    write(repo, "thing", "a file\n")
    store.snapshot("T1", "coder", "before")
    (repo / "thing").unlink()
    for rel in inside:
        write(repo, f"thing/{rel}", f"{rel}, must survive\n")


def test_rollback_refuses_when_ignored_content_is_in_the_way(repo: Path) -> None:
    with CheckpointStore(repo) as store:
        file_then_directory(repo, store, "keep.log")
        plan = store.plan_rollback("T1")
        assert plan.conflicts == ["thing"]
        with pytest.raises(CheckpointError, match="nothing was changed"):
            store.rollback("T1")
        assert [c.task_id for c in store.list()] == ["T1"]  # no pre-rollback saved
    assert (repo / "thing/keep.log").read_text() == "keep.log, must survive\n"


def test_rollback_restores_permissions_and_keeps_private_ones(repo: Path) -> None:
    write(repo, "secret.txt", "v1\n", 0o600)
    write(repo, "tool", "#!/bin/sh\n", 0o755)
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "before")
        write(repo, "secret.txt", "v2\n", 0o600)
        (repo / "tool").chmod(0o644)
        store.rollback("T1")
    assert stat.S_IMODE((repo / "secret.txt").stat().st_mode) == 0o600
    assert (repo / "tool").stat().st_mode & 0o111 == 0o111


def test_unreadable_file_is_skipped_not_fatal(repo: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    write(repo, "ok.txt", "fine\n")
    write(repo, "locked.txt", "no\n")
    real = ObjectWriter.put_file

    def refuse(self: ObjectWriter, path: bytes, *, write: bool = True) -> bytes:
        if path.endswith(b"locked.txt"):  # what a 0o000 file does to a non-root user
            raise PermissionError(13, "Permission denied", os.fsdecode(path))
        return real(self, path, write=write)

    monkeypatch.setattr(ObjectWriter, "put_file", refuse)
    with CheckpointStore(repo) as store:
        checkpoint = store.snapshot("T1", "coder", "partial")
        assert store.last_stats.skipped == ["locked.txt"]
    assert set(ls_tree(repo, checkpoint.ref)) == {"ok.txt"}


def test_empty_work_tree_gets_the_empty_tree(repo: Path) -> None:
    with CheckpointStore(repo) as store:
        checkpoint = store.snapshot("T1", "coder", "nothing yet")
    assert checkpoint.tree == git(repo, "hash-object", "-t", "tree", "/dev/null").strip()
    git(repo, "fsck", "--strict", "--no-dangling")


def test_rollback_never_writes_through_a_symlink(repo: Path, tmp_path: Path) -> None:
    write(repo, "d/x.txt", "mine\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "before")
        shutil.rmtree(repo / "d")
        os.symlink(outside, repo / "d")  # an agent swaps the directory for a link
        result = store.rollback("T1")
    assert result.deleted == ["d"] and result.restored == ["d/x.txt"]
    assert not (repo / "d").is_symlink() and (repo / "d/x.txt").read_text() == "mine\n"
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize("link", ["hard", "symbolic"])
def test_rollback_replaces_a_linked_file_and_leaves_its_target_alone(
        repo: Path, tmp_path: Path, link: str) -> None:
    """A file an agent swapped for a link to something outside the work tree
    is replaced (temporary file, then rename), never written through."""
    write(repo, "notes.txt", "mine\n")
    outside = write(tmp_path, "outside.txt", "not yours\n")
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "before")
        (repo / "notes.txt").unlink()
        if link == "hard":
            os.link(outside, repo / "notes.txt")
        else:
            os.symlink(outside, repo / "notes.txt")
        result = store.rollback("T1")
    assert result.restored == ["notes.txt"]
    assert outside.read_text() == "not yours\n"
    assert outside.stat().st_nlink == 1
    restored = repo / "notes.txt"
    assert not restored.is_symlink() and restored.read_text() == "mine\n"
    assert not os.path.samefile(restored, outside)


def test_linked_worktree_keeps_its_own_private_index(repo: Path, tmp_path: Path) -> None:
    write(repo, "a.txt", "a\n")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-q", "-m", "a")
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", str(linked))
    write(linked, "only-here.txt", "wt\n")
    with CheckpointStore(linked) as store:
        checkpoint = store.snapshot("T1", "coder", "in a worktree")
        assert store.root == linked
    assert set(ls_tree(repo, checkpoint.ref)) == {"a.txt", "only-here.txt"}
    assert list((repo / ".git" / "worktrees").glob("*/choragos/index"))
    assert not (repo / ".git" / "choragos" / "index").exists()


def test_concurrent_snapshots_from_two_stores(repo: Path) -> None:
    for i in range(200):
        write(repo, f"f{i}.txt", f"{i}\n")
    errors: list[BaseException] = []

    def take(task: str) -> None:
        try:
            with CheckpointStore(repo) as store:
                for n in range(3):
                    store.snapshot(f"{task}-{n}", "coder", "race")
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=take, args=(name,)) for name in ("A", "B")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors
    with CheckpointStore(repo) as store:
        found = store.list()
    assert len(found) == 6 and len({c.tree for c in found}) == 1
    git(repo, "fsck", "--strict", "--no-dangling")


def test_rollback_reads_a_pack_written_by_the_same_store(repo: Path) -> None:
    for i in range(300):
        write(repo, f"src/m{i % 7}/f{i}.py", f"value = {i}\n")
    with CheckpointStore(repo) as store:
        store.snapshot("T1", "coder", "packed")
        shutil.rmtree(repo / "src")
        result = store.rollback("T1")
    assert len(result.restored) == 300
    assert (repo / "src/m3/f10.py").read_text() == "value = 10\n"
    git(repo, "fsck", "--strict", "--no-dangling")
