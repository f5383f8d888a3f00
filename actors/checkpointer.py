"""The checkpointer: snapshots the workspace before each delivery.

Snapshots run here, off the core's thread, in arrival order, so deliveries
to one role keep their order.  A failure is reported, never raised into
the delegation: the task goes out unprotected and the event log says why.
"""

from __future__ import annotations

import time
from functools import singledispatchmethod
from typing import Any

from choragos.actors import messages as m
from choragos.actors.base import Actor
from choragos.checkpoints import CheckpointError, CheckpointStore


class CheckpointerActor(Actor):
    def __init__(self, store: CheckpointStore, core: Any, events: Any,
                 supervisor: Any = None) -> None:
        super().__init__("checkpointer", supervisor)
        self.store = store
        self.core = core
        self.events = events

    def on_shutdown(self) -> None:
        self.store.close()

    @singledispatchmethod
    def handle(self, message: Any) -> Any:
        return super().handle(message)

    @handle.register
    def _snapshot(self, msg: m.Snapshot) -> None:
        began = time.monotonic()
        try:
            checkpoint = self.store.snapshot(msg.task_id, msg.role, msg.label)
        except (CheckpointError, OSError) as exc:
            self.core.tell(m.CheckpointDone(msg.task_id, error=str(exc)))
            return
        self.core.tell(m.CheckpointDone(msg.task_id, ref=checkpoint.ref,
                                        seconds=round(time.monotonic() - began, 4)))

    @handle.register
    def _prune(self, msg: m.Prune) -> list[str]:
        try:
            removed = self.store.prune(msg.keep)
        except (CheckpointError, OSError) as exc:
            self.events.write("checkpoint prune failed", error=str(exc))
            return []
        if removed:
            self.events.write("checkpoints pruned", keep=msg.keep, removed=len(removed))
        return removed
