"""What the nested repositories of a work tree hold, for the checkpoints
that never enter them.

A checkpoint records a nested repository (a submodule, or any directory
holding a ``.git``) as a gitlink to its HEAD and never stores its files,
and a rollback leaves it alone.  Work an agent left inside one -- a
submodule's files edited, a file added, a ``git init`` with files and no
commit, a ``git stash`` of what was there -- then outlives the rollback,
and a rollback that kept quiet about it would let the operator believe the
task undone.  So each nested repository is surveyed, walked as a checkpoint
walks the main tree (under that repository's own ignore rules, ids taken
from its own index where the stat data git recorded still holds, nothing
written):

* its work tree's fingerprint -- the tree id ``git add -A`` would stage
  there -- which a checkpoint records in its commit message, so that a
  rollback's plan can tell a work tree that is not what it was;
* whether its work tree and index hold other than its HEAD commit, as
  ``git status`` would say.

Nothing is run: git itself is not asked, as a repository an agent made can
name programs in its config (a clean filter, a filesystem monitor) that
``git status`` would start.  A nested repository inside one is surveyed in
turn, to any depth.  One that cannot be read (a damaged ``.git``, a missing
HEAD commit, a directory it may not list) is "changed": nothing vouches
for it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field

from choragos.gitstore.ignore import ignore_settings, repository_rules
from choragos.gitstore.nestedfiles import UNBORN, Files, against_head
from choragos.gitstore.objects import ObjectWriter
from choragos.gitstore.walk import (
    MODE_GITLINK,
    Records,
    Scan,
    UserIndex,
    Walker,
    read_user_index,
)

_EMPTY_TREE = bytes.fromhex("4b825dc642cb6eb9a060e54bf8d69288fbee4904")
TRAILER = "Choragos-Nested: "  # + <work tree id> <path as a JSON string>


@dataclass(frozen=True)
class Nested:
    """One nested repository as a survey found it."""

    path: bytes  # relative to the work tree's root, no trailing slash
    tree: bytes  # its work tree's id (binary); b"" when it cannot be read
    changed: bool  # work tree or index other than its HEAD, or unreadable
    head: str = ""  # its HEAD commit (hex), "unborn", or "" when it cannot be read
    # Its work tree's files that differ from HEAD's, and HEAD's it lacks
    # (relative to it): what a checkpoint stores of it.
    differs: Files = field(default_factory=dict, compare=False, repr=False)
    gone: list[bytes] = field(default_factory=list, compare=False, repr=False)
    was: Files = field(default_factory=dict, compare=False, repr=False)  # HEAD's, there
    scan: Scan | None = field(default=None, compare=False, repr=False)  # its walk
    index: UserIndex | None = field(default=None, compare=False, repr=False)


class _Hasher(ObjectWriter):
    """Ids only, never a write; an id the nested repository's index gives
    for a file whose stat data still matches is taken on the index's word,
    as ``git status`` takes it (its object is not looked up)."""

    def __init__(self) -> None:
        super().__init__(os.devnull, packs=False)

    def has(self, sha: bytes) -> bool:
        return True


class Survey:
    """Surveys of one work tree's nested repositories.  Kept by a store, it
    remembers each one's last walk and index, so a survey of an unchanged
    nested repository costs an ``lstat`` per file and directory."""

    def __init__(self) -> None:
        self._walks: dict[bytes, Records] = {}
        self._indexes: dict[bytes, tuple[tuple, UserIndex]] = {}

    def run(self, root: bytes, repos: Iterable[bytes], fs_now: int) -> list[Nested]:
        """Every nested repository among ``repos`` (paths below ``root`` such
        as ``b"lib/"``, as a walk lists them) and inside those, sorted by
        path.  ``fs_now``: the walk's clock (what is newer is read again)."""
        found: list[Nested] = []
        pending = list(repos)
        seen: dict[bytes, Records] = {}
        while pending:
            rel = pending.pop()
            path = root + b"/" + rel.rstrip(b"/")
            nested, inner = self._one(rel.rstrip(b"/"), path, fs_now, seen)
            found.append(nested)
            pending += [rel + below for below in inner]
        self._walks = seen  # what is gone is forgotten
        self._indexes = {p: i for p, i in self._indexes.items() if p in seen}
        return sorted(found, key=lambda n: n.path)

    def _one(self, rel: bytes, path: bytes, fs_now: int,
             seen: dict[bytes, Records]) -> tuple[Nested, list[bytes]]:
        from dulwich.repo import Repo  # loaded on use, as in checkpoints

        if not os.path.lexists(path + b"/.git"):
            # A gitlink git's index keeps for a directory that holds no
            # repository (a submodule not cloned): anything in it is outside
            # every checkpoint, and git has nothing to say about it.
            try:
                return Nested(rel, _EMPTY_TREE, bool(os.listdir(path))), []
            except OSError:
                return Nested(rel, b"", True), []
        try:
            repo = Repo(os.fsdecode(path))
        except Exception:  # any damage: nothing vouches for its files
            return Nested(rel, b"", True), []
        try:
            commit, head = _head(repo)
            index = self._index(path, repo.index_path())
            rules = repository_rules(repo.commondir(), ignore_settings(repo.get_config_stack()))
            walker = Walker(os.fsdecode(path), rules, _Hasher(),
                            cache=self._walks.get(path) or Records(), racy_from_ns=fs_now,
                            user_index=lambda: index, write=False)
            scan = walker.run()
            differs, gone, was = ({}, [], {}) if scan.tree == head else against_head(
                lambda tree: entries(repo, tree), None if commit == UNBORN else head.hex(),
                scan.records)
        except Exception:
            return Nested(rel, b"", True), []
        finally:
            repo.close()
        seen[path] = Records(decoded=scan.records)
        changed = scan.tree != head or bool(scan.stats.skipped) or _staged(index, scan.files())
        if scan.stats.skipped:
            return Nested(rel, b"", changed), scan.repos
        return (Nested(rel, scan.tree, changed, commit, differs, gone, was, scan, index),
                scan.repos)

    def _index(self, path: bytes, index_path: str) -> UserIndex:
        try:
            st = os.stat(index_path)
            sig: tuple = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)
        except OSError:
            sig = ()
        known = self._indexes.get(path)
        if known is None or known[0] != sig or not sig:
            known = self._indexes[path] = (sig, read_user_index(index_path))
        return known[1]


def staged(found: Nested) -> bool:
    """Whether its index holds other than its HEAD (what a rollback leaves
    there); asked by a plan only, so a checkpoint never pays for it."""
    if found.scan is None or found.index is None:
        return False
    # HEAD's files: the walk's, with HEAD's own where they differ (a
    # repository inside is left out: its commit is its own affair).
    heads = {**{p: v for p, v in found.scan.files().items() if p not in found.differs},
             **found.was}
    return _staged(found.index, heads, MODE_GITLINK)


def _staged(index: UserIndex, files: dict[bytes, tuple[int, bytes]], leave: int = -1) -> bool:
    """Whether the index holds other than the files, once they match HEAD: a
    change staged and then undone in the files (``git status`` shows it),
    a conflict, a file added with ``--intent-to-add``."""
    if len(index.entries) != len(index.paths):
        return True  # entries no commit holds as they stand (or a sparse checkout's)
    if leave >= 0:  # entries of that mode left out on both sides
        files = {path: v for path, v in files.items() if v[0] != leave}
        return {path: (e[4], e[5]) for path, e in index.entries.items() if e[4] != leave} != files
    return {path: (entry[4], entry[5]) for path, entry in index.entries.items()} != files


def _head(repo: object) -> tuple[str, bytes]:
    """HEAD's commit (hex) and tree id (binary); "unborn" and the empty
    tree's for a repository without a commit, whose every file is then
    uncommitted."""
    try:
        head = repo.refs[b"HEAD"]  # type: ignore[attr-defined]
    except KeyError:
        return UNBORN, _EMPTY_TREE
    tree = repo.object_store[head].tree.decode()  # type: ignore[attr-defined]
    return head.decode(), bytes.fromhex(tree)


def entries(repo: object, tree: str) -> Files:
    """One tree's entries by name, from the nested repository's own store."""
    found = repo.object_store[tree.encode()].iteritems()  # type: ignore[attr-defined]
    return {e.path: (e.mode, bytes.fromhex(e.sha.decode())) for e in found}


def trailers(found: list[Nested]) -> list[str]:
    """The lines a checkpoint's commit message records ``found`` with."""
    return [f"{TRAILER}{n.tree.hex() or '-'} {json.dumps(os.fsdecode(n.path))}"
            for n in found]


def recorded(message: str) -> dict[bytes, bytes]:
    """The work tree id of each nested repository a checkpoint's commit
    message records (b"" for one it could not read); {} for none."""
    out: dict[bytes, bytes] = {}
    for line in message.splitlines():
        if line.startswith(TRAILER):
            tree, _, name = line.removeprefix(TRAILER).partition(" ")
            try:
                out[os.fsencode(json.loads(name))] = bytes.fromhex(tree) if tree != "-" else b""
            except ValueError:
                continue  # not a line this module wrote
    return out


def left_changed(now: list[Nested], then: dict[bytes, bytes]) -> list[bytes]:
    """The nested repositories a rollback to a checkpoint that recorded
    ``then`` leaves other than they were: work not committed there now,
    a work tree unlike the one recorded (or unreadable then), or one
    recorded that is gone."""
    here = {n.path for n in now}
    named = {n.path for n in now if n.changed or then.get(n.path, n.tree) != n.tree}
    return sorted(named | (then.keys() - here))
