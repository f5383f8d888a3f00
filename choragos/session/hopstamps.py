"""Timestamps of a keystroke's hops through the session, for the attach bench.

``bench/attach_latency.py --hops`` starts the session with
``CHORAGOS_HOPSTAMPS`` naming a file; the session then appends one line per
hop a key and its echo take (``<CLOCK_MONOTONIC ns> <thread id> <the
thread's CPU ns> <hop> [<role>]``), and the bench, which times its probes on
the same clock, splits each probe's latency into the steps between them, and
a step taken on one thread into its CPU and its waiting (for a core, for the
interpreter's lock).  Without the variable every :func:`mark` call site is a
test of :data:`ON` and nothing more.
"""

from __future__ import annotations

import os
import threading
import time

_PATH = os.environ.get("CHORAGOS_HOPSTAMPS", "")
ON = bool(_PATH)
_fd = os.open(_PATH, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600) if ON else -1


def mark(hop: str, role: str = "") -> None:
    """One line now; only called where :data:`ON` was checked first."""
    os.write(_fd, f"{time.perf_counter_ns()} {threading.get_native_id()} "
                  f"{time.thread_time_ns()} {hop} {role}\n".encode())


def parse(line: str) -> tuple[int, int, int, str, str]:
    """(ns, thread id, thread CPU ns, hop, role or "") of one stamp line."""
    ns, thread, cpu, hop, *role = line.split()
    return int(ns), int(thread), int(cpu), hop, role[0] if role else ""
