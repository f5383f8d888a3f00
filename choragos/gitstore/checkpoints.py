"""Workspace checkpoints and rollback.

A checkpoint is a parentless git commit of the work tree -- tracked files and
untracked, non-ignored ones -- kept under
``refs/choragos/checkpoints/<epoch>-<task-id>``, or, for a linked worktree
(a role's ``.choragos/worktrees/<role>``), under
``refs/choragos/wt/<worktree>/checkpoints/<epoch>-<task-id>``: refs live in
the repository's shared git directory, so each work tree has its own
namespace and never lists, resolves or prunes another's.  Writing one never touches
the user's index, HEAD, branches, stash or files: objects go into the object
store and one ref is added.  Repeated checkpoints are incremental through a
private index (``<git dir>/choragos/index``, see :mod:`choragos.gitstore.walk`).

Rollback restores a checkpoint's files and deletes files created since,
after checkpointing the current state as ``pre-rollback-<task>`` so that the
rollback itself can be undone.  Ignored files are never touched, and neither
is HEAD: commits made since stay.

Everything here is synchronous and UI-free.  Failures raise
:class:`CheckpointError` with a reason; a caller that must not block (the
checkpointer before a delivery) logs it and carries on.
"""

from __future__ import annotations

import fcntl
import os
import re
import stat
import struct
import threading
import time
from collections.abc import Collection, Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from choragos.gitstore import nested, nestedfiles
from choragos.gitstore.ignore import IgnoreList, RuleStack, ignore_settings, repository_rules
from choragos.gitstore.objects import ObjectWriter, loose_blob, remove_stale_temporaries
from choragos.gitstore.treewatch import TreeWatch
from choragos.gitstore.treewrite import WorkTree, ancestors
from choragos.gitstore.walk import (
    MODE_GITLINK,
    MODE_LINK,
    MODE_TREE,
    Cache,
    Scan,
    ScanStats,
    UserIndex,
    Walker,
    load_cache,
    read_user_index,
    save_cache,
)

if TYPE_CHECKING:
    from dulwich.objects import Commit
    from dulwich.repo import Repo

REF_PREFIX = "refs/choragos/checkpoints/"
WORKTREE_REFS = "refs/choragos/wt/"  # + <worktree>/checkpoints/<epoch>-<task-id>
UNBORN = "unborn"
_IDENTITY = b"choragos <choragos@localhost>"
_TASK_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_UNSAFE_REF = re.compile(r"[^A-Za-z0-9._-]|\.\.")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069]")
_LOCK_WAIT = 30.0
# What this process last wrote to each private index (by path): the file's
# signature just after, and the tree its records describe.  The session's
# stores (the checkpointer's, the aftercare's) walk the same changes in turn.
_SAVED: dict[str, tuple[tuple, bytes]] = {}
_SAVED_LOCK = threading.Lock()


class NotARepository(Exception):
    """The directory is not inside a git work tree, so there is nothing to checkpoint."""


class CheckpointError(Exception):
    """A checkpoint or rollback could not be done; the message says why."""


@dataclass(frozen=True)
class Checkpoint:
    """One checkpoint: its ref, the task and role it was taken for, the tree it saved."""

    ref: str  # full ref name
    task_id: str
    role: str
    label: str
    created: float  # epoch seconds
    head: str  # HEAD's commit id when the checkpoint was taken, or "unborn"
    commit: str
    tree: str
    worktree: str = ""  # the linked worktree it was taken in; "" for the main tree

    @property
    def name(self) -> str:
        """The ref name without its prefix: ``<epoch>-<task-id>``."""
        return self.ref.rpartition("/")[2]

    def to_json(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class RollbackPlan:
    """What rolling back to ``checkpoint`` would change, paths relative to the root."""

    checkpoint: Checkpoint
    restore: list[str]  # differ from the checkpoint or are missing
    delete: list[str]  # present now (not ignored) but not in the checkpoint
    head_then: str
    head_now: str
    conflicts: list[str]  # ignored or foreign content in the way; rollback refuses
    submodules: list[str]  # nested repositories at another commit; left alone
    # Nested repositories (at any depth) holding work not committed there,
    # with a work tree other than the checkpoint recorded (or gone), or
    # that cannot be read: left as they are, named.
    nested_changes: list[str] = field(default_factory=list)
    # Nested repositories whose files the checkpoint kept: their files in
    # ``restore`` and ``delete`` put them back as they were (their HEAD,
    # index and refs are never touched); what is not undone there, said.
    nested_restored: list[str] = field(default_factory=list)
    nested_notes: list[str] = field(default_factory=list)

    @property
    def head_moved(self) -> bool:
        return self.head_then != self.head_now

    @property
    def empty(self) -> bool:
        return not (self.restore or self.delete)


@dataclass(frozen=True)
class RollbackResult:
    """What a rollback did: files restored and deleted, the state saved first, HEAD then
    and now, and the nested repositories it left as they are (as in its plan)."""

    checkpoint: Checkpoint
    saved: Checkpoint | None  # the state before (pre-rollback-<task>); None if nothing changed
    restored: list[str]
    deleted: list[str]
    removed_dirs: list[str]
    head_then: str
    head_now: str
    submodules: list[str] = field(default_factory=list)  # as in the plan: left alone
    nested_changes: list[str] = field(default_factory=list)
    nested_restored: list[str] = field(default_factory=list)  # as in the plan
    nested_notes: list[str] = field(default_factory=list)

    @property
    def head_moved(self) -> bool:
        return self.head_then != self.head_now


class CheckpointStore:
    """Checkpoints of the git work tree containing ``workdir``.

    A ``workdir`` below the top of a repository checkpoints the whole work
    tree of that repository: a rollback restores every file git would see,
    not just those under ``workdir``.

    Use one instance per thread (it keeps its caches in memory between
    calls).  Instances and processes working on one repository take turns
    through a lock file, so a ``choragos rollback`` in a shell waits for the
    session's checkpointer and the other way round.

    ``watch=True`` (a long-lived store, like the session's checkpointer)
    watches the directories it walks (:mod:`choragos.gitstore.treewatch`): a snapshot
    of a tree in which nothing changed since the last walk reuses that walk's
    tree instead of walking again, whenever the watch can vouch for it; and a
    snapshot after a few changes looks only at the entries the watch named,
    starting from this store's own last walk kept in memory (the private
    index on disk, which another store may have rewritten since, is then
    not read).
    """

    def __init__(self, workdir: Path | str, *, watch: bool = False) -> None:
        self.workdir = Path(workdir)
        self._repo = _open_repo(self.workdir)
        self.root = Path(self._repo.path)
        self._state = Path(self._repo.controldir()) / "choragos"
        self.common_dir = Path(os.path.realpath(self._repo.commondir()))
        # A linked worktree shares the refs of its main tree: its own namespace.
        self.worktree = worktree_name(self._repo.controldir(), self.common_dir)
        self.ref_prefix = worktree_prefix(self.worktree) if self.worktree else REF_PREFIX
        self._ignore_memo: dict[bytes, IgnoreList] = {}
        self._cache_memo: tuple[tuple, Cache] | None = None
        self._index_memo: tuple[tuple, UserIndex] | None = None
        self._settings_memo: tuple[tuple, tuple[str, bool]] | None = None
        self._cache_ref: str | None = None  # the ref holding the private index's commit
        self.last_stats: ScanStats | None = None
        self._watch = TreeWatch(self.root) if watch else None
        # What the last walk depended on besides the files: (tree, ignore
        # rules outside the tree, the user's index, .gitmodules), and its stats.
        self._last_walk: tuple[tuple, ScanStats] | None = None
        # The last walk's records, while a checkpoint (ref, cache) holds
        # their objects: the start of the next walk when the watch can say
        # what changed since.  None after a walk that saved no checkpoint.
        self._own: tuple[str, Cache] | None = None
        self._swept = False  # stale temporaries removed (remove_stale_temporaries)
        self._nested = nested.Survey()  # the nested repositories' last walks
        # Each checkpoint as last described, by (name, commit): a commit never
        # changes, so a prune or a listing reads only the commits it has not
        # seen (a session prunes every few snapshots; reading every kept
        # commit again made a delivery's snapshot wait behind tens of ms).
        self._described: dict[tuple[str, str], Checkpoint] = {}

    def close(self) -> None:
        """Release the repository's open files (pack maps) and the watch."""
        self._repo.close()
        if self._watch is not None:
            self._watch.close()

    def __enter__(self) -> CheckpointStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- public API

    def snapshot(self, task_id: str, role: str, label: str, *,
                 now: float | None = None) -> Checkpoint:
        """Checkpoint the work tree before ``task_id`` goes to ``role``."""
        _check_task_id(task_id)
        when = time.time() if now is None else now
        with self._failures(f"checkpoint for {task_id}"), self._locked() as fs_now:
            scan = self._unchanged_scan() or self._scan(fs_now, write=True)
            return self._commit(scan, task_id, role, label, when, self._survey(scan, fs_now))

    def tree_now(self) -> str:
        """The work tree as a git tree id, objects stored, no ref or checkpoint
        added: what a task's changes are measured against its checkpoint with."""
        with self._failures("reading the work tree"), self._locked() as fs_now:
            return self._scan(fs_now, write=True).tree.hex()

    def list(self) -> list[Checkpoint]:
        """Every checkpoint, newest first."""
        with self._failures("listing checkpoints"):
            refs = self._refs()
            found = [self._describe(name, oid) for name, oid in refs.items()]
        # What is no longer listed is forgotten: the memo holds the refs there are.
        self._described = {(c.name, c.commit): c for c in found}
        return sorted(found, key=_age_key, reverse=True)

    def resolve(self, target: str) -> Checkpoint:
        """``T3`` (newest checkpoint for T3), ``pre-rollback-T3``, a full ref
        name, or ``<epoch>-<task>``."""
        # A ref or a name is read on its own: a session's checkpoints number
        # one per task until the next prune, and every work-done resolves one.
        if target.startswith("refs/"):
            name = target.removeprefix(self.ref_prefix)
            oid = self._ref(name) if target.startswith(self.ref_prefix) else None
            if oid is None:
                raise CheckpointError(f"no checkpoint ref named {target}")
            return self._describe(name, oid)
        oid = self._ref(target)
        if oid is not None:
            return self._describe(target, oid)
        with self._failures("reading checkpoints"):
            refs = self._refs()
        matches = [self._describe(n, oid) for n, oid in refs.items() if _task_of(n) == target]
        if not matches:
            raise CheckpointError(f"no checkpoint for {target!r}; "
                                  "`choragos checkpoints` lists the ones there are")
        return max(matches, key=_age_key)

    def prune(self, keep: int, at_work: Collection[str] = ()) -> list[str]:
        """Delete all but the newest ``keep`` checkpoints, and never one of a
        task in ``at_work`` (ids: a task still at work is measured against
        its checkpoint); returns the refs removed."""
        if keep < 0:
            raise CheckpointError("keep must be 0 or more")
        with self._failures("pruning checkpoints"), self._locked():
            listed = self.list()
            points = [c for c in listed if not is_done_point(c.task_id)]
            doomed = [c for c in points[keep:] if c.task_id not in at_work]
            # A snapshot taken at a report is half of its task's diff: it goes
            # with the task's checkpoint, and does not count towards ``keep``.
            kept = {c.task_id for c in points} - {c.task_id for c in doomed}
            doomed += [c for c in listed if is_done_point(c.task_id)
                       and c.task_id.removeprefix(DONE_PREFIX) not in kept]
            for checkpoint in doomed:
                self._delete_ref(checkpoint)
        return [c.ref for c in doomed]

    def plan_rollback(self, target: str | Checkpoint) -> RollbackPlan:
        """What :meth:`rollback` would change now; nothing is written."""
        checkpoint = self._target(target)
        with self._failures("planning the rollback"), self._locked() as fs_now:
            scan = self._scan(fs_now, write=False)
            return self._plan(checkpoint, scan, fs_now).plan

    def rollback(self, target: str | Checkpoint) -> RollbackResult:
        """Restore ``target``'s files, first saving the current state as
        ``pre-rollback-<task>``.  Refuses (changing nothing) on conflicts;
        when the files already match, changes and saves nothing."""
        checkpoint = self._target(target)
        # Until the changes begin (they fail "part way", saying so), a
        # failure leaves the files as they were: the message says that too.
        with self._failures("rollback", then="nothing was changed"), \
                self._locked() as fs_now:
            scan = self._scan(fs_now, write=True)
            made = self._plan(checkpoint, scan, fs_now)
            plan, then = made.plan, made.then
            if plan.conflicts:
                raise CheckpointError(_conflict_message(plan.conflicts))
            self._check_objects(then, plan.restore, made.sources)
            if plan.empty:
                # Saving an identical state would hide the pre-rollback
                # checkpoint of a rollback that did change something.
                return RollbackResult(checkpoint, None, [], [], [], plan.head_then,
                                      plan.head_now, plan.submodules, plan.nested_changes,
                                      plan.nested_restored, plan.nested_notes)
            saved = self._commit(scan, undo_name(checkpoint.task_id), "choragos",
                                 f"before rolling back to {checkpoint.name}", time.time(),
                                 made.found)
            try:
                return self._apply(plan, then, saved)
            except Exception as exc:
                # Some files may have changed already: say where the way back is.
                raise CheckpointError(
                    f"rollback failed part way: {_reason(exc)}; the files as they were "
                    f"before it are saved as {saved.task_id}: `choragos rollback "
                    f"{saved.task_id}` puts them back") from exc

    # ---- scanning and committing

    def _scan(self, fs_now: int, *, write: bool) -> Scan:
        """Walk the work tree; ``write`` stores the objects, which
        :meth:`_commit` then needs."""
        watch = self._watch
        # Before anything is read: a later change is an event.
        dirty = watch.begin_walk() if watch is not None else None
        depends = self._walk_depends()
        own = self._own_cache(depends) if dirty is not None else None
        self._own = None  # until this walk's checkpoint holds its records
        cache = own or self._valid_cache()
        writer = ObjectWriter(self._repo.object_store.path, self._repo.object_store.alternates)
        try:
            walker = Walker(str(self.root), self._rules(), writer, cache=cache.records,
                            racy_from_ns=fs_now, user_index=self._user_index, write=write,
                            before_listing=watch.watch if watch is not None else None,
                            dirty=dirty if own is not None else None)
            scan = walker.run()
        finally:
            writer.close()
        self.last_stats = scan.stats
        if scan.tree != cache.tree:
            scan.changed = True
        if watch is not None:
            if scan.repos:
                # A nested repository's HEAD and files change where no
                # watch sees (its files are surveyed at each checkpoint).
                watch.distrust()
            self._last_walk = ((scan.tree, *depends), scan.stats)
        return scan

    def _own_cache(self, depends: tuple) -> Cache | None:
        """This store's last walk, if the next walk may start from it: the
        walk the watch's account of changes runs from, its checkpoint still
        there, and nothing outside the watch changed since."""
        own, last = self._own, self._last_walk
        if own is None or last is None or last[0] != (own[1].tree, *depends):
            return None
        return own[1] if self._holds(own[0], own[1].commit) else None

    def _walk_depends(self) -> tuple:
        """What a walk's result depends on outside the watched directories."""
        return (self._rules().key, _signature(self._repo.index_path()))

    def _unchanged_scan(self) -> Scan | None:
        """The last walk's result, when the watch vouches that nothing changed
        since it began and nothing it cannot see changed either; else None."""
        watch, last = self._watch, self._last_walk
        if watch is None or last is None or not watch.unchanged():
            return None
        depends = self._walk_depends()
        cache = self._own_cache(depends) or self._valid_cache()
        if (cache.tree, *depends) != last[0]:
            return None
        self.last_stats = ScanStats(files=last[1].files, dirs=last[1].dirs, walked=False)
        # Records are left out: a snapshot needs only the tree (unchanged, so
        # the private index stays as it is); a rollback always walks.
        return Scan(cache.tree, self.last_stats, {}, False, cache.records)

    def _commit(self, scan: Scan, task_id: str, role: str, label: str, when: float,
                found: list[nested.Nested]) -> Checkpoint:
        _check_task_id(task_id)
        if not self._swept:  # once per store: its first checkpoint (or undo point)
            self.remove_stale_temporaries()
        head = self._head()
        more, parent = self._keep_nested(found, when) if found else ([], None)
        commit = _new_commit(scan.tree, when, _message(
            task_id, clean_text(role, 64), clean_text(label), when, head,
            nested.trailers(found) + more))
        commit.parents = [parent] if parent is not None else []
        self._store_commit(commit)
        name = self._add_ref(int(when), task_id, commit.id)
        records = scan.previous  # the same, unless the walk changed them
        if scan.changed:
            # Unchanged records stay valid under the older checkpoint they name.
            records = scan.previous.replaced_by(scan.records)
            if ((self._watch is None or not self._index_describes(scan.tree))
                    and self._save_cache(Cache(commit.id, scan.tree, records))):
                self._cache_ref = self.ref_prefix + name
        if not scan.stats.walked and self._own is not None:
            records = self._own[1].records  # the walk reused: still this store's own
        if scan.stats.walked or self._own is not None:
            self._own = (self.ref_prefix + name, Cache(commit.id, scan.tree, records))
        return self._describe(name, commit.id.decode())

    def _keep_nested(self, found: list[nested.Nested], when: float
                     ) -> tuple[list[str], bytes | None]:
        """Store what the nested repositories hold that their commits do not
        (:mod:`choragos.gitstore.nestedfiles`): the lines naming their HEADs,
        and the commit holding their files, the checkpoint's parent (None
        when every one matches its commit)."""
        readable = [(n.path, n.head, n.differs, n.gone) for n in found if n.head]
        if not readable:
            return [], None
        objects = self._repo.object_store
        writer = ObjectWriter(objects.path, objects.alternates)
        try:
            kept = nestedfiles.store(writer, os.fsencode(self.root), readable)
            tree = (nestedfiles.write_tree(writer, kept.files) if kept.files or kept.gone
                    else None)
            writer.finish()
        finally:
            writer.close()
        lines = nestedfiles.head_lines(kept.heads)
        if tree is None:
            return lines, None
        parent = _new_commit(tree, when, nestedfiles.gone_message(kept.gone))
        self._store_commit(parent)
        return lines, parent.id

    def _store_commit(self, commit: Commit) -> None:
        """Through a temporary named for this process (dulwich's own lock file
        carries no owner), so what a kill leaves is swept at the next start."""
        writer = ObjectWriter(self.objects_dir(), packs=False)
        try:
            writer.put(b"commit", commit.as_raw_string())
            writer.finish()
        finally:
            writer.close()

    def remove_stale_temporaries(self) -> int:
        """What a killed checkpoint left (temporary objects, packs, the private
        index's temporary), for a process that no longer runs; how many went."""
        self._swept = True
        return remove_stale_temporaries(self.objects_dir(), self._state)

    def _add_ref(self, epoch: int, task_id: str, commit_id: bytes) -> str:
        # Two checkpoints of one task within a second get successive epochs,
        # which keeps ref names unique and ordered.
        for offset in range(1000):
            name = f"{epoch + offset}-{task_id}"
            if self._repo.refs.add_if_new((self.ref_prefix + name).encode(), commit_id):
                return name
        raise CheckpointError(f"could not find a free ref name for {task_id}")

    def _delete_ref(self, checkpoint: Checkpoint) -> None:
        self._remove_ref(checkpoint.ref, checkpoint.commit)

    def _remove_ref(self, ref: str, commit: str) -> None:
        self._repo.refs.remove_if_equals(ref.encode(), commit.encode())
        # git keeps reflogs for such refs only with core.logAllRefUpdates=always.
        with suppress(FileNotFoundError):
            os.unlink(os.path.join(self._repo.commondir(), "logs", ref))

    def drop_namespace(self, name: str) -> list[str]:
        """Delete every checkpoint of the linked worktree ``name`` (one that
        was removed: there is nothing left to restore them into); returns the
        refs removed."""
        if not name or name.startswith(".") or _UNSAFE_REF.search(name):
            raise CheckpointError(f"{clean_text(name, 60)!r} names no worktree")
        prefix = worktree_prefix(name)
        with self._failures("removing checkpoints"), self._locked():
            found = self._repo.refs.as_dict(prefix.rstrip("/").encode())
            for key, oid in found.items():
                self._remove_ref(prefix + os.fsdecode(key), oid.decode())
        return sorted(prefix + os.fsdecode(key) for key in found)

    def _holds(self, ref: str | None, commit: bytes) -> bool:
        """Whether ``ref`` exists and names ``commit``."""
        if ref is None:
            return False
        try:
            return self._repo.refs[ref.encode()] == commit
        except KeyError:
            return False

    def objects_dir(self) -> str:
        """The repository's object directory (where a crash may leave temporaries)."""
        return self._repo.object_store.path

    def _refs(self) -> dict[str, str]:
        found = self._repo.refs.as_dict(self.ref_prefix.rstrip("/").encode())
        return {os.fsdecode(k): v.decode() for k, v in found.items()}

    def _ref(self, name: str) -> str | None:
        """The commit checkpoint ``name`` (``<epoch>-<task>``) names, or None."""
        if not name or "/" in name or name.startswith("."):
            return None  # not a checkpoint's name: never a path elsewhere under refs/
        with self._failures("reading checkpoints"):
            try:
                return self._repo.refs[(self.ref_prefix + name).encode()].decode()
            except (KeyError, ValueError):  # none, or a name git would not take
                return None

    def _ref_of(self, commit: bytes) -> str | None:
        """The ref of checkpoint ``commit``, found from the commit's own time and
        task (the name it was given) rather than by reading every ref."""
        with suppress(KeyError, ValueError, AttributeError):
            found = self._repo.object_store[commit]
            task = _trailers(found.message.decode("utf-8", "replace")).get("Task", "")
            for offset in range(3):  # a second checkpoint of a task within a second
                ref = f"{self.ref_prefix}{found.commit_time + offset}-{task}"
                if task and self._holds(ref, commit):
                    return ref
        return None

    def names_everywhere(self) -> list[str]:
        """The name (``<epoch>-<task>``) of every checkpoint of every tree of
        the repository, read from the refs alone: what task ids were used."""
        with self._failures("listing checkpoints"):
            keys = self._repo.refs.keys(b"refs/choragos")
        return [os.fsdecode(key).rpartition("/")[2] for key in keys
                if b"checkpoints/" in b"/" + key]

    def worktree_namespaces(self) -> list[str]:
        """The linked worktrees that hold checkpoints in this repository
        (whether or not the worktree is still there), by name."""
        with self._failures("listing checkpoints"):
            keys = self._repo.refs.keys(WORKTREE_REFS.rstrip("/").encode())
        return sorted({os.fsdecode(k).partition("/")[0] for k in keys
                       if os.fsdecode(k).partition("/")[2].startswith("checkpoints/")})

    def _describe(self, name: str, oid: str) -> Checkpoint:
        known = self._described.get((name, oid))
        if known is not None:
            return known
        described = self._described[name, oid] = self._read_checkpoint(name, oid)
        return described

    def _read_checkpoint(self, name: str, oid: str) -> Checkpoint:
        fields: dict[str, str] = {}
        tree = ""
        with suppress(KeyError, ValueError, AttributeError):
            commit = self._repo.object_store[oid.encode()]
            tree = commit.tree.decode()
            fields = _trailers(commit.message.decode("utf-8", "replace"))
        epoch = name.partition("-")[0]
        created = _parse_time(fields.get("Time", "")) or float(epoch if epoch.isdigit() else 0)
        return Checkpoint(self.ref_prefix + name, fields.get("Task", _task_of(name)),
                          fields.get("Role", ""), fields.get("Label", ""), created,
                          fields.get("Head", ""), oid, tree, self.worktree)

    def _target(self, target: str | Checkpoint) -> Checkpoint:
        if not isinstance(target, Checkpoint):
            return self.resolve(target)
        if not target.ref.startswith(self.ref_prefix):
            # Another tree's files must never be restored into this one.
            raise CheckpointError(f"{target.ref} is a checkpoint of another work tree, "
                                  f"not of {self.root}; nothing was changed")
        return target

    def _head(self) -> str:
        try:
            return self._repo.refs[b"HEAD"].decode()
        except KeyError:
            return UNBORN

    # ---- what a walk needs

    def _rules(self) -> RuleStack:
        return repository_rules(self._repo.commondir(), self._ignore_settings(),
                                self._ignore_memo)

    def _ignore_settings(self) -> tuple[str, bool]:
        """The user's ignore file and ``core.ignorecase``.  Every snapshot asks,
        and parsing git's config files cost more than the rest of an unchanged
        tree's snapshot: they are read again only when one of them changed."""
        key = tuple(_signature(path) for path in self._config_paths())
        if self._settings_memo is None or self._settings_memo[0] != key:
            self._settings_memo = (key, ignore_settings(self._repo.get_config_stack()))
        return self._settings_memo[1]

    def _config_paths(self) -> list[str]:
        """The config files git reads for this repository, as git finds them
        (an ``include`` inside one is not followed here: a file it names
        that changes on its own goes unseen until one of these changes)."""
        env = os.environ
        paths = [os.path.join(self._repo.commondir(), "config"),
                 os.path.join(self._repo.controldir(), "config.worktree")]
        if "GIT_CONFIG_GLOBAL" in env:
            paths.append(env["GIT_CONFIG_GLOBAL"])
        else:
            xdg = env.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
            paths += [os.path.expanduser("~/.gitconfig"), os.path.join(xdg, "git", "config")]
        if "GIT_CONFIG_SYSTEM" in env:
            paths.append(env["GIT_CONFIG_SYSTEM"])
        elif "GIT_CONFIG_NOSYSTEM" not in env:
            paths.append("/etc/gitconfig")
        return paths

    def _user_index(self) -> UserIndex:
        path = self._repo.index_path()
        sig = _signature(path)
        if self._index_memo is None or self._index_memo[0] != sig:
            try:
                index = read_user_index(path)
            except (ValueError, IndexError, struct.error):
                # An index we cannot parse only costs us tracked-but-ignored
                # files and seeding; a checkpoint without them beats none.
                index = UserIndex([], {}, 0)
            self._index_memo = (sig, index)
        return self._index_memo[1]

    def _valid_cache(self) -> Cache:
        """The private index, if the checkpoint it describes still exists:
        its objects are only safe from ``git gc`` while a ref holds them."""
        path = str(self._state / "index")
        sig = _signature(path)
        if self._cache_memo is not None and self._cache_memo[0] == sig:
            cache = self._cache_memo[1]
        else:
            cache = load_cache(path)
        if not cache.commit:
            return Cache()
        if not self._holds(self._cache_ref, cache.commit):
            # A store that did not write the index itself (another actor's)
            # finds its ref by name once.
            self._cache_ref = self._ref_of(cache.commit)
        if self._cache_ref is not None:
            # The usual case, without reading every checkpoint ref: their
            # number grows with the session until the next prune.
            self._cache_memo = (sig, cache)
            return cache
        live = self._refs()
        if cache.commit.decode() not in live.values():
            # Its checkpoint was pruned; another one with the same tree
            # protects the same objects.
            adopt = self._commit_with_tree(live.values(), cache.tree)
            if adopt is None:
                return Cache()
            cache = Cache(adopt.encode(), cache.tree, cache.records)
            self._save_cache(cache)
            return cache
        self._cache_memo = (sig, cache)
        return cache

    def _commit_with_tree(self, commits: Iterable[str], tree: bytes) -> str | None:
        for oid in commits:
            with suppress(KeyError, AttributeError, ValueError):
                if self._repo.object_store[oid.encode()].tree == tree.hex().encode():
                    return oid
        return None

    def _save_cache(self, cache: Cache) -> bool:
        """Write the private index; False when the disk would not take it.
        It is only a cache: the checkpoint is whole without it, and the file
        left on disk still describes the checkpoint it names, so a full
        disk costs the next walk time, not the checkpoint."""
        path = str(self._state / "index")
        try:
            save_cache(path, cache)
        except OSError:
            return False
        self._cache_memo = (_signature(path), cache)
        with _SAVED_LOCK:
            _SAVED[path] = (self._cache_memo[0], cache.tree)
        return True

    def _index_describes(self, tree: bytes) -> bool:
        """Whether the private index on disk is, as this process last wrote
        it, a walk of ``tree``.  Then a newer walk of the same tree (the
        other store's turn at the same change, or entries that came and
        went) need not write it again when the store keeps its walk in
        memory (a watched one): the index's records would only spare a walk
        without the watch a listing or a few ``lstat`` calls."""
        path = str(self._state / "index")
        with _SAVED_LOCK:
            saved = _SAVED.get(path)
        return saved is not None and saved[1] == tree and saved[0] == _signature(path)

    # ---- rollback

    def _plan(self, checkpoint: Checkpoint, scan: Scan, fs_now: int) -> _Made:
        """The plan, the checkpoint's files it was made from, and the nested
        repositories as they are (the undo point records them)."""
        now = scan.files()
        then = self._tree_files(checkpoint.tree)
        restore = sorted(p for p, v in then.items() if v[0] != MODE_GITLINK and now.get(p) != v)
        delete = sorted(p for p, v in now.items() if v[0] != MODE_GITLINK and p not in then)
        links = {p for p, v in (*now.items(), *then.items()) if v[0] == MODE_GITLINK}
        moved = sorted(p for p in links if now.get(p) != then.get(p))
        conflicts = _conflicts(os.fsencode(self.root), restore, set(delete))
        unseen = _unseen(os.fsencode(self.root), restore, now, delete)
        # Named once: below a path already in the way, the rest is too.
        conflicts = sorted({*conflicts, *(p for p in unseen if not ancestors([p]) & {*conflicts})})
        found = self._survey(scan, fs_now)
        message = self._message_of(checkpoint)
        back = self._nested_back(checkpoint, message, found)
        left = [p for p in nested.left_changed(found, nested.recorded(message))
                if p not in back.repos]
        then.update(back.then)
        plan = RollbackPlan(checkpoint, _decode(sorted(restore + back.restore)),
                            _decode(sorted(delete + back.delete)), checkpoint.head,
                            self._head(), _decode(sorted(conflicts + back.conflicts)),
                            _decode(moved), _decode(left), _decode(back.repos), back.notes)
        return _Made(plan, then, found, back.sources)

    def _survey(self, scan: Scan, fs_now: int) -> list[nested.Nested]:
        """The nested repositories the walk met, surveyed (none: no cost)."""
        if not scan.repos:
            return []
        return self._nested.run(os.fsencode(self.root), scan.repos, fs_now)

    def _message_of(self, checkpoint: Checkpoint) -> str:
        """``checkpoint``'s commit message ("" when it cannot be read)."""
        try:
            commit = self._repo.object_store[checkpoint.commit.encode()]
        except (KeyError, ValueError):
            return ""
        return commit.message.decode("utf-8", "replace")

    def _nested_back(self, checkpoint: Checkpoint, message: str,
                     found: list[nested.Nested]) -> _NestedBack:
        """How the nested repositories whose files ``checkpoint`` kept go
        back: the files to write and delete there (workspace paths), what is
        in their way, and what stays undone.  One the checkpoint kept
        nothing of (taken before they were kept, unreadable then or now)
        is left to :func:`nested.left_changed` to name."""
        back = _NestedBack()
        heads = nestedfiles.recorded_heads(message)
        if not heads or not found:
            return back
        kept, gone = self._kept_nested(checkpoint)
        recorded = nested.recorded(message)
        for repo in found:
            head = heads.get(repo.path)
            if head is None or repo.scan is None:
                continue
            if recorded.get(repo.path) != repo.tree:
                since = ((repo.differs, repo.gone, repo.was) if repo.head == head
                         else self._since_head(repo, head))
                if since is None:
                    back.notes.append(f"{os.fsdecode(repo.path)}: its commit at the checkpoint "
                                      f"({head[:12]}) is no longer in it, so its files are "
                                      "left as they are")
                    continue
                mine = {p: v for p, v in kept.items() if nestedfiles.owner(p, heads) == repo.path}
                lost = [p for p in gone if nestedfiles.owner(p, heads) == repo.path]
                back.add(os.fsencode(self.root), repo, since, mine, lost)
            back.repos.append(repo.path)
            if repo.head != head:
                back.notes.append(_moved_note(os.fsdecode(repo.path), head, repo.head))
            if nested.staged(repo):
                back.notes.append(f"{os.fsdecode(repo.path)}: what is staged there (its index) "
                                  "is left as it is; `git -C "
                                  f"{os.fsdecode(repo.path)} status` shows it")
        return back

    def _kept_nested(self, checkpoint: Checkpoint) -> tuple[nestedfiles.Files, list[bytes]]:
        """The nested repositories' files ``checkpoint`` kept, and the ones
        their HEADs held that were gone (workspace paths)."""
        commit = self._repo.object_store[checkpoint.commit.encode()]
        if not commit.parents:
            return {}, []
        parent = self._repo.object_store[commit.parents[0]]
        return (self._tree_files(parent.tree.decode()),
                nestedfiles.recorded_gone(parent.message.decode("utf-8", "replace")))

    def _since_head(self, repo: nested.Nested, head: str
                    ) -> tuple[nestedfiles.Files, list[bytes], nestedfiles.Files] | None:
        """Nested repository ``repo``'s work tree now against the HEAD it had
        at the checkpoint (:func:`nestedfiles.against_head`), or None when
        that commit cannot be read there.  Read with dulwich: git is never
        run in a repository an agent may have made."""
        from dulwich.repo import Repo  # see _open_repo

        assert repo.scan is not None
        try:
            opened = Repo(os.fsdecode(os.fsencode(self.root) + b"/" + repo.path))
        except Exception:  # any damage: its files cannot be told
            return None
        try:
            tree = (None if head == nestedfiles.UNBORN
                    else opened.object_store[head.encode()].tree.decode())
            return nestedfiles.against_head(lambda oid: nested.entries(opened, oid), tree,
                                            repo.scan.records)
        except (KeyError, ValueError, AttributeError, OSError):
            return None
        finally:
            opened.close()

    def _tree_files(self, tree: str) -> dict[bytes, tuple[int, bytes]]:
        if not tree:
            raise CheckpointError("the checkpoint's commit cannot be read")
        out: dict[bytes, tuple[int, bytes]] = {}
        stack = [(b"", tree.encode())]
        while stack:
            prefix, oid = stack.pop()
            for entry in self._repo.object_store[oid].iteritems():
                _check_name(entry.path)
                path = prefix + entry.path
                if entry.mode == MODE_TREE:
                    stack.append((path + b"/", entry.sha))
                else:
                    out[path] = (entry.mode, bytes.fromhex(entry.sha.decode()))
        return out

    def _check_objects(self, then: dict[bytes, tuple[int, bytes]], restore: list[str],
                       sources: dict[bytes, bytes]) -> None:
        """Refuse before changing anything if the checkpoint lost objects.  A
        nested repository's file its commit holds (``sources``: its path) is
        copied into this store first, so the restore reads one store."""
        store = self._repo.object_store
        writer = ObjectWriter(store.path, store.alternates)
        try:
            for path in restore:
                oid = then[os.fsencode(path)][1]
                if writer.has(oid):
                    continue
                data = self._nested_blob(sources.get(os.fsencode(path)), oid)
                if data is None:
                    raise CheckpointError(f"the checkpoint is damaged: the content of {path} "
                                          "is missing from the repository; nothing was changed")
                writer.put(b"blob", data)
            writer.finish()
        finally:
            writer.close()

    def _nested_blob(self, repo_path: bytes | None, oid: bytes) -> bytes | None:
        """A blob from nested repository ``repo_path``'s own store (None:
        not there, or no such repository)."""
        if repo_path is None:
            return None
        from dulwich.repo import Repo  # see _open_repo

        try:
            repo = Repo(os.fsdecode(os.fsencode(self.root) + b"/" + repo_path))
        except Exception:
            return None
        try:
            blob = repo.object_store[oid.hex().encode()]
            return blob.as_raw_string() if blob.type_name == b"blob" else None
        except (KeyError, ValueError, OSError):
            return None
        finally:
            repo.close()

    def _apply(self, plan: RollbackPlan, then: dict[bytes, tuple[int, bytes]],
               saved: Checkpoint) -> RollbackResult:
        restore = [os.fsencode(p) for p in plan.restore]
        with WorkTree(os.fsencode(self.root)) as tree:
            deleted = tree.delete([os.fsencode(p) for p in plan.delete])
            removed = tree.prune_dirs(deleted, ancestors(restore))
            for path in restore:
                mode, oid = then[path]
                if mode == MODE_LINK:
                    tree.write_link(path, self._content(oid))
                    continue
                pieces = loose_blob(self.objects_dir(), oid) or [self._content(oid)]
                tree.write_file(path, pieces, executable=mode & 0o100 != 0)
        return RollbackResult(plan.checkpoint, saved, plan.restore, _decode(deleted),
                              _decode(removed), plan.head_then, self._head(), plan.submodules,
                              plan.nested_changes, plan.nested_restored, plan.nested_notes)

    def _content(self, oid: bytes) -> bytes:
        """A blob's content, read whole (a pack's, a link's: small or rare)."""
        return self._repo.object_store[oid.hex().encode()].as_raw_string()

    # ---- plumbing

    @contextmanager
    def _locked(self) -> Iterator[int]:
        """Hold the store's lock; yields "now" on the filesystem's own clock,
        which decides which files are too fresh to trust their stat data."""
        self._state.mkdir(parents=True, exist_ok=True)
        fd = os.open(self._state / "lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW,
                     0o600)
        try:
            _flock(fd)
            os.utime(fd)
            yield os.fstat(fd).st_mtime_ns
        finally:
            os.close(fd)

    @contextmanager
    def _failures(self, doing: str, then: str = "") -> Iterator[None]:
        try:
            yield
        except (CheckpointError, NotARepository):
            raise
        except Exception as exc:  # every failure becomes a reason, never a crash
            tail = f"; {then}" if then else ""
            raise CheckpointError(f"{doing} failed: {_reason(exc)}{tail}") from exc


@dataclass
class _Made:
    """A plan and what carrying it out needs."""

    plan: RollbackPlan
    then: dict[bytes, tuple[int, bytes]]  # the checkpoint's files, nested ones too
    found: list[nested.Nested]  # the nested repositories as they are
    sources: dict[bytes, bytes]  # a nested file's path -> its repository (holding its blob)


@dataclass
class _NestedBack:
    """The nested repositories' part of a plan, workspace paths."""

    then: dict[bytes, tuple[int, bytes]] = field(default_factory=dict)
    restore: list[bytes] = field(default_factory=list)
    delete: list[bytes] = field(default_factory=list)
    conflicts: list[bytes] = field(default_factory=list)
    repos: list[bytes] = field(default_factory=list)  # put back (or already as they were)
    notes: list[str] = field(default_factory=list)
    sources: dict[bytes, bytes] = field(default_factory=dict)

    def add(self, root: bytes, repo: nested.Nested,
            since: tuple[nestedfiles.Files, list[bytes], nestedfiles.Files],
            kept: nestedfiles.Files, lost: list[bytes]) -> None:
        """Repository ``repo``'s files back as the checkpoint kept them
        (``kept`` and ``lost`` in workspace paths): checked as the main
        tree's are, against its own walk."""
        assert repo.scan is not None
        inside = repo.path + b"/"
        now = {p: v for p, v in repo.scan.files().items() if v[0] != MODE_GITLINK}
        then, delete = nestedfiles.back_to(
            now, since, {p.removeprefix(inside): v for p, v in kept.items()},
            [p.removeprefix(inside) for p in lost])
        restore = sorted(then)
        for path in restore:  # names read from its own commit: none may leave it
            for name in path.split(b"/"):
                _check_name(name)
        top = root + b"/" + repo.path
        conflicts = _conflicts(top, restore, set(delete))
        unseen = _unseen(top, restore, now, delete)
        conflicts += [p for p in unseen if not ancestors([p]) & {*conflicts}]
        for path in restore:
            self.then[inside + path] = then[path]
            if inside + path not in kept:
                self.sources[inside + path] = repo.path
        self.restore += [inside + p for p in restore]
        self.delete += [inside + p for p in delete]
        self.conflicts += [inside + p for p in sorted(set(conflicts))]


def _moved_note(path: str, then: str, now: str) -> str:
    """What a rollback does not undo in a nested repository whose HEAD moved."""
    if then == nestedfiles.UNBORN:
        return (f"{path}: it had no commit at the checkpoint and has {now[:12]} now: its "
                "commits are not undone (its files are put back as they were)")
    return (f"{path}: its HEAD moved from {then[:12]} to {now[:12]}: its commits are not "
            f"undone (its files are put back as they were); `git -C {path} reset {then[:12]}` "
            "undoes them, keeping the files")


def _new_commit(tree: bytes, when: float, message: bytes) -> Commit:
    """A parentless commit of ``tree`` (binary id), by choragos."""
    from dulwich.objects import Commit  # see _open_repo

    commit = Commit()
    commit.tree = tree.hex().encode()
    commit.parents = []
    commit.author = commit.committer = _IDENTITY
    commit.author_time = commit.commit_time = int(when)
    commit.author_timezone = commit.commit_timezone = 0
    commit.message = message
    return commit


# ---- helpers: repository, names, messages -------------------------------------------

def _open_repo(workdir: Path) -> Repo:
    # dulwich is imported where it is used: a session with checkpoints off
    # never loads it (10 MB of the server's memory).
    from dulwich.errors import NotGitRepository
    from dulwich.repo import Repo

    if not workdir.is_dir():
        raise NotARepository(f"{workdir} is not a directory.")
    try:
        repo = Repo.discover(str(workdir))
    except NotGitRepository:
        if os.environ.get("GIT_DIR"):
            raise NotARepository(_git_env_message("GIT_DIR", workdir, None)) from None
        raise NotARepository(
            f"{workdir} is not inside a git repository, so there are no checkpoints "
            "(run `git init` to have them).") from None
    if repo.bare:
        repo.close()
        raise NotARepository(f"{repo.path} is a bare git repository with no files to checkpoint "
                             "(serve in a clone's work tree to have them).")
    for name, ours in (("GIT_DIR", repo.controldir()), ("GIT_WORK_TREE", repo.path)):
        theirs = os.environ.get(name)
        if theirs and os.path.realpath(theirs) != os.path.realpath(ours):
            repo.close()
            raise NotARepository(_git_env_message(name, workdir, ours))
    return repo


def _git_env_message(name: str, workdir: Path, found: str | None) -> str:
    """Why checkpoints are off when the environment points git elsewhere:
    git (and the agents' git) would work on one repository, checkpoints and
    rollback on the one the directory's own ``.git`` leads to."""
    where = (f"the repository {workdir}'s own .git leads to ({found})" if found else
             f"a repository found through a .git in {workdir} or above, and there is none")
    return (f"{name} is set to {os.environ[name]}, but checkpoints can only follow {where}: "
            f"checkpoints are off, as a rollback would not restore what git here works on "
            f"(unset {name} to have them).")


def worktree_prefix(name: str) -> str:
    """Where the checkpoints of the linked worktree ``name`` are kept."""
    return f"{WORKTREE_REFS}{name}/checkpoints/"


def worktree_name(control_dir: str | Path, common_dir: str | Path) -> str:
    """git's name of the linked worktree whose git directory is ``control_dir``
    (``<common>/worktrees/<name>``; a role's worktree is named for the role),
    made safe as one ref name component; "" for the main tree."""
    control = os.path.realpath(control_dir)
    if control == os.path.realpath(common_dir):
        return ""
    name = _UNSAFE_REF.sub("-", os.path.basename(control)).lstrip(".-")
    return name.removesuffix(".lock") or "worktree"


def _check_task_id(task_id: str) -> None:
    if (not _TASK_ID.fullmatch(task_id) or ".." in task_id
            or task_id.endswith((".", ".lock"))):
        raise CheckpointError(f"{clean_text(task_id, 60)!r} cannot name a checkpoint: "
                              "use letters, digits, '.', '_' or '-'")


def _task_of(name: str) -> str:
    epoch, _, task = name.partition("-")
    return task if epoch.isdigit() else name


def _age_key(checkpoint: Checkpoint) -> tuple[float, int, str]:
    epoch = checkpoint.name.partition("-")[0]
    return (checkpoint.created, int(epoch) if epoch.isdigit() else 0, checkpoint.ref)


def clean_text(text: str, limit: int = 200) -> str:
    """One line of ``text`` with control and bidi characters removed, at most ``limit`` long."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    line = " ".join(_CONTROL.sub(" ", line).split())
    return line if len(line) <= limit else line[:limit - 1] + "…"


def _message(task_id: str, role: str, label: str, when: float, head: str,
             more: list[str]) -> bytes:
    stamp = datetime.fromtimestamp(when, UTC).isoformat(timespec="microseconds")
    subject = f"checkpoint {task_id}" + (f" for {role}" if role else "")
    lines = [subject, "", f"Choragos-Task: {task_id}", f"Choragos-Role: {role}",
             f"Choragos-Label: {label}", f"Choragos-Time: {stamp.replace('+00:00', 'Z')}",
             f"Choragos-Head: {head}", *more]
    return ("\n".join(lines) + "\n").encode()


def _trailers(message: str) -> dict[str, str]:
    fields = {}
    for line in message.splitlines():
        key, sep, value = line.partition(": ")
        if sep and key.startswith("Choragos-"):
            fields[key.removeprefix("Choragos-")] = value
    return fields


def _parse_time(text: str) -> float:
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        return 0.0


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        where = f" ({os.fsdecode(exc.filename)})" if exc.filename else ""
        return f"{exc.strerror}{where}"
    return str(exc) or type(exc).__name__


def _conflict_message(conflicts: list[str]) -> str:
    shown = ", ".join(conflicts[:5]) + (f" and {len(conflicts) - 5} more" if len(conflicts) > 5
                                         else "")
    return (f"rollback would overwrite ignored, unreadable or untracked content in the way: "
            f"{shown}; move it aside (or make it readable) and try again (nothing was changed)")


def _signature(path: str | bytes) -> tuple:
    try:
        st = os.stat(path)
    except OSError:
        return ()
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)


def _flock(fd: int) -> None:
    deadline = time.monotonic() + _LOCK_WAIT
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise CheckpointError("another choragos process has held the checkpoint "
                                      f"lock for {_LOCK_WAIT:.0f}s; try again") from None
            time.sleep(0.05)


def _decode(paths: list[bytes]) -> list[str]:
    return [os.fsdecode(p) for p in paths]


def _check_name(name: bytes) -> None:
    """Refuse tree entries that could write outside the work tree."""
    if not name or name in (b".", b"..") or b"/" in name or b"\0" in name \
            or name.lower() == b".git":
        raise CheckpointError(f"the checkpoint holds an unsafe path name {name!r}")


# ---- helpers: changing the work tree ------------------------------------------------

def _conflicts(root: bytes, restore: list[bytes], deleting: set[bytes]) -> list[bytes]:
    """Paths that block a restore and that rollback may not remove: a file
    or symlink where a directory must go, a directory holding content
    that is not being deleted (ignored files, nested repositories), or a
    nested repository that a restored file would go into (one made since
    the checkpoint: the walk never enters it, so the undo point does not
    hold the file the restore would write over)."""
    found: set[bytes] = set()
    kinds: dict[bytes, str | None] = {}
    for path in restore:
        for parent in sorted(ancestors([path])):
            if parent not in kinds:
                kinds[parent] = _kind(root + b"/" + parent)
                if kinds[parent] == "dir" and os.path.lexists(root + b"/" + parent + b"/.git"):
                    kinds[parent] = "repository"
            kind = kinds[parent]
            if kind == "dir":
                continue
            if kind == "repository":
                found.add(parent)
                break
            if kind is not None and parent not in deleting:
                found.add(parent)
            break  # nothing exists below a missing or doomed parent
        if _kind(root + b"/" + path) == "dir" and _holds_kept(root, path, deleting):
            found.add(path)
    return sorted(found)


def _unseen(root: bytes, restore: list[bytes], now: dict, delete: list[bytes]) -> list[bytes]:
    """What the plan would write over that its walk did not see: a file that
    is there but that the walk left out -- ignored by the rules now in force,
    unreadable, changed while it was read, in a directory it could not list.
    The undo point cannot hold it, so the rollback could not be undone: it
    is in the way like ignored content.  (A name the plan deletes that
    differs only in case is the same file on a case-insensitive disk.)"""
    folded = {path.lower() for path in delete}
    return [path for path in restore if path not in now and path.lower() not in folded
            and _kind(root + b"/" + path) == "other"]


def _kind(path: bytes) -> str | None:
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    return "dir" if stat.S_ISDIR(mode) else "other"


def _holds_kept(root: bytes, path: bytes, deleting: set[bytes]) -> bool:
    stack = [path]
    while stack:
        rel = stack.pop()
        with os.scandir(root + b"/" + rel) as entries:
            for entry in entries:
                child = rel + b"/" + entry.name
                if entry.is_dir(follow_symlinks=False):
                    stack.append(child)
                elif child not in deleting:
                    return True
    return False


UNDO_PREFIX = "pre-rollback-"
REDO_PREFIX = "pre-undo-"
DONE_PREFIX = "done-"  # the snapshot taken when a task reported (choragos/gitstore/taskdiff.py)


def done_name(task_id: str) -> str:
    """What the snapshot taken at ``task_id``'s report is saved under."""
    return DONE_PREFIX + task_id


def is_done_point(task_id: str) -> bool:
    return task_id.startswith(DONE_PREFIX)


def undo_name(task_id: str) -> str:
    """The task an undo point is saved under: ``pre-rollback-T3`` before a
    rollback to T3, ``pre-undo-T3`` before a rollback to ``pre-rollback-T3``
    (and ``pre-rollback-T3`` again before one to ``pre-undo-T3``).  Names never
    stack, and repeating a rollback finds the files already match."""
    if task_id.startswith(UNDO_PREFIX):
        return REDO_PREFIX + task_id.removeprefix(UNDO_PREFIX)
    return UNDO_PREFIX + task_id.removeprefix(REDO_PREFIX)


def is_undo_point(task_id: str) -> bool:
    return task_id.startswith((UNDO_PREFIX, REDO_PREFIX))
