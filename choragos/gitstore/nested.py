"""Which nested repositories hold work their own commit does not.

A checkpoint records a nested repository (a submodule, or any directory
holding a ``.git``) as a gitlink to its HEAD and never enters it, and a
rollback leaves it alone.  Work an agent left inside one -- a submodule's
files edited, a file added, a ``git init`` with files and no commit -- then
outlives the rollback, and a rollback that kept quiet about it would let
the operator believe the task undone.  So its plan asks of each nested
repository what ``git status`` would: walked as a checkpoint walks the main
tree (under that repository's own ignore rules, ids taken from its own
index where the stat data git recorded still holds), do its work tree and
its index hold what its HEAD commit holds?

Nothing is run and nothing is written, in the nested repository or
anywhere: git itself is not asked, as a repository an agent made can name
programs in its config (a clean filter, a filesystem monitor) that ``git
status`` would start.  A nested repository inside one is asked in turn, to
any depth.  One that cannot be read (a damaged ``.git``, a missing HEAD
commit, a directory it may not list) is named too: nothing vouches for it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from choragos.gitstore.ignore import ignore_settings, repository_rules
from choragos.gitstore.objects import ObjectWriter
from choragos.gitstore.walk import Records, UserIndex, Walker, read_user_index

_EMPTY_TREE = bytes.fromhex("4b825dc642cb6eb9a060e54bf8d69288fbee4904")


class _Hasher(ObjectWriter):
    """Ids only, never a write; an id the nested repository's index gives
    for a file whose stat data still matches is taken on the index's word,
    as ``git status`` takes it (its object is not looked up)."""

    def __init__(self) -> None:
        super().__init__(os.devnull, packs=False)

    def has(self, sha: bytes) -> bool:
        return True


def uncommitted(root: bytes, repos: Iterable[bytes], fs_now: int) -> list[bytes]:
    """The nested repositories among ``repos`` (paths below ``root`` such as
    ``b"lib/"``, as a walk lists them) and the ones inside those, whose work
    tree differs from their HEAD commit or that cannot be read; sorted
    paths without the trailing slash.  ``fs_now``: the walk's clock."""
    found: list[bytes] = []
    pending = list(repos)
    while pending:
        rel = pending.pop()
        differs, inner = _status(root + b"/" + rel.rstrip(b"/"), fs_now)
        if differs:
            found.append(rel.rstrip(b"/"))
        pending += [rel + path for path in inner]
    return sorted(found)


def _status(path: bytes, fs_now: int) -> tuple[bool, list[bytes]]:
    """Whether the repository at ``path`` differs from its HEAD (or cannot
    be read), and the nested repositories inside it."""
    from dulwich.repo import Repo  # loaded on use, as in checkpoints

    if not os.path.lexists(path + b"/.git"):
        # A gitlink git's index keeps for a directory that holds no
        # repository (a submodule not cloned): anything in it is outside
        # every checkpoint, and git has nothing to say about it.
        try:
            return bool(os.listdir(path)), []
        except OSError:
            return True, []
    try:
        repo = Repo(os.fsdecode(path))
    except Exception:  # any damage: nothing vouches for its files
        return True, []
    try:
        head = _head_tree(repo)
        index = read_user_index(repo.index_path())
        rules = repository_rules(repo.commondir(), ignore_settings(repo.get_config_stack()))
        walker = Walker(os.fsdecode(path), rules, _Hasher(), cache=Records(),
                        racy_from_ns=fs_now, user_index=lambda: index, write=False)
        scan = walker.run()
        return (scan.tree != head or bool(scan.stats.skipped)
                or _staged(index, scan.files())), scan.repos
    except Exception:
        return True, []
    finally:
        repo.close()


def _staged(index: UserIndex, files: dict[bytes, tuple[int, bytes]]) -> bool:
    """Whether the index holds other than the files, once they match HEAD: a
    change staged and then undone in the files (``git status`` shows it),
    a conflict, a file added with ``--intent-to-add``."""
    if len(index.entries) != len(index.paths):
        return True  # entries no commit holds as they stand (or a sparse checkout's)
    return {path: (entry[4], entry[5]) for path, entry in index.entries.items()} != files


def _head_tree(repo: object) -> bytes:
    """HEAD's tree id (binary); the empty tree's for a repository without a
    commit, whose every file is then uncommitted."""
    try:
        head = repo.refs[b"HEAD"]  # type: ignore[attr-defined]
    except KeyError:
        return _EMPTY_TREE
    return bytes.fromhex(repo.object_store[head].tree.decode())  # type: ignore[attr-defined]
