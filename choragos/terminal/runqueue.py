"""How much of the CPU a session of processes has wanted: the time its
threads spent on a CPU plus the time they spent runnable, waiting on a run
queue for one, as Linux keeps per thread in /proc/PID/task/TID/schedstat.

The sum tells an agent at rest from one starved of CPU where a single look
at its state cannot.  A starved agent wants the CPU nearly all the time (it
runs a little and waits on the run queue for the rest), so the wanted time
grows about as fast as the clock; a resting one wakes for its timers, waits
a little for a CPU on a busy machine, and sleeps again, a small fraction of
the clock even beside CPU burners.  Sampled at a state-R moment, both are
often "running" on a busy machine; summed over a window, they are far apart.

A stopped process (SIGSTOP) is neither on a CPU nor waiting for one: its
wanted time does not grow, as for one at rest.  Callers that must not treat
a stopped process as resting ask for that apart.

Where the kernel keeps no such figures (no /proc, as on macOS, or a kernel
built without scheduler statistics, which shows ``0 0 0``), :func:`wanted_ns`
gives None: not known, never a guess.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable


def wanted_ns(pids: Iterable[int]) -> int | None:
    """Nanoseconds the threads of ``pids`` have spent on a CPU or waiting
    on a run queue for one, in all; None when no thread's figures could be
    read (gone, or the kernel keeps none).

    A thread that ended takes its time with it, so between two readings the
    sum may grow by less than the session wanted (never by more)."""
    total, known = 0, False
    for pid in pids:
        try:
            threads = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue  # gone meanwhile, or no /proc here
        for thread in threads:
            reading = thread_wanted_ns(pid, thread)
            if reading is not None:
                total, known = total + reading, True
    return total if known else None


@functools.cache
def kept_here() -> bool:
    """Whether this system keeps the figures at all, read once from this
    process's own thread: a None from :func:`wanted_ns` then means the
    session it was asked of is gone, not that nothing can be measured."""
    try:
        with open("/proc/thread-self/schedstat", "rb") as handle:
            return parse(handle.read()) is not None
    except OSError:
        return False


def thread_wanted_ns(pid: int, thread: int | str) -> int | None:
    """One thread's time on a CPU plus on a run queue (ns); None when unknown."""
    try:
        with open(f"/proc/{pid}/task/{thread}/schedstat", "rb") as handle:
            return parse(handle.read())
    except OSError:
        return None


def parse(text: bytes) -> int | None:
    """The first two fields of a schedstat line summed; None for a line that
    is malformed or all zero (a kernel without scheduler statistics: a live
    thread has always been on a CPU a little)."""
    fields = text.split()
    try:
        on_cpu, waited = int(fields[0]), int(fields[1])
    except (IndexError, ValueError):
        return None
    return on_cpu + waited if on_cpu or waited else None
