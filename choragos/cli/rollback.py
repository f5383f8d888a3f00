"""``choragos rollback T3|REF``: restore the workspace to before a task.

A task done in a role's worktree restores that worktree (its checkpoints
are its own); the main tree and other worktrees are left alone.

Shows what would change, warns when HEAD moved or a session may be writing,
asks for confirmation (``--yes`` skips; without a terminal it refuses), then
rolls back after saving the current state as ``pre-rollback-<task>``.  When a
session answers for this directory, the plan is the session's ``rollback``
dry run and the rollback (of exactly the checkpoint shown) its ``rollback``
command, so it is in its event log.
"""

from __future__ import annotations

import os
import sys
import time
from argparse import ArgumentParser
from contextlib import suppress
from pathlib import Path

from choragos.cli import _client
from choragos.cli.checkpoints import describe, guarded, open_store, parser
from choragos.cli.rollbackview import Done, Plan
from choragos.control import paths, wire
from choragos.gitstore import checkpointtrees
from choragos.plural import counted

_SHOWN = 20  # paths listed before "... and N more"


def run(argv: list[str], verb: str = "rollback") -> int:
    """Entry point for ``choragos rollback``."""
    return _client.guard(verb, lambda: _main(argv, verb))


def arguments(verb: str) -> ArgumentParser:
    """The parser of ``choragos VERB`` (its help, completion and man page come from it)."""
    made = parser(verb, "Restore the files of a checkpoint (the newest one for a task id, "
                        "or a full ref name) and delete files created since. Ignored files, "
                        "HEAD, branches, the index and the stash are left alone.")
    made.add_argument("target", help="a task id (T3), pre-rollback-T3, or a ref name")
    made.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    made.add_argument("--dry-run", action="store_true", help="only show what would change")
    made.missing = "name the task id or checkpoint to roll back to, such as T3"
    return made


def _main(argv: list[str], verb: str) -> int:
    args = arguments(verb).parse_args(argv)
    if not args.target.strip():
        # An empty target (a variable unset) is a slip: said before any session is asked.
        raise _client.Failure(_client.EXIT_USAGE, "name the task id or checkpoint to roll "
                                                  "back to, such as T3; nothing was changed")
    with open_store() as here:
        workdir = here.workdir
    present, role = _session()
    if present and not role:
        return _through_session(args.target, args.dry_run, args.yes)
    with guarded(lambda: checkpointtrees.open_for(workdir, args.target)) as store:
        plan = Plan.of(store, guarded(lambda: store.plan_rollback(args.target)))
        if not _go_ahead(plan, args.dry_run, args.yes, refused_as=role):
            return _client.EXIT_OK if plan.empty or args.dry_run else _client.EXIT_REFUSED
        _show_result(Done.of(guarded(lambda: store.rollback(plan.checkpoint))))
    return _client.EXIT_OK


def _through_session(target: str, dry_run: bool, yes: bool) -> int:
    """The session's ``rollback`` command: its dry run for the plan shown,
    then the rollback of exactly the ref shown, written to its event log."""
    plan = Plan.of_ack(_client.send(None, {"cmd": "rollback", "target": target,
                                           "dry_run": True}))
    if not _go_ahead(plan, dry_run, yes):
        return _client.EXIT_OK if plan.empty or dry_run else _client.EXIT_REFUSED
    _show_result(Done.of_ack(_client.send(None, {"cmd": "rollback",
                                                 "target": plan.checkpoint.ref,
                                                 "dry_run": False})))
    return _client.EXIT_OK


def _go_ahead(plan: Plan, dry_run: bool, yes: bool, refused_as: str | None = None) -> bool:
    """Show the plan; True once the rollback may go ahead.  Content in the
    way is a Failure; an empty plan, a dry run or a "no" answer is False."""
    _show_plan(plan)
    if plan.conflicts:
        raise _client.Failure(_client.EXIT_REFUSED, "nothing was changed: move the "
                              "paths above aside (or delete them) and try again")
    if plan.empty or dry_run:
        return False
    if refused_as:
        # "(session)" and "(untraced)" are no role's name (see choragos/control/authority.py).
        where = (f"from a process the session counts as {refused_as}"
                 if refused_as.startswith("(") else
                 f"from inside the {refused_as} role's process tree")
        raise _client.Failure(_client.EXIT_REFUSED, "rollback is an operator command and was "
                              f"run {where}; nothing was changed")
    return yes or _confirmed()


def _session() -> tuple[bool, str | None]:
    """Whether a session answers for this directory, and the role (by process
    ancestry) this verb runs inside, if any: rollback is an operator command.

    With a session the rollback is its ``rollback`` command, so it is in
    its event log; without one there is no team and the verb works on the
    checkpoint store itself."""
    try:
        sock, workdir = _client.socket_for(None)
        ack = wire.request(sock, {"cmd": "whoami"}, 2.0, workdir=workdir)
    except (_client.Failure, wire.Unreachable, wire.WireError):
        return False, None
    return True, ack.get("role") or None


def _show_plan(plan: Plan) -> None:
    print(f"checkpoint {describe(plan.checkpoint, time.time())}")
    print(f"  ref {_client.inert(plan.checkpoint.ref)}")
    if plan.worktree:
        print(f"  in the worktree {_client.inert(plan.worktree)} at "
              f"{_client.inert(plan.root)}; the main tree and other worktrees are left alone")
    if plan.empty and not plan.conflicts:
        print("the files already match this checkpoint: nothing to roll back")
        _show_nested(plan)
        return
    print(f"{counted(plan.restore_count, 'file')} to restore, {plan.delete_count} to delete"
          + _relative_note(plan.root))
    _list_paths([("restore", p) for p in plan.restore] + [("delete", p) for p in plan.delete],
                plan.restore_count + plan.delete_count)
    for line in _warnings(plan):
        print(f"warning: {line}")
    _show_nested(plan)
    if plan.conflicts:
        print("in the way (ignored or nested-repository content rollback will not touch):")
        _list_paths([("blocked", p) for p in plan.conflicts], plan.conflicts_count)


def _relative_note(root: Path) -> str:
    with suppress(OSError):  # best effort: a vanished cwd, say
        if Path.cwd().resolve() != root.resolve():
            return f" (paths relative to {_client.inert(root)})"
    return ""


def _list_paths(items: list[tuple[str, str]], total: int) -> None:
    for action, path in items[:_SHOWN]:
        print(f"  {action:<8} {_client.inert(path)}")
    if total > _SHOWN:
        print(f"  ... and {total - _SHOWN} more")


def _warnings(plan: Plan) -> list[str]:
    found = []
    if plan.head_moved:
        found.append(f"HEAD moved since this checkpoint ({_short(plan.head_then)} -> "
                     f"{_short(plan.head_now)}); commits made since stay, only files change")
    live = _live_socket(plan.root)
    if live is not None:
        found.append(f"a choragos session is running here ({_client.inert(live)}); its "
                     "agents may be writing files while you roll back")
    return found


def _show_nested(left: Plan | Done) -> None:
    """Every nested repository a rollback leaves as it is although it is not
    as it was: one whose work its commit does not hold (edited, added,
    staged there) outlives the rollback, and the operator must know.  And
    the ones whose files it puts back, with what it leaves undone there."""
    if left.nested_restored:
        print("nested repositories whose files are put back as they were (their commits, "
              "index and branches are never touched):")
        _list_paths([("files", p) for p in left.nested_restored], len(left.nested_restored))
    for note in left.nested_notes:
        print(f"warning: {_client.inert(note)}")
    if left.nested_changes:
        print("warning: nested repositories with work not committed there are left as they "
              "are (rollback never enters one; see to it with git there):")
        _list_paths([("changed", p) for p in left.nested_changes], left.nested_changes_count)
    if left.submodules:
        print("warning: nested repositories at another commit are left as they are:")
        _list_paths([("moved", p) for p in left.submodules], left.submodules_count)


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
    except (EOFError, KeyboardInterrupt):  # end of input or ctrl-c: the default, no
        print()
        answer = ""
    if answer.strip().lower() in ("y", "yes"):
        return True
    print("rollback cancelled; nothing changed")
    return False


def _show_result(done: Done) -> None:
    if done.saved_task is None:
        print("the files already matched the checkpoint: nothing changed")
        _show_nested(done)
        return
    print(f"saved the state before as {_client.inert(done.saved_task)} "
          f"({_client.inert(done.saved_ref or '')})")
    dirs = f", removed {counted(done.removed_dirs, 'empty directory')}" if done.removed_dirs else ""
    print(f"restored {counted(done.restored, 'file')}, deleted {done.deleted}{dirs}")
    _show_nested(done)
    print(f"undo with: choragos rollback {_client.inert(done.saved_task)}")
