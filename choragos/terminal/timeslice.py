"""A thread's time slice: the shortest for the threads a keystroke wakes.

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
changes: the calls say False, once, in the log.  A refusal of that kind is
remembered, so no later call asks the kernel again (a typed pane's reader
asks as each key's echo comes while it has no short slice): one refused
call per process, not one per key.  An error of one thread's (ESRCH: it
has ended) says False for that call alone.
"""

from __future__ import annotations

import errno
import logging
import os
import struct
import sys

log = logging.getLogger("choragos")

SHORT_SLICE = 100_000  # ns: the shortest slice the kernel grants (0.1 ms)
# sched_getattr/sched_setattr by machine (no C library wraps them).
_SCHED_CALLS = {"x86_64": (315, 314), "aarch64": (275, 274)}
# struct sched_attr as of its first version: size, policy, flags, nice,
# priority, runtime, deadline, period.
_SCHED_ATTR = struct.Struct("=IIqiIQQQ")
_FAIR_POLICIES = (0, 3)  # SCHED_OTHER, SCHED_BATCH: the policies a slice applies to
# A thread or process started from a thread with a short slice gets the
# default one: an agent spawned, a reader's next turn (which asks again).
SCHED_RESET_ON_FORK = 0x01

_sched_call = None  # libc's syscall() and the numbers once looked up; False where none
# The kernel's answers that hold for every later call: no such call (an old
# kernel, a seccomp filter's usual answer), not allowed (a filter, a policy),
# a struct or a runtime for fair threads it does not know (a kernel before
# EEVDF's slices).
_SYSTEM_REFUSALS = (errno.ENOSYS, errno.EPERM, errno.EINVAL)


def short_slice(tid: int = 0) -> bool:
    """Ask for the shortest slice for thread ``tid`` (0: the calling one);
    True when the kernel took it."""
    return set_slice(SHORT_SLICE, tid)


def default_slice(tid: int = 0) -> bool:
    """Give thread ``tid`` (0: the calling one) the kernel's default slice."""
    return set_slice(0, tid)


def slice_of(tid: int = 0) -> int | None:
    """Thread ``tid``'s slice in ns as the kernel reports it (None where it
    cannot be asked)."""
    attr = _get_attr(tid)
    return None if attr is None else attr[5]


def set_slice(ns: int, tid: int = 0) -> bool:
    """Thread ``tid``'s slice set to ``ns`` nanoseconds (0: the default),
    its policy and nice value kept; a short one is not inherited."""
    attr = _get_attr(tid)
    if attr is None or attr[1] not in _FAIR_POLICIES:
        return False
    _size, policy, _flags, nice, priority, _runtime, deadline, period = attr
    flags = SCHED_RESET_ON_FORK if ns else 0
    raw = _SCHED_ATTR.pack(_SCHED_ATTR.size, policy, flags, nice, priority, ns, deadline, period)
    return _sched_attr_call(1, tid, raw, 0) is not None


def _get_attr(tid: int) -> tuple[int, ...] | None:
    buffer = _sched_attr_call(0, tid, bytes(_SCHED_ATTR.size), _SCHED_ATTR.size, 0)
    return None if buffer is None else _SCHED_ATTR.unpack(buffer)


def _sched_attr_call(which: int, tid: int, raw: bytes, *rest: int) -> bytes | None:
    """sched_getattr (0) or sched_setattr (1) on ``tid`` with the struct in
    ``raw``; what the struct holds afterwards, None on failure."""
    found = _sched_lookup()
    if not found:
        return None
    call, numbers = found
    import ctypes  # already loaded in the server (mallocarenas)

    buffer = ctypes.create_string_buffer(raw, len(raw))
    if call(numbers[which], tid, buffer, *rest) != 0:
        _slice_refused(ctypes.get_errno())
        return None
    return buffer.raw


def _sched_lookup():  # libc's syscall() and the calls' numbers, or False
    global _sched_call
    if _sched_call is None:
        _sched_call = False
        numbers = _SCHED_CALLS.get(os.uname().machine) if sys.platform.startswith("linux") else None
        if numbers is not None:
            import ctypes

            try:
                call = ctypes.CDLL(None, use_errno=True).syscall
            except (OSError, AttributeError):
                return False
            call.restype = ctypes.c_long
            _sched_call = (call, numbers)
    return _sched_call


_slice_told = False


def _slice_refused(number: int) -> None:
    global _sched_call, _slice_told
    if number in _SYSTEM_REFUSALS:
        _sched_call = False  # asked no more: the answer will not change
        log.debug("sched_getattr/sched_setattr refused (errno %d): threads keep their slices",
                  number)
    elif not _slice_told:  # one thread's (ended meanwhile): said once, the calls go on
        _slice_told = True
        log.debug("sched_getattr/sched_setattr failed for a thread (errno %d)", number)
