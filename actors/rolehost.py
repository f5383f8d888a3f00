"""What a role actor asks of the machine: the time, and its agent's process.

The role actor and its typist read the time and start, write to and watch
the agent's process only through a :class:`RoleHost`, so a test can run
them in memory on a fake clock with a fake PTY (one that echoes what is
typed into the role's emulated screen) and step the timers by hand.  The
session's roles use :data:`MACHINE`: the monotonic clock and
:class:`~choragos.terminal.ptyproc.PtyChild` with its reader thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from choragos.terminal.ptyproc import PtyChild, Reader
from choragos.terminal.restartpolicy import ExitStatus


class Child(Protocol):
    """The agent's process as the role actor uses it (a PtyChild, or a fake)."""

    pid: int

    def write(self, data: bytes) -> bool: ...
    def try_write(self, data: bytes) -> bytes | None: ...
    def unread_input(self) -> int: ...
    def output_unseen(self) -> bool: ...
    def stopped(self) -> bool: ...
    def running(self) -> bool: ...
    def wanted_ns(self) -> int | None: ...
    def poll(self) -> ExitStatus | None: ...
    def signal_group(self, sig: int) -> bool: ...
    def resize(self, cols: int, rows: int) -> None: ...
    def terminate(self, grace: float = 3.0) -> ExitStatus | None: ...
    def close(self) -> None: ...


Spawn = Callable[[Sequence[str], Path, Mapping[str, str], int, int], Child]
# child, the data callback, the exit callback, the thread's name, the lull callback
StartReader = Callable[..., Any]


@dataclass(frozen=True)
class RoleHost:
    """The clock, spawner and PTY reader a role actor uses (the machine's, or a test's)."""

    now: Callable[[], float] = time.monotonic
    spawn: Spawn = PtyChild.spawn
    reader: StartReader = Reader


MACHINE = RoleHost()
