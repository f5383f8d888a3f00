"""The ``rollback`` command: restore the workspace to before a task.

The deck's board sends it (first with ``dry_run`` to show the plan, then
for the checkpoint ref the operator confirmed), and ``choragos rollback``
sends the ref it showed when a session runs, so a rollback is one more
control command: refused from inside a role, checked by the core's
registry and written to the event log.  A task done in a role's worktree
rolls back in that worktree; a remote role's, in its mirror here, and then
in its checkout on the host (its rollback hook).

The core (this policy) only decides: the restore itself runs on the checkpointer's
thread (in order with the snapshots queued there), and the dispatcher
waits for it there, so the core keeps answering every other request while
a big tree is restored.  Without a checkpointer (checkpoints off) it runs
on the core's thread; the checkpoint store's lock keeps it in order with a
``choragos rollback`` run in a shell.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from choragos.actors import messages as m
from choragos.actors.coreport import CorePort
from choragos.control import commands, wire

if TYPE_CHECKING:
    from choragos.actors.core import CoreState
    from choragos.gitstore.checkpoints import CheckpointStore, RollbackPlan

# The checkpoint store is imported where it is used: see choragos/actors/aftercare.py.

MAX_LISTED = 200  # paths per list in a plan's ack
# The checkpointer's answer arrives within the client's wait, so a client
# told "it did not finish" has not stopped listening first.
ANSWER_TIMEOUT = (commands.ROLLBACK_ANSWER_WITHIN or 0.0) - 10.0


class RollbackCommand:
    """A policy of the core, with no state of its own: it only decides where
    the rollback runs."""

    def __init__(self, port: CorePort, s: CoreState) -> None:
        self.port, self.s = port, s

    def command(self, request: dict) -> dict | m.Deferred:
        order = m.Rollback(request["target"], request["dry_run"],
                           request.get(wire.CALLER) or "operator")
        if self.s.checkpointer is None:
            return run_rollback(self.s.workdir, order, self.port.event)
        return m.Deferred(self.s.checkpointer, order, ANSWER_TIMEOUT)


def run_rollback(workdir: Path, order: m.Rollback, log_event: Callable[..., Any],
                 remote: Mapping[Path, Callable] | None = None) -> dict:
    """Carry out ``order`` in the tree that holds its checkpoint; the ack.
    ``remote``: the remote roles' mirrors and their rollback hooks."""
    from choragos.gitstore.checkpoints import CheckpointError, NotARepository
    from choragos.gitstore.checkpointtrees import open_for
    from choragos.remote.seat import SeatError

    target, by = order.target, order.by
    try:
        # The store of the checkpoint's own tree: a worktree role's task
        # rolls back in its worktree, never in the main tree.
        with open_for(workdir, target) as store:
            if order.dry_run:
                return wire.ok(**plan_fields(store.plan_rollback(target), store))
            reach = (remote or {}).get(store.root.resolve())
            result = (reach(lambda: store.rollback(target), target) if reach is not None
                      else store.rollback(target))
    except (CheckpointError, NotARepository, OSError, SeatError) as exc:
        if not order.dry_run:
            log_event("rollback failed", target=target, error=str(exc), by=by)
        return wire.error(f"cannot roll back to {target}: {exc}")
    saved = result.saved.task_id if result.saved is not None else None
    # The nested repositories it left as they are, named (never silently),
    # and the ones it put back, with what it did not undo there.
    left = {"submodules": result.submodules[:MAX_LISTED],
            "submodules_count": len(result.submodules),
            "nested_changes": result.nested_changes[:MAX_LISTED],
            "nested_changes_count": len(result.nested_changes),
            "nested_restored": result.nested_restored[:MAX_LISTED],
            "nested_notes": result.nested_notes[:MAX_LISTED]}
    log_event("rollback", target=target, checkpoint=result.checkpoint.ref,
              task=result.checkpoint.task_id, restored=len(result.restored),
              deleted=len(result.deleted), saved=saved, by=by, **left)
    return wire.ok(checkpoint=result.checkpoint.ref, task=result.checkpoint.task_id,
                   restored=len(result.restored), deleted=len(result.deleted), saved=saved,
                   saved_ref=result.saved.ref if result.saved is not None else None,
                   removed_dirs=len(result.removed_dirs), **left)


def plan_fields(plan: RollbackPlan, store: CheckpointStore) -> dict[str, Any]:
    """A rollback plan as the ack of a dry run carries it (with what
    ``choragos rollback`` shows of the checkpoint and of its tree)."""
    checkpoint = plan.checkpoint
    return {"checkpoint": checkpoint.ref, "name": checkpoint.name,
            "task": checkpoint.task_id, "role": checkpoint.role, "label": checkpoint.label,
            "created": checkpoint.created, "root": str(store.root),
            "worktree": store.worktree, "restore": plan.restore[:MAX_LISTED],
            "delete": plan.delete[:MAX_LISTED], "restore_count": len(plan.restore),
            "delete_count": len(plan.delete), "conflicts": plan.conflicts[:MAX_LISTED],
            "conflicts_count": len(plan.conflicts),
            "submodules": plan.submodules[:MAX_LISTED],
            "submodules_count": len(plan.submodules),
            "nested_changes": plan.nested_changes[:MAX_LISTED],
            "nested_changes_count": len(plan.nested_changes),
            "nested_restored": plan.nested_restored[:MAX_LISTED],
            "nested_notes": plan.nested_notes[:MAX_LISTED],
            "head_then": plan.head_then, "head_now": plan.head_now,
            "head_moved": plan.head_moved, "empty": plan.empty}
