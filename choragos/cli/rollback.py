"""``choragos rollback T3|REF``: restore the workspace to before a task.

A task done in a role's worktree restores that worktree (its checkpoints
are its own); the main tree and other worktrees are left alone.

Shows what would change, warns when HEAD moved or a session may be writing,
asks for confirmation (``--yes`` skips; without a terminal it refuses), then
rolls back after saving the current state as ``pre-rollback-<task>``.
"""

from __future__ import annotations

import os
import sys
import time
from contextlib import suppress
from pathlib import Path

from choragos import checkpointtrees, paths, wire
from choragos.checkpoints import CheckpointStore, RollbackPlan, RollbackResult
from choragos.cli import _client
from choragos.cli.checkpoints import describe, guarded, open_store, parser

_SHOWN = 20  # paths listed before "... and N more"


def run(argv: list[str], verb: str = "rollback") -> int:
    """Entry point for ``choragos rollback``."""
    return _client.guard(verb, lambda: _main(argv, verb))


def _main(argv: list[str], verb: str) -> int:
    made = parser(verb, "Restore the files of a checkpoint (the newest one for a task id, "
                        "or a full ref name) and delete files created since. Ignored files, "
                        "HEAD, branches, the index and the stash are left alone.")
    made.add_argument("target", help="a task id (T3), pre-rollback-T3, or a ref name")
    made.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    made.add_argument("--dry-run", action="store_true", help="only show what would change")
    args = made.parse_args(argv)
    with open_store() as here:
        workdir = here.workdir
    with guarded(lambda: checkpointtrees.open_for(workdir, args.target)) as store:
        plan = guarded(lambda: store.plan_rollback(args.target))
        _show_plan(store, plan)
        if plan.conflicts:
            raise _client.Failure(_client.EXIT_REFUSED, "nothing was changed: move the "
                                  "paths above aside (or delete them) and try again")
        if plan.empty or args.dry_run:
            return _client.EXIT_OK
        _refuse_inside_role()
        if not args.yes and not _confirmed():
            return _client.EXIT_REFUSED
        result = guarded(lambda: store.rollback(plan.checkpoint))
        _show_result(result)
    return _client.EXIT_OK


def _refuse_inside_role() -> None:
    """Rollback is an operator command: ask the session whether we run inside
    one of its roles (by process ancestry); without a session there is no team."""
    role = None
    with suppress(_client.Failure, wire.Unreachable, wire.WireError):
        sock, workdir = _client.socket_for(None)
        role = wire.request(sock, {"cmd": "whoami"}, 2.0, workdir=workdir).get("role")
    if role:
        raise _client.Failure(_client.EXIT_REFUSED, "rollback is an operator command and was "
                              f"run from inside the {role} role's process tree; nothing was "
                              "changed")


def _show_plan(store: CheckpointStore, plan: RollbackPlan) -> None:
    print(f"checkpoint {describe(plan.checkpoint, time.time())}")
    print(f"  ref {_client.inert(plan.checkpoint.ref)}")
    if store.worktree:
        print(f"  in the worktree {_client.inert(store.worktree)} at "
              f"{_client.inert(store.root)}; the main tree and other worktrees are left alone")
    if plan.empty and not plan.conflicts:
        print("the files already match this checkpoint: nothing to roll back")
        return
    print(f"{len(plan.restore)} file(s) to restore, {len(plan.delete)} to delete"
          + _relative_note(store))
    _list_paths([("restore", p) for p in plan.restore] + [("delete", p) for p in plan.delete])
    for line in _warnings(store, plan):
        print(f"warning: {line}")
    if plan.conflicts:
        print("in the way (ignored or nested-repository content rollback will not touch):")
        _list_paths([("blocked", p) for p in plan.conflicts])


def _relative_note(store: CheckpointStore) -> str:
    with suppress(OSError):  # best effort: a vanished cwd, say
        if Path.cwd().resolve() != store.root.resolve():
            return f" (paths relative to {_client.inert(store.root)})"
    return ""


def _list_paths(items: list[tuple[str, str]]) -> None:
    for action, path in items[:_SHOWN]:
        print(f"  {action:<8} {_client.inert(path)}")
    if len(items) > _SHOWN:
        print(f"  ... and {len(items) - _SHOWN} more")


def _warnings(store: CheckpointStore, plan: RollbackPlan) -> list[str]:
    found = []
    if plan.head_moved:
        found.append(f"HEAD moved since this checkpoint ({_short(plan.head_then)} -> "
                     f"{_short(plan.head_now)}); commits made since stay, only files change")
    live = _live_socket(store.root)
    if live is not None:
        found.append(f"a choragos session is running here ({_client.inert(live)}); its "
                     "agents may be writing files while you roll back")
    if plan.submodules:
        found.append("nested repositories at another commit are left alone: "
                     + _client.inert(", ".join(plan.submodules[:5])))
    return found


def _short(head: str) -> str:
    return head[:12] if head else "unknown"


def _live_socket(root: Path) -> Path | None:
    """The control socket of a session serving this directory or the
    repository root, if one exists (a session may be writing files)."""
    with suppress(OSError):  # best effort: a vanished cwd, say
        for where in (Path.cwd(), root):
            sock = paths.find_socket(where, os.environ)
            if sock.is_socket():
                return sock
    return None


def _confirmed() -> bool:
    if not sys.stdin.isatty():
        raise _client.Failure(_client.EXIT_REFUSED, "not rolling back without confirmation: "
                              "there is no terminal to ask on; rerun with --yes to confirm")
    try:
        answer = input("roll back now? [y/N] ")
    except EOFError:
        answer = ""
    if answer.strip().lower() in ("y", "yes"):
        return True
    print("rollback cancelled; nothing changed")
    return False


def _show_result(result: RollbackResult) -> None:
    if result.saved is None:
        print("the files already matched the checkpoint: nothing changed")
        return
    print(f"saved the state before as {_client.inert(result.saved.task_id)} "
          f"({_client.inert(result.saved.ref)})")
    dirs = f", removed {len(result.removed_dirs)} empty director(ies)" \
        if result.removed_dirs else ""
    print(f"restored {len(result.restored)} file(s), deleted {len(result.deleted)}{dirs}")
    print(f"undo with: choragos rollback {_client.inert(result.saved.task_id)}")
