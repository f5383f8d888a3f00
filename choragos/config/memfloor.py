"""Admission by memory: no role starts while the machine is short of it.

Each agent CLI takes hundreds of megabytes; a crew started (or restarted)
on a machine already short of memory pushes it into swap or the OOM killer,
which then picks any process, the session's included.  So every start goes
through a :class:`MemoryGate`: while the memory the kernel says is available
is under ``[ui] min_free_memory`` the role waits, in the order it asked, and
the session lets the waiting roles in one at a time once memory is back.

The reading is ``MemAvailable`` from ``/proc/meminfo`` (Linux).  Where there
is no such file the gate admits every start and says so once in the log.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass

from choragos import onuse

log = logging.getLogger("choragos.memory")

MEMINFO = "/proc/meminfo"
# Names a file read in place of /proc/meminfo: only tests set it, to play
# a machine short of memory.
MEMINFO_ENV = "CHORAGOS_TEST_MEMINFO"
DEFAULT_FLOOR = "1GiB"
MAX_SIZE = 1024**5  # no machine has a pebibyte of memory: a larger size is a typo
HELD_MARK = "held: memory"

_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "kib": 1024, "m": 1000**2, "mb": 1000**2,
          "mib": 1024**2, "g": 1000**3, "gb": 1000**3, "gib": 1024**3,
          "t": 1000**4, "tb": 1000**4, "tib": 1024**4}
_SIZE = onuse.pattern(r"\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([a-zA-Z]*)\s*")


def parse_size(text: str) -> int:
    """Bytes for ``"1GiB"``, ``"512MiB"``, ``"2G"``, ``"0"``; ValueError otherwise."""
    match = _SIZE().fullmatch(text) if isinstance(text, str) else None
    unit = match.group(2).lower() if match else ""
    if match is None or unit not in _UNITS:
        raise ValueError(f"{text!r} is not a size; write it like \"1GiB\", \"512MiB\" or \"0\"")
    size = float(match.group(1)) * _UNITS[unit]
    if size > MAX_SIZE:  # inf among them: int() of it would raise OverflowError
        raise ValueError(f"{text!r} is more than 1 PiB, more memory than any machine has")
    return int(size)


def format_size(size: int) -> str:
    """``1.5 GiB``, ``300 MiB``: short, for a card or a log line."""
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}".replace(".0 ", " ")
    return f"{size} B"


def meminfo_path() -> str:
    return os.environ.get(MEMINFO_ENV) or MEMINFO


def available_bytes(path: str | None = None) -> int | None:
    """``MemAvailable`` in bytes, None where the kernel gives no such figure."""
    try:
        with open(path or meminfo_path(), "rb") as file:
            for line in file:
                if line.startswith(b"MemAvailable:"):
                    parts = line.split()
                    return int(parts[1]) * (1024 if parts[2:3] == [b"kB"] else 1)
    except (OSError, ValueError, IndexError):
        return None
    return None


def unknown_reading() -> str:
    return (f"admission by memory is off: this system gives no MemAvailable reading "
            f"({meminfo_path()}), so roles start whatever memory is left; set [ui] "
            f'min_free_memory = "0" to turn it off and this notice with it')


@dataclass(frozen=True)
class Verdict:
    """The memory gate's answer to a role that asks to start: in now, or wait and why."""

    admitted: bool
    new: bool = False  # the role joined the queue now (its hook fires once per hold)
    reason: str = ""


class MemoryGate:
    """Who may start now; thread-safe, since every role actor asks on its own thread.

    ``read`` gives the available bytes (None: unknown, which admits).  A role
    that asks while others already wait joins behind them even if memory is
    back, so the waiting start in the order they asked.
    """

    def __init__(self, floor: int, read: Callable[[], int | None] = available_bytes) -> None:
        self.floor = floor
        self._read = read
        self._lock = threading.Lock()
        self._queue: list[str] = []
        self._unknown_said = False

    @property
    def waiting(self) -> list[str]:
        with self._lock:
            return list(self._queue)

    def ask(self, role: str, held: Callable[[Verdict], None] | None = None) -> Verdict:
        """Whether ``role`` may start now.  ``held`` is told a wait while the
        gate is still locked, so what it sends on goes in the queue's order
        (roles ask on their own threads, at once)."""
        with self._lock:
            if role in self._queue:
                verdict = Verdict(False, False, self._reason(self._reading()))
            elif self.floor <= 0:
                return Verdict(True)
            else:
                available = self._reading()
                if available is None or (not self._queue and available >= self.floor):
                    return Verdict(True)
                self._queue.append(role)
                verdict = Verdict(False, True, self._reason(available))
            if held is not None:
                held(verdict)
            return verdict

    def release(self) -> str | None:
        """The first waiting role, taken off the queue, when memory allows one more."""
        with self._lock:
            if not self._queue:
                return None
            available = self._reading()
            if available is not None and available < self.floor:
                return None
            return self._queue.pop(0)

    def drop(self, role: str) -> None:
        """The role was stopped or removed while it waited."""
        with self._lock:
            if role in self._queue:
                self._queue.remove(role)

    def off_notice(self) -> str | None:
        """Where admission is on but the system gives no reading (macOS): the
        start's notice saying so, once (not the log's line at the first ask)."""
        if self.floor <= 0:
            return None
        with self._lock:
            if self._unknown_said or self._read() is not None:
                return None
            self._unknown_said = True
        return unknown_reading()

    def _reading(self) -> int | None:
        available = self._read()
        if available is None and not self._unknown_said:
            self._unknown_said = True
            log.warning("%s", unknown_reading())
        return available

    def _reason(self, available: int | None) -> str:
        shown = "unknown" if available is None else format_size(available)
        return (f"{shown} of memory available, under the {format_size(self.floor)} floor "
                "([ui] min_free_memory); it starts when memory is freed")
