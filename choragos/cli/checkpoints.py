"""``choragos checkpoints``: list or prune workspace checkpoints.

Works on the git repository around the current directory, with or without a
session running: the main tree's checkpoints and those of every linked
worktree (a ``worktree = true`` role's), each tree's kept apart.
``choragos rollback`` shares the helpers at the bottom.
"""

from __future__ import annotations

import argparse
import time
from argparse import ArgumentParser
from pathlib import Path
from typing import TypeVar

from choragos.cli import _client
from choragos.gitstore import checkpointtrees
from choragos.gitstore.checkpoints import (
    Checkpoint,
    CheckpointError,
    CheckpointStore,
    NotARepository,
    is_undo_point,
)
from choragos.plural import counted, plural

# typing is needed for annotations only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

_T = TypeVar("_T")

DEFAULT_KEEP = 20
_COLUMNS = [("task", "TASK"), ("age", "AGE"), ("role", "ROLE"), ("label", "LABEL")]
_TREE = ("tree", "TREE")  # shown once any worktree holds checkpoints


def run(argv: list[str], verb: str = "checkpoints") -> int:
    """Entry point for ``choragos checkpoints [list|prune]``."""
    return _client.guard(verb, lambda: _main(argv, verb), json=_client.wants_json(argv))


def arguments(verb: str) -> ArgumentParser:
    """The parser of ``choragos VERB`` (its help, completion and man page come from it)."""
    made = parser(verb, "List this repository's checkpoints, newest first, or prune old ones.")
    made.add_argument("action", nargs="?", choices=["list", "prune"], default="list",
                      help="list (the default) or prune")
    made.add_argument("--json", action="store_true", help="list as JSON")
    made.add_argument("--keep", type=int, metavar="N",
                      help="prune: how many of the newest to keep (default: [checkpoints] "
                           f"keep in .choragos.toml, else {DEFAULT_KEEP})")
    return made


def _main(argv: list[str], verb: str) -> int:
    args = arguments(verb).parse_args(argv)
    with open_store() as store:
        if args.action == "prune":
            return _prune(store, args.keep)
        return _list(store, as_json=args.json)


def _list(store: CheckpointStore, *, as_json: bool) -> int:
    found, gone = guarded(lambda: checkpointtrees.list_all(store.workdir))
    now = time.time()
    if as_json:
        records = [{**c.to_json(), "age": max(0.0, now - c.created)} for c in found]
        return _client.print_json({"checkpoints": records})
    if not found:
        return _client.say(f"no checkpoints yet in {_client.inert(store.root)}"
                           + _gone_note(gone))
    rows = [_row(c, now) for c in found]
    columns = [*_COLUMNS[:3], _TREE, *_COLUMNS[3:]] if any(c.worktree for c in found) \
        else _COLUMNS
    text = _client.table(rows, columns, {"label": 60}) + _gone_note(gone)
    undo = next((c.task_id for c in found if is_undo_point(c.task_id)), None)
    if undo is not None:
        text += ("\n\n(undo) rows are undo points, the files a rollback replaced "
                 "(pre-rollback-T: before a rollback to T; pre-undo-T: before undoing "
                 f"that); `choragos rollback {_client.inert(undo)}` puts them back")
    return _client.say(text)


def _row(checkpoint: Checkpoint, now: float) -> dict[str, str]:
    undo = is_undo_point(checkpoint.task_id)
    return {"task": checkpoint.task_id, "age": age(now - checkpoint.created),
            "role": "(undo)" if undo else checkpoint.role or "-",
            "tree": checkpoint.worktree or "main",
            "label": checkpoint.label or "-"}


def _gone_note(gone: list[checkpointtrees.Tree]) -> str:
    if not gone:
        return ""
    names = _client.inert(", ".join(tree.name for tree in gone))
    worktrees = plural("worktree", len(gone))
    return (f"\n\n(not listed: the checkpoints of {worktrees} {names}, which are gone; "
            "`choragos checkpoints prune` removes them)")


def _prune(store: CheckpointStore, keep: int | None) -> int:
    keep = configured_keep() if keep is None else keep
    if keep < 0:
        raise _client.Failure(_client.EXIT_USAGE, "--keep must be 0 or more")
    removed = guarded(lambda: checkpointtrees.prune_all(store.workdir, keep))
    if not removed:
        return _client.say(f"nothing to prune: at most {counted(keep, 'checkpoint')} here")
    return _client.say(f"removed {counted(len(removed), 'checkpoint')}, kept the newest {keep}"
                       " (of each tree: the main tree and each role's worktree)")


def configured_keep() -> int:
    """``[checkpoints] keep`` from the configuration in the current directory."""
    try:
        from choragos.config.model import ConfigError, load_config
    except ImportError:  # a checkout without the config loader: read the key alone
        return _keep_from_toml(Path.cwd() / ".choragos.toml")
    try:
        return load_config(cwd=Path.cwd()).checkpoints.keep
    except ConfigError as exc:
        raise _client.Failure(_client.EXIT_USAGE, f"cannot read the configuration "
                              f"({exc.errors[0] if exc.errors else exc}); pass --keep N") from None


def _keep_from_toml(path: Path) -> int:
    import tomllib

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return DEFAULT_KEEP
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise _client.Failure(_client.EXIT_USAGE,
                              f"cannot read {path.name}: {exc}; pass --keep N") from None
    keep = data.get("checkpoints", {}).get("keep", DEFAULT_KEEP)
    if isinstance(keep, bool) or not isinstance(keep, int):
        raise _client.Failure(_client.EXIT_USAGE, f"{path.name}: checkpoints.keep must be "
                              "a whole number; pass --keep N")
    return keep


# ---- shared with ``choragos rollback`` -------------------------------------------------

def parser(verb: str, description: str) -> argparse.ArgumentParser:
    return _client.bare_parser(verb, description)


def open_store() -> CheckpointStore:
    """The store for the current directory; outside git, one sentence and exit 1."""
    try:
        return CheckpointStore(Path.cwd())
    except NotARepository as exc:
        raise _client.Failure(_client.EXIT_REFUSED, str(exc)) from None
    except OSError as exc:
        raise _client.Failure(_client.EXIT_REFUSED,
                              f"cannot open the repository: {exc.strerror or exc}") from None


def guarded(call: Callable[[], _T]) -> _T:
    """Run a store call, turning its failure into one line and exit 1."""
    try:
        return call()
    except CheckpointError as exc:
        raise _client.Failure(_client.EXIT_REFUSED, str(exc)) from None


def age(seconds: float) -> str:
    """A compact age: 45s, 3m, 2h, 4d."""
    seconds = max(0, int(seconds))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def describe(checkpoint: Checkpoint, now: float) -> str:
    """One inert line naming a checkpoint: task, role, label, age."""
    role = f" for {checkpoint.role}" if checkpoint.role else ""
    label = f' "{checkpoint.label}"' if checkpoint.label else ""
    return _client.inert(f"{checkpoint.task_id}{role}{label}, "
                         f"taken {age(now - checkpoint.created)} ago")
