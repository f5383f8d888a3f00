"""A real CLI that does not run while its task is typed gets the task once.

On a loaded machine the process that reads an agent's terminal may not run
for seconds: what choragos typed stays unread, and its echo and its Enter
come late.  Typing the text again, or a second Enter, would reach the
agent's next line or a question.  Here the reader is frozen outright
(SIGSTOP) while a task is delivered, for longer than the echo wait, then let
go.  Codex's npm launcher on a Node without ``process.execve`` (20 here)
spawns its native binary and waits for it, so only the binary is frozen and
the agent itself is not seen as stopped: exactly a starved agent.  Claude
Code and Gemini CLI (and Codex on a newer Node) read their terminal
themselves and are frozen whole.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
from collections.abc import Callable, Iterator

import pytest

from choragos.terminal.ptyproc import session_members, unread_bytes
from tests.e2e.fakemodel import text
from tests.e2e.scenario import BRIEF, holds_for
from tests.e2e.seats import BOOT_TIMEOUT, Fakes, SeatCrew, two_seats

pytestmark = pytest.mark.timeout(180)
FROZEN_FOR = 5.0  # well past the echo wait (2 s) and the Enter's window (1.5 s)


def comm(pid: int) -> str:
    with open(f"/proc/{pid}/comm", encoding="utf-8") as handle:
        return handle.read().strip()


def terminal_readers(leader: int) -> list[int]:
    """Codex's native binary when a launcher runs it as a child, else the
    agent's whole session."""
    native = [p for p in session_members(leader) if p != leader and comm(p) == "codex"]
    return native or session_members(leader)


def unread(leader: int) -> int:
    """Bytes typed into the agent's terminal that nobody has read yet."""
    return unread_bytes(os.readlink(f"/proc/{leader}/fd/0"))


@contextlib.contextmanager
def frozen(pids: list[int]) -> Iterator[None]:
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


@pytest.mark.parametrize("cli", [pytest.param(cli, marks=getattr(pytest.mark, cli))
                                 for cli in ("codex", "claude", "gemini")])
def test_a_task_typed_while_the_agent_is_frozen_goes_in_once(
        seat_crew: Callable[..., SeatCrew], fakes: Fakes, cli: str) -> None:
    s = two_seats(seat_crew, cli)
    s.wait_booted(["orchestrator", "coder"], timeout=BOOT_TIMEOUT)
    for fake in fakes.all():
        fake.on("New task T1 from choragos", text("Taking T1."))
    # Idle after its brief's turn, so the task is typed at once, not queued.
    s.wait_told(BRIEF.format(role="coder"), 60)
    s.wait(lambda: holds_for(lambda: s.state("coder") == "idle", 1.0), 60,
           "the coder idle after its brief's turn")
    leader = s.status()["coder"]["pid"]
    readers = terminal_readers(leader)
    if cli == "codex":  # the starved case this test is for, on this machine's Node
        assert leader not in readers, "Codex's launcher was expected to run a native child"
    with frozen(readers):
        assert s.cli("delegate", "--to", "coder", "--task", "Frozen while typed").returncode == 0
        typed = s.wait(lambda: unread(leader), 30, "the task typed into the frozen agent")
        # Nothing typed again, nothing given up on, for as long as it is frozen.
        assert holds_for(lambda: unread(leader) == typed and not s.injections("coder", "task"),
                         FROZEN_FOR)
    s.wait(lambda: s.injections("coder", "task"), 60, "the task's injection outcome")
    [task] = s.injections("coder", "task")
    # One Enter while frozen; a loaded machine may need a second once the
    # agent runs again (an Enter, never the text: the model hears it once).
    assert task["ok"] and re.search(r"submitted after [12] enter", task["detail"]), task
    s.wait_told("New task T1 from choragos", 60)
    s.wait_state("coder", "idle", 60)
    told = [said.count("New task T1 from choragos") for said in s.model.user_messages()]
    assert sum(told) == 1, told  # one turn, the line in it once
