"""Checkpoints and rollback inside linked worktrees (a role's
``.choragos/worktrees/<role>``): each tree has its own refs, and a rollback
restores only the tree its checkpoint was taken in, with the main tree's
guarantees (temporary file and rename, links replaced, never written through)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from choragos.gitstore import changes, checkpointtrees, worktrees
from choragos.gitstore.checkpoints import REF_PREFIX, Checkpoint, CheckpointError, CheckpointStore
from tests.integration.gitrepo import (  # noqa: F401 - the fixture is autouse
    git,
    init_repo,
    isolated_git,
    ls_tree,
    write,
)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A committed main tree with the worktrees of two roles, alice and bob."""
    root = init_repo(tmp_path / "repo")
    write(root, "shared.txt", "base\n")
    write(root, ".choragos/.gitignore", "*\n")
    git(root, "add", "shared.txt")
    git(root, "commit", "-qm", "base")
    for role in ("alice", "bob"):
        worktrees.ensure(root, role)
    return root


def tree(root: Path, role: str) -> Path:
    return worktrees.path_of(root, role)


def files(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` but git's and choragos's own, by content."""
    found = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in (".git", ".choragos")]
        for name in names:
            if name != ".git":
                path = Path(folder, name)
                found[str(path.relative_to(root))] = path.read_bytes()
    return found


def test_each_tree_keeps_its_checkpoints_under_its_own_refs(repo: Path) -> None:
    with (CheckpointStore(repo) as main, CheckpointStore(tree(repo, "alice")) as alice,
          CheckpointStore(tree(repo, "bob")) as bob):
        assert (main.worktree, alice.worktree, bob.worktree) == ("", "alice", "bob")
        ours = alice.snapshot("T1", "alice", "a task", now=1000.0)
        theirs = bob.snapshot("T1", "bob", "same id, other tree", now=1000.0)
        merge = main.snapshot("merge-T1", "alice", "before merging", now=1000.0)
        assert ours.ref == "refs/choragos/wt/alice/checkpoints/1000-T1"
        assert theirs.ref == "refs/choragos/wt/bob/checkpoints/1000-T1"
        assert merge.ref == REF_PREFIX + "1000-merge-T1"  # the main tree's stay where they were
        assert (ours.name, ours.worktree, merge.worktree) == ("1000-T1", "alice", "")
        assert [c.ref for c in alice.list()] == [ours.ref]
        assert [c.ref for c in main.list()] == [merge.ref]
        assert alice.resolve("T1") == ours and bob.resolve("T1") == theirs
        with pytest.raises(CheckpointError, match="no checkpoint for 'T1'"):
            main.resolve("T1")
        with pytest.raises(CheckpointError, match="no checkpoint ref named"):
            main.resolve(ours.ref)
        assert main.worktree_namespaces() == ["alice", "bob"]
        # pruning one tree never counts or removes another's
        bob.snapshot("T2", "bob", "newer", now=2000.0)
        assert bob.prune(1) == [theirs.ref]
        assert [c.ref for c in alice.list()] == [ours.ref]
        assert [c.ref for c in main.list()] == [merge.ref]


def test_the_main_trees_checkpoint_never_holds_the_worktrees(repo: Path) -> None:
    write(tree(repo, "alice"), "work.txt", "alice's work\n")
    write(repo, "top.txt", "top\n")
    with CheckpointStore(repo) as main:
        checkpoint = main.snapshot("T1", "lead", "main")
    assert sorted(ls_tree(repo, checkpoint.ref)) == ["shared.txt", "top.txt"]
    with CheckpointStore(tree(repo, "alice")) as alice:
        inside = alice.snapshot("T2", "alice", "in the worktree")
    # the worktree's .choragos link to the session's state is never in it either
    assert sorted(ls_tree(repo, inside.ref)) == ["shared.txt", "work.txt"]


def test_a_rollback_in_one_worktree_leaves_the_other_trees_alone(repo: Path) -> None:
    alice, bob = tree(repo, "alice"), tree(repo, "bob")
    with CheckpointStore(alice) as store:
        store.snapshot("T1", "alice", "edit shared")
    write(alice, "shared.txt", "alice\n")
    write(alice, "new/alice.txt", "new\n")
    write(bob, "shared.txt", "bob\n")
    write(repo, "shared.txt", "main, uncommitted\n")
    before = {"main": files(repo), "bob": files(bob)}

    with checkpointtrees.open_for(repo, "T1") as store:
        assert store.root == alice
        result = store.rollback("T1")
    assert (result.restored, result.deleted, result.removed_dirs) == (
        ["shared.txt"], ["new/alice.txt"], ["new"])
    assert files(alice) == {"shared.txt": b"base\n"}
    assert {"main": files(repo), "bob": files(bob)} == before
    assert result.saved is not None and result.saved.worktree == "alice"

    with checkpointtrees.open_for(repo, "pre-rollback-T1") as store:
        assert store.root == alice
        store.rollback("pre-rollback-T1")
    assert files(alice) == {"shared.txt": b"alice\n", "new/alice.txt": b"new\n"}
    assert {"main": files(repo), "bob": files(bob)} == before


def test_a_worktree_rollback_never_writes_through_links(repo: Path, tmp_path: Path) -> None:
    """A file the worker replaced with a symlink, or hard-linked to a file in
    the main tree, is replaced (temporary file and rename): the link's target
    and the other name of the hard link keep their content."""
    alice = tree(repo, "alice")
    write(alice, "linked.txt", "mine\n")
    write(alice, "hard.txt", "mine too\n")
    with CheckpointStore(alice) as store:
        store.snapshot("T1", "alice", "links")
    outside = write(tmp_path, "outside.txt", "outside\n")
    (alice / "linked.txt").unlink()
    (alice / "linked.txt").symlink_to(outside)
    (alice / "hard.txt").unlink()
    os.link(repo / "shared.txt", alice / "hard.txt")
    with checkpointtrees.open_for(repo, "T1") as store:
        store.rollback("T1")
    assert not (alice / "linked.txt").is_symlink()
    assert (alice / "linked.txt").read_text() == "mine\n"
    assert (alice / "hard.txt").read_text() == "mine too\n"
    assert outside.read_text() == "outside\n"
    assert (repo / "shared.txt").read_text() == "base\n"  # the hard link's other name


def test_a_checkpoint_of_another_tree_is_refused_before_anything_changes(repo: Path) -> None:
    with CheckpointStore(tree(repo, "alice")) as alice:
        theirs = alice.snapshot("T1", "alice", "x")
    write(repo, "top.txt", "kept\n")
    with CheckpointStore(repo) as main, pytest.raises(CheckpointError) as refused:
        main.rollback(theirs)
    assert "checkpoint of another work tree" in str(refused.value)
    assert (repo / "top.txt").read_text() == "kept\n"


def test_trees_list_and_find_across_the_repository(repo: Path) -> None:
    alice, bob = tree(repo, "alice"), tree(repo, "bob")
    with CheckpointStore(repo) as main, CheckpointStore(bob) as store:
        old = store.snapshot("T1", "bob", "old", now=1000.0)
        main.snapshot("T1", "lead", "newer, in the main tree", now=2000.0)
    found = checkpointtrees.trees(alice)  # seen from inside a worktree, too
    assert [(t.name, t.path) for t in found] == [("", repo), ("alice", alice), ("bob", bob)]
    listed, gone = checkpointtrees.list_all(repo)
    assert [(c.task_id, c.worktree) for c in listed] == [("T1", ""), ("T1", "bob")]
    assert gone == []
    with checkpointtrees.open_for(repo, "T1") as store:  # the newest, wherever it is
        assert store.root == repo
    with checkpointtrees.open_for(repo, old.ref) as store:  # a ref names its tree
        assert store.root == bob
    with checkpointtrees.open_for(alice, Checkpoint(old.ref, "T1", "", "", 0, "", "", "")) as s:
        assert s.root == bob
    for target in ("T9", "refs/choragos/wt/carol/checkpoints/1-T1", "refs/heads/main"):
        with pytest.raises(CheckpointError):
            checkpointtrees.open_for(repo, target)


def test_a_gone_worktrees_checkpoints_are_not_listed_and_prune_removes_them(
        repo: Path) -> None:
    with CheckpointStore(tree(repo, "bob")) as store:
        kept = store.snapshot("T1", "bob", "x")
    git(repo, "worktree", "remove", "--force", str(tree(repo, "bob")))
    listed, gone = checkpointtrees.list_all(repo)
    assert listed == [] and [(t.name, t.path) for t in gone] == [("bob", None)]
    with pytest.raises(CheckpointError, match="the worktree bob is gone"):
        checkpointtrees.open_for(repo, kept.ref)
    assert checkpointtrees.prune_all(repo, 5) == [kept.ref]
    assert git(repo, "for-each-ref", "refs/choragos/") == ""


def test_pruning_a_merged_worktree_drops_its_checkpoints(repo: Path) -> None:
    with CheckpointStore(tree(repo, "alice")) as alice, CheckpointStore(repo) as main:
        alice.snapshot("T1", "alice", "x")
        main.snapshot("T2", "lead", "y")
    assert worktrees.prune(repo, "alice")
    refs = git(repo, "for-each-ref", "--format=%(refname)", "refs/choragos/").split()
    assert [r.rsplit("-", 1)[1] for r in refs] == ["T2"]  # the main tree's stays


def test_the_diff_of_a_worktree_checkpoint_is_taken_in_its_tree(repo: Path) -> None:
    alice = tree(repo, "alice")
    with CheckpointStore(alice) as store:
        ref = store.snapshot("T1", "alice", "x").ref
    write(alice, "shared.txt", "changed in alice\n")
    write(repo, "shared.txt", "changed in main\n")
    patch = changes.since_checkpoint(repo, ref)
    assert "+changed in alice" in patch and "main" not in patch


def test_the_checkpointer_snapshots_a_roles_task_in_its_worktree_pruned_on_first_use(
        repo: Path, tmp_path: Path) -> None:
    from choragos.actors import messages as m
    from choragos.actors.checkpointer import CheckpointerActor
    from choragos.actors.supervisor import ChildSpec, StartChild, StopAll, Supervisor
    from choragos.board.events import EventLog, read_events
    from tests.conftest import Told, wait_until

    alice = tree(repo, "alice")
    with CheckpointStore(alice) as store:
        old = [store.snapshot(f"T{n}", "alice", "old", now=1000.0 + n).ref for n in (1, 2, 3)]
    events, core = EventLog(tmp_path / "events.jsonl"), Told()
    sup = Supervisor.start(on_event=events.write)
    try:
        main = CheckpointStore(repo, watch=True)
        handle = sup.ask(StartChild(ChildSpec(
            "checkpointer", lambda h: CheckpointerActor.start(main, core, events, sup))))
        assert handle.ask(m.Prune(1)) == []  # the main tree has none; alice's is not open yet
        handle.tell(m.Snapshot("T4", "alice", "new", tree=alice))
        handle.tell(m.Snapshot("T5", "lead", "main"))
        wait_until(lambda: len(core.told) == 2, 20, message="both checkpoints")
    finally:
        sup.ask(StopAll())
        sup.stop()
        events.close()
    assert core.told[0].ref.startswith("refs/choragos/wt/alice/checkpoints/")
    assert core.told[0].ref.endswith("-T4")
    assert core.told[1].ref.startswith(REF_PREFIX) and core.told[1].ref.endswith("-T5")
    with CheckpointStore(alice) as store:
        assert [c.ref for c in store.list()] == [core.told[0].ref, old[2]]
    pruned = [e for e in read_events(tmp_path / "events.jsonl")
              if e["event"] == "checkpoints pruned"]
    assert [(e["worktree"], e["removed"]) for e in pruned] == [("alice", 2)]
