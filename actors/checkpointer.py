"""The checkpointer: snapshots the workspace before each delivery.

The delivery asks for a task's snapshot when its turn comes (just before
its line is typed), so a task queued behind others is checkpointed after
their work, not before it.

Snapshots run here, off the core's thread, in arrival order, so deliveries
to one role keep their order; so do the rollbacks the operator asks for,
between them.  A task for a ``worktree = true`` role is
checkpointed in that role's worktree (its own store, its own refs), not in
the main tree.  A failure is reported, never raised into the delegation:
the task goes out unprotected and the event log says why; so is a crash
of this actor mid-snapshot, before the supervisor restarts it.

Past ``[checkpoints] keep`` the oldest checkpoints are pruned at the
session's start and then every PRUNE_EVERY snapshots, so a session left
to run for hours holds a bounded number of refs; the checkpoint of a task
still at work is never pruned (its changes are measured against it).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from functools import singledispatchmethod
from pathlib import Path
from typing import Any

from choragos.actors import messages as m
from choragos.actors.base import Actor
from choragos.actors.rollbackcmd import run_rollback
from choragos.gitstore.checkpoints import CheckpointError, CheckpointStore, NotARepository

PRUNE_EVERY = 10  # snapshots of one tree between prunes while the session runs


class CheckpointerActor(Actor):
    def __init__(self, store: CheckpointStore, core: Any, events: Any,
                 supervisor: Any = None,
                 remote: Callable[[], Mapping[Path, Callable]] = dict) -> None:
        super().__init__("checkpointer", supervisor)
        self.remote = remote  # the remote roles' mirrors -> their rollback hooks
        self.store = store
        self.core = core
        self.events = events
        self.trees: dict[Path, CheckpointStore] = {}  # the roles' worktrees, opened on use
        self.keep: int | None = None  # the last prune's; a worktree is pruned when opened
        self.at_work: frozenset[str] = frozenset()  # the core's last word: tasks at work
        self._taken: dict[Path | None, int] = {}  # snapshots per tree since its last prune

    def on_shutdown(self) -> None:
        self.store.close()
        for store in self.trees.values():
            store.close()

    @singledispatchmethod
    def handle(self, message: Any) -> Any:
        return super().handle(message)

    @handle.register(m.Snapshot)
    def _snapshot(self, msg: m.Snapshot) -> None:
        began = time.monotonic()
        try:
            store = self._store(msg.tree)
            checkpoint = store.snapshot(msg.task_id, msg.role, msg.label)
        except (CheckpointError, NotARepository, OSError) as exc:
            self.core.tell(m.CheckpointDone(msg.task_id, error=str(exc)))
            return
        except BaseException as exc:
            # Nothing is typed into the role until the answer comes: a crash
            # here answers too (the task goes out unprotected, said in the
            # log), then goes on to the supervisor, which logs it and starts
            # a fresh checkpointer for the next snapshot.
            self.core.tell(m.CheckpointDone(msg.task_id, error=(
                f"the checkpointer crashed taking it ({type(exc).__name__}: {exc}); "
                f"it is restarted")))
            raise
        stats = store.last_stats
        self.core.tell(m.CheckpointDone(msg.task_id, ref=checkpoint.ref,
                                        seconds=round(time.monotonic() - began, 4),
                                        skipped=tuple(stats.skipped) if stats else ()))
        # Sent with the snapshot, so it names every task whose snapshot was
        # asked for before (still on its way here or not) that is not settled.
        self.at_work = msg.at_work | {msg.task_id}
        taken = self._taken[msg.tree] = self._taken.get(msg.tree, 0) + 1
        if self.keep is not None and taken >= PRUNE_EVERY:
            self._taken[msg.tree] = 0
            self._prune_one(store)

    @handle.register(m.Rollback)
    def _rollback(self, msg: m.Rollback) -> dict:
        """A rollback the core decided on; the ack goes to whoever waits for it."""
        return run_rollback(self.store.root, msg, self._log_event, self.remote())

    def _log_event(self, event: str, **fields: object) -> None:
        # Written here, before the ack, so the log has it when the client
        # hears; the core publishes it to the deck.
        self.core.tell(m.Announce(self.events.write(event, **fields)))

    @handle.register(m.Prune)
    def _prune(self, msg: m.Prune) -> list[str]:
        self.keep, self.at_work = msg.keep, msg.at_work
        removed = self._prune_one(self.store)
        for store in self.trees.values():
            removed += self._prune_one(store)
        return removed

    def _prune_one(self, store: CheckpointStore) -> list[str]:
        keep = self.keep if self.keep is not None else 0
        where = {"worktree": store.worktree} if store.worktree else {}
        try:
            removed = store.prune(keep, self.at_work)
        except (CheckpointError, OSError) as exc:
            self.events.write("checkpoint prune failed", error=str(exc), **where)
            return []
        if removed:
            self.events.write("checkpoints pruned", keep=keep, removed=len(removed), **where)
        return removed

    def _store(self, tree: Path | None) -> CheckpointStore:
        """The main tree's store, or the worktree's (long-lived, so it watches too)."""
        if tree is None:
            return self.store
        if tree not in self.trees:
            store = CheckpointStore(tree, watch=True)
            self.trees[tree] = store
            if self.keep is not None:
                self._prune_one(store)
        return self.trees[tree]
