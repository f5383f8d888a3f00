"""Checkpoints across a repository's work trees.

Every work tree keeps its own checkpoints (:mod:`choragos.gitstore.checkpoints`): the
main tree under ``refs/choragos/checkpoints/``, a linked worktree -- a
``worktree = true`` role's ``.choragos/worktrees/<role>`` -- under
``refs/choragos/wt/<name>/checkpoints/``.  The verbs and the deck run in the
main tree, so this module finds the tree a checkpoint belongs to and opens
that tree's store: a rollback of a task done in a worktree restores that
worktree, through the same code (and with the same guarantees) as a
rollback of the main tree, and never touches another tree.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from choragos.gitstore.checkpoints import (
    REF_PREFIX,
    WORKTREE_REFS,
    Checkpoint,
    CheckpointError,
    CheckpointStore,
    worktree_name,
)


@dataclass(frozen=True)
class Tree:
    """A work tree of the repository (the main one or a linked worktree) and where it is."""

    name: str          # "" for the main tree, else git's name of the worktree
    path: Path | None  # its top directory; None when the worktree is gone

    @property
    def label(self) -> str:
        return f"worktree {self.name}" if self.name else "main tree"


def trees(workdir: Path | str) -> list[Tree]:
    """The main tree (when there is one) and every linked worktree that
    exists or still holds checkpoints; the main tree first."""
    with CheckpointStore(workdir) as here:
        common, current, root = here.common_dir, here.worktree, here.root
        holding = here.worktree_namespaces()
    live = _linked(common)
    live[current] = root
    main = live.pop("", None) if current == "" else _main_root(common)
    found = [Tree("", main)] if main is not None else []
    names = sorted(set(live) | set(holding))
    return found + [Tree(name, live.get(name)) for name in names]


def open_tree(tree: Tree) -> CheckpointStore:
    """The store of ``tree``; a worktree that is gone has none to restore into."""
    if tree.path is None:
        raise CheckpointError(f"the {tree.label} is gone, so its checkpoints have no files "
                              "to restore into; `choragos checkpoints prune` removes them")
    store = CheckpointStore(tree.path)
    if store.worktree != tree.name:
        store.close()
        raise CheckpointError(f"{tree.path} is no longer the {tree.label}")
    return store


def tree_of_ref(ref: str) -> str | None:
    """The tree a checkpoint ref belongs to ("" for the main tree), or None
    when ``ref`` names no checkpoint at all."""
    if ref.startswith(REF_PREFIX):
        return ""
    name, _, rest = ref.removeprefix(WORKTREE_REFS).partition("/")
    if ref.startswith(WORKTREE_REFS) and name and rest.startswith("checkpoints/"):
        return name
    return None


def open_for(workdir: Path | str, target: str | Checkpoint) -> CheckpointStore:
    """The store of the tree that holds ``target``: a full ref name picks its
    tree exactly; a task id (``T3``, ``pre-rollback-T3``) or ``<epoch>-<task>``
    picks the newest match in any tree."""
    ref = target.ref if isinstance(target, Checkpoint) else target
    known = {tree.name: tree for tree in trees(workdir)}
    if ref.startswith("refs/"):
        name = tree_of_ref(ref)
        if name is None or name not in known:
            raise CheckpointError(f"no checkpoint ref named {ref}")
        return open_tree(known[name])
    best: tuple[CheckpointStore, Checkpoint] | None = None
    for tree in known.values():
        if tree.path is None:
            continue
        store = open_tree(tree)
        try:
            found = store.resolve(ref)
        except CheckpointError:
            store.close()
            continue
        if best is not None and _newer(best[1], found):
            store.close()
            continue
        if best is not None:
            best[0].close()
        best = (store, found)
    if best is None:
        raise CheckpointError(f"no checkpoint for {ref!r}; "
                              "`choragos checkpoints` lists the ones there are")
    return best[0]


def list_all(workdir: Path | str) -> tuple[list[Checkpoint], list[Tree]]:
    """Every checkpoint of every tree there is, newest first, and the gone
    worktrees whose checkpoints are left (not listed)."""
    found: list[Checkpoint] = []
    gone = []
    for tree in trees(workdir):
        if tree.path is None:
            gone.append(tree)
            continue
        with open_tree(tree) as store:
            found += store.list()
    return sorted(found, key=lambda c: (c.created, c.name), reverse=True), gone


def prune_all(workdir: Path | str, keep: int) -> list[str]:
    """Keep the newest ``keep`` checkpoints of each tree; a gone worktree's
    checkpoints all go.  Returns the refs removed."""
    removed: list[str] = []
    for tree in trees(workdir):
        if tree.path is None:
            removed += drop_worktree(workdir, tree.name)
            continue
        with open_tree(tree) as store:
            removed += store.prune(keep)
    return removed


def drop_worktree(workdir: Path | str, name: str) -> list[str]:
    """Delete every checkpoint of worktree ``name`` (it was removed: nothing
    is left to restore them into).  Returns the refs removed."""
    with CheckpointStore(workdir) as store:
        return store.drop_namespace(name)


def _newer(one: Checkpoint, other: Checkpoint) -> bool:
    return (one.created, one.name) >= (other.created, other.name)


def _linked(common: Path) -> dict[str, Path]:
    """The repository's linked worktrees that are still there, by name."""
    found = {}
    folder = common / "worktrees"
    for entry in sorted(folder.iterdir()) if folder.is_dir() else []:
        try:
            gitfile = (entry / "gitdir").read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            continue
        top = Path(os.path.normpath(entry / gitfile)).parent  # relative paths: from entry
        if (top / ".git").is_file():
            found[worktree_name(entry, common)] = top
    return found


def _main_root(common: Path) -> Path | None:
    """The main tree seen from a linked worktree: the folder holding the
    shared ``.git`` (a bare repository, or a separate git directory, has none
    we can tell)."""
    return common.parent if common.name == ".git" and common.is_dir() else None
