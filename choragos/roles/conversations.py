"""Each Claude Code role keeps a conversation of its own.

Claude Code's ``--continue`` takes the *directory's* most recent
conversation, wrong when several Claude Code roles share a workspace.  So
choragos names each Claude Code process's conversation itself: every start
gets a new id, passed as ``--session-id <uuid>``, and the first start of a
session resumed with ``serve --resume`` continues the id the role had, with
``--resume <uuid>`` (not after a ``handoff``: the new team starts afresh
with the handoff document).  A later restart (a crash, ``choragos restart``, a
``fresh = true`` role's new process per task) starts a new conversation,
as every other CLI's restart does.

The id is kept per role in ``.choragos/state/conversations/<role>.json``,
written (atomically, 0600) before the process starts, and marked used once
the role has been briefed: Claude Code refuses to ``--resume`` an id it
never saved a conversation under, so an id that never got a message is
replaced by a new one instead.  Nothing is added when the command line
already picks a conversation (``--session-id``, ``--resume``, ``--continue``
and their short forms, in ``args`` or ``resume_args``), when the role's
profile is not Claude Code, or when the command runs claude through a shell
(words after ``sh -c '...'`` would not reach it).
"""

from __future__ import annotations

import json
import uuid
from contextlib import suppress
from pathlib import Path

from choragos import statedir
from choragos.agents.wrappers import normalise
from choragos.board.journal import CONVERSATIONS, state_dir

# Flags with which the user already chose the conversation.
_CHOSEN = ("--session-id", "--resume", "-r", "--continue", "-c", "--from-pr")
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "fish"})


def chooses_its_own(argv: list[str]) -> bool:
    """Whether the command line already picks a conversation, or cannot be
    extended with one (a shell's ``-c`` script would not see appended words)."""
    if any(word.split("=", 1)[0] in _CHOSEN for word in argv):
        return True
    return any(normalise(word) in _SHELLS and any(_script_flag(a) for a in argv[at + 1:])
               for at, word in enumerate(argv))


def _script_flag(word: str) -> bool:
    """``-c``, ``-lc``, ``-ic``: a shell told to run its next word as a script."""
    return word.startswith("-") and not word.startswith("--") and "c" in word


def path_for(workdir: Path, role: str) -> Path:
    return state_dir(workdir) / CONVERSATIONS / f"{role}.json"


def saved(workdir: Path, role: str) -> str | None:
    """The role's conversation id if one was used (briefed into); else None."""
    try:
        record = json.loads(path_for(workdir, role).read_text(encoding="utf-8"))
        return str(uuid.UUID(record["id"])) if record.get("used") is True else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # missing or damaged: the role starts a new conversation


def start_args(workdir: Path, role: str, resumed: bool) -> list[str]:
    """The flags for a Claude Code role's next process: ``--resume <id>`` on
    the first start of a resumed session when the role's conversation exists,
    else ``--session-id <new id>`` (written down before the process starts)."""
    old = saved(workdir, role) if resumed else None
    if old is not None:
        return ["--resume", old]
    new = str(uuid.uuid4())
    _write(workdir, role, new, used=False)
    return ["--session-id", new]


def mark_used(workdir: Path, role: str, conversation: str) -> None:
    """The role was briefed: its conversation exists and can be resumed."""
    _write(workdir, role, conversation, used=True)


def _write(workdir: Path, role: str, conversation: str, used: bool) -> None:
    # Best effort: without the file the role still has its own conversation,
    # only a resumed session would start it afresh.
    with suppress(OSError):
        target = path_for(workdir, role)
        statedir.make_dir(target.parent)
        statedir.write_text(target, json.dumps({"id": conversation, "used": used}) + "\n")
