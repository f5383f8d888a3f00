"""A stop flag the main thread can sleep on with no timeout at all.

Python runs a signal's handler on the main thread, and only once that thread
runs again.  The kernel may hand a process's signal to any of its threads;
if the main thread is then blocked on a lock, nothing wakes it, and a
SIGTERM goes unanswered.  Waking a few times a second to look was the old
way round that, at the cost of waking an idle server for nothing.

:meth:`StopFlag.sleep` instead sleeps in ``poll()`` on a pipe that serves two
writers: the interpreter's C-level signal handler (the pipe is its wake-up
fd, written from whatever thread the signal hit) and :meth:`StopFlag.set`
from any thread.  Either wakes the main thread at once, and only then.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import threading


class StopFlag(threading.Event):
    """A ``threading.Event`` whose :meth:`set` also wakes :meth:`sleep`."""

    def __init__(self) -> None:
        super().__init__()
        # Reentrant: a signal handler that sets the flag may run on the main
        # thread in the middle of its own set().
        self._wake_lock = threading.RLock()
        self._wake_w = -1  # the sleeper's pipe while it sleeps, else -1

    def set(self) -> None:
        super().set()
        with self._wake_lock:  # never a write into a closed (perhaps reused) fd
            if self._wake_w >= 0:
                with contextlib.suppress(OSError):  # full: a wake-up is pending anyway
                    os.write(self._wake_w, b"s")

    def sleep(self) -> None:
        """Return once the flag is set, running signal handlers as signals
        come.  Only on the main thread (the only one signals are set up on)."""
        wake_r, wake_w = os.pipe()
        for fd in (wake_r, wake_w):
            os.set_blocking(fd, False)
        with self._wake_lock:
            self._wake_w = wake_w
        previous = signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
        try:
            poller = select.poll()
            poller.register(wake_r, select.POLLIN)
            while not self.is_set():
                poller.poll()  # a handler runs once this returns to Python
                _drain(wake_r)
        finally:
            signal.set_wakeup_fd(previous)
            with self._wake_lock:
                self._wake_w = -1
            os.close(wake_r)
            os.close(wake_w)


def _drain(fd: int) -> None:
    with contextlib.suppress(BlockingIOError):
        while os.read(fd, 512):
            pass
