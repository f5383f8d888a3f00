"""A thread's time slice: short for the threads a keystroke wakes.

Linux (6.12 and later) schedules ordinary threads by their deadlines
(EEVDF): a thread that wakes waits for a core until the running thread's
slice (about 1.5 ms on two cores) is used up, unless it asked for a shorter
slice of its own, which lets it in ahead (``sched_setattr`` with
``sched_runtime``; any thread may ask it for itself, no privilege, and it
changes when a thread runs, not how much).  A role's reader drawing a
flood's held batch runs about a millisecond at a stretch, and a key that
comes meanwhile found its threads (the attach pump that reads it, the
reader that takes its echo) waiting for a core behind it or behind the
machine's other work.  So those threads ask for the shortest slice: the
pump always, a role's reader once its pane is typed at (the echo read),
until it holds a flood's batch: a batch holds the interpreter's lock, and
a batch cut short on its core would keep the key waiting for the lock
instead.  The other panes' readers keep the default, so a busy crew's
output does not go ahead of the key's threads.

Elsewhere (another system, an older kernel, a seccomp filter) nothing
changes: the calls say False, once, in the log.
"""

from __future__ import annotations

import logging
import os
import struct
import sys

SHORT = 100_000  # ns: the shortest slice the kernel grants (0.1 ms)
# sched_getattr/sched_setattr by machine (no C library wraps them).
_CALLS = {"x86_64": (315, 314), "aarch64": (275, 274)}
# struct sched_attr as of its first version: size, policy, flags, nice,
# priority, runtime, deadline, period.
_ATTR = struct.Struct("=IIqiIQQQ")
_FAIR = (0, 3)  # SCHED_OTHER, SCHED_BATCH: the policies a slice applies to
# A thread or process started from a thread with a short slice gets the
# default one: an agent spawned, a reader's next turn (which asks again).
RESET_ON_FORK = 0x01

log = logging.getLogger("choragos")
_syscall = None  # libc's syscall() and the numbers once looked up; False where none


def short(tid: int = 0) -> bool:
    """Ask for the shortest slice for thread ``tid`` (0: the calling one);
    True when the kernel took it."""
    return set_slice(SHORT, tid)


def default(tid: int = 0) -> bool:
    """Give thread ``tid`` (0: the calling one) the kernel's default slice."""
    return set_slice(0, tid)


def slice_of(tid: int = 0) -> int | None:
    """Thread ``tid``'s slice in ns as the kernel reports it (None where it
    cannot be asked)."""
    attr = _get(tid)
    return None if attr is None else attr[5]


def set_slice(ns: int, tid: int = 0) -> bool:
    """Thread ``tid``'s slice set to ``ns`` nanoseconds (0: the default),
    its policy and nice value kept; a short one is not inherited."""
    attr = _get(tid)
    if attr is None or attr[1] not in _FAIR:
        return False
    _size, policy, _flags, nice, priority, _runtime, deadline, period = attr
    flags = RESET_ON_FORK if ns else 0
    raw = _ATTR.pack(_ATTR.size, policy, flags, nice, priority, ns, deadline, period)
    return _call(1, tid, raw, 0) is not None


def _get(tid: int) -> tuple[int, ...] | None:
    buffer = _call(0, tid, bytes(_ATTR.size), _ATTR.size, 0)
    return None if buffer is None else _ATTR.unpack(buffer)


def _call(which: int, tid: int, raw: bytes, *rest: int) -> bytes | None:
    """sched_getattr (0) or sched_setattr (1) on ``tid`` with the struct in
    ``raw``; what the struct holds afterwards, None on failure."""
    found = _lookup()
    if not found:
        return None
    call, numbers = found
    import ctypes  # already loaded in the server (mallocarenas)

    buffer = ctypes.create_string_buffer(raw, len(raw))
    if call(numbers[which], tid, buffer, *rest) != 0:
        _refused(ctypes.get_errno())
        return None
    return buffer.raw


def _lookup():  # libc's syscall() and the calls' numbers, or False
    global _syscall
    if _syscall is None:
        _syscall = False
        numbers = _CALLS.get(os.uname().machine) if sys.platform.startswith("linux") else None
        if numbers is not None:
            import ctypes

            try:
                call = ctypes.CDLL(None, use_errno=True).syscall
            except (OSError, AttributeError):
                return False
            call.restype = ctypes.c_long
            _syscall = (call, numbers)
    return _syscall


_told = False


def _refused(errno: int) -> None:
    global _told
    if not _told:
        _told = True
        log.debug("sched_getattr/sched_setattr refused (errno %d): threads keep their slices",
                  errno)
