"""The core's ``rollback`` command: restore the workspace to before a task.

The deck's board sends it (first with ``dry_run`` to show the plan, then
for the checkpoint ref the operator confirmed), so a rollback from the deck
is one more control command: refused from inside a role, run through the
core's registry and written to the event log.  A task done in a role's
worktree rolls back in that worktree.  The checkpoint store's lock
keeps it in order with the checkpointer's snapshots.
"""

from __future__ import annotations

from typing import Any

from choragos import wire
from choragos.checkpoints import CheckpointError, NotARepository, RollbackPlan
from choragos.checkpointtrees import open_for

MAX_LISTED = 200  # paths per list in a plan's ack


class RollbackCommand:
    """Mixed into CoreActor; ``self.s`` is its CoreState."""

    s: Any

    def _cmd_rollback(self, request: dict) -> dict:
        target, dry_run = request["target"], request["dry_run"]
        by = request.get(wire.CALLER) or "operator"
        try:
            # The store of the checkpoint's own tree: a worktree role's task
            # rolls back in its worktree, never in the main tree.
            with open_for(self.s.workdir, target) as store:
                if dry_run:
                    return wire.ok(**plan_fields(store.plan_rollback(target)))
                result = store.rollback(target)
        except (CheckpointError, NotARepository, OSError) as exc:
            if not dry_run:
                self._event("rollback failed", target=target, error=str(exc), by=by)
            return wire.error(f"cannot roll back to {target}: {exc}")
        saved = result.saved.task_id if result.saved is not None else None
        self._event("rollback", target=target, checkpoint=result.checkpoint.ref,
                    task=result.checkpoint.task_id, restored=len(result.restored),
                    deleted=len(result.deleted), saved=saved, by=by)
        return wire.ok(checkpoint=result.checkpoint.ref, task=result.checkpoint.task_id,
                       restored=len(result.restored), deleted=len(result.deleted), saved=saved)


def plan_fields(plan: RollbackPlan) -> dict[str, Any]:
    """A rollback plan as the ack of a dry run carries it."""
    return {"checkpoint": plan.checkpoint.ref, "name": plan.checkpoint.name,
            "task": plan.checkpoint.task_id, "restore": plan.restore[:MAX_LISTED],
            "delete": plan.delete[:MAX_LISTED], "restore_count": len(plan.restore),
            "delete_count": len(plan.delete), "conflicts": plan.conflicts[:MAX_LISTED],
            "head_then": plan.head_then, "head_now": plan.head_now,
            "head_moved": plan.head_moved, "empty": plan.empty}
