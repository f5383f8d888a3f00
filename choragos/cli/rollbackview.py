"""What ``choragos rollback`` shows: a plan and an outcome, read either from
the checkpoint store (no session runs) or from the acks of the session's
``rollback`` command, so both ways print the same lines."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from choragos.gitstore.checkpoints import Checkpoint, CheckpointStore, RollbackPlan, RollbackResult


@dataclass(frozen=True)
class Plan:
    """What a rollback would change, paths relative to ``root``; the lists may
    be cut short (the counts are whole)."""

    checkpoint: Checkpoint
    root: Path
    worktree: str  # the linked worktree rolled back in; "" for the main tree
    restore: list[str]
    delete: list[str]
    restore_count: int
    delete_count: int
    conflicts: list[str]
    conflicts_count: int
    submodules: list[str]
    submodules_count: int
    nested_changes: list[str]  # nested repositories holding uncommitted work: left alone
    nested_changes_count: int
    head_then: str
    head_now: str
    empty: bool
    # Nested repositories whose files it puts back, and what it does not undo there.
    nested_restored: list[str] = field(default_factory=list)
    nested_notes: list[str] = field(default_factory=list)

    @property
    def head_moved(self) -> bool:
        return self.head_then != self.head_now

    @classmethod
    def of(cls, store: CheckpointStore, plan: RollbackPlan) -> Plan:
        return cls(plan.checkpoint, store.root, store.worktree, plan.restore, plan.delete,
                   len(plan.restore), len(plan.delete), plan.conflicts, len(plan.conflicts),
                   plan.submodules, len(plan.submodules), plan.nested_changes,
                   len(plan.nested_changes), plan.head_then, plan.head_now, plan.empty,
                   plan.nested_restored, plan.nested_notes)

    @classmethod
    def of_ack(cls, ack: dict[str, Any]) -> Plan:
        """A dry run's ack.  The checkpoint is rebuilt for showing only: the
        ack names no commit or tree, and a rollback goes by its ref."""
        checkpoint = Checkpoint(
            ref=ack["checkpoint"], task_id=ack["task"], role=ack.get("role") or "",
            label=ack.get("label") or "", created=float(ack.get("created") or 0.0),
            head=ack.get("head_then") or "", commit="", tree="",
            worktree=ack.get("worktree") or "")
        conflicts, moved, nested = (list(ack.get(key) or [])
                                    for key in ("conflicts", "submodules", "nested_changes"))
        return cls(checkpoint, Path(ack["root"]), ack.get("worktree") or "",
                   list(ack["restore"]), list(ack["delete"]), int(ack["restore_count"]),
                   int(ack["delete_count"]), conflicts,
                   int(ack.get("conflicts_count", len(conflicts))), moved,
                   int(ack.get("submodules_count", len(moved))), nested,
                   int(ack.get("nested_changes_count", len(nested))),
                   ack.get("head_then") or "", ack.get("head_now") or "", bool(ack["empty"]),
                   list(ack.get("nested_restored") or []), list(ack.get("nested_notes") or []))


@dataclass(frozen=True)
class Done:
    """What a rollback did."""

    saved_task: str | None  # the undo point's name; None when nothing changed
    saved_ref: str | None
    restored: int
    deleted: int
    removed_dirs: int
    # Nested repositories left as they are: at another commit, holding uncommitted work.
    submodules: list[str]
    submodules_count: int
    nested_changes: list[str]
    nested_changes_count: int
    nested_restored: list[str] = field(default_factory=list)
    nested_notes: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, result: RollbackResult) -> Done:
        saved = result.saved
        return cls(saved.task_id if saved else None, saved.ref if saved else None,
                   len(result.restored), len(result.deleted), len(result.removed_dirs),
                   result.submodules, len(result.submodules), result.nested_changes,
                   len(result.nested_changes), result.nested_restored, result.nested_notes)

    @classmethod
    def of_ack(cls, ack: dict[str, Any]) -> Done:
        moved, nested = (list(ack.get(key) or []) for key in ("submodules", "nested_changes"))
        return cls(ack.get("saved"), ack.get("saved_ref"), int(ack.get("restored", 0)),
                   int(ack.get("deleted", 0)), int(ack.get("removed_dirs", 0)), moved,
                   int(ack.get("submodules_count", len(moved))), nested,
                   int(ack.get("nested_changes_count", len(nested))),
                   list(ack.get("nested_restored") or []), list(ack.get("nested_notes") or []))
