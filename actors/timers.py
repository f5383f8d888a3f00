"""One timer thread for the whole session.

pykka has no timers, and a handler must never sleep (it would stall the
actor's inbox), so delayed work is a message told to an actor later:
``timers.after(0.2, handle, SendEnter(…))``.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from typing import Any

import pykka

from choragos.actors.handle import ActorGone

log = logging.getLogger("choragos.timers")


class Timer:
    __slots__ = ("cancelled", "due", "message", "target")

    def __init__(self, due: float, target: Any, message: Any) -> None:
        self.due = due
        self.target = target
        self.message = message
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class Timers:
    def __init__(self, clock=time.monotonic) -> None:
        self.clock = clock
        self._heap: list[tuple[float, int, Timer]] = []
        self._seq = itertools.count()
        self._cv = threading.Condition()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="choragos-timers", daemon=True)
        self._thread.start()

    def after(self, delay: float, target: Any, message: Any) -> Timer:
        """Tell ``message`` to ``target`` (anything with ``tell``) after ``delay`` s."""
        timer = Timer(self.clock() + max(0.0, delay), target, message)
        with self._cv:
            heapq.heappush(self._heap, (timer.due, next(self._seq), timer))
            self._cv.notify()
        return timer

    def stop(self) -> None:
        with self._cv:
            self._stopped = True
            self._cv.notify()
        self._thread.join(timeout=2)

    def _run(self) -> None:
        while True:
            timer = self._next_due()
            if timer is None:
                return
            if getattr(timer.target, "closed", False):
                # An actor stopped for good (as the session ends): its own
                # ticks are moot, and its handle would warn of a lost message.
                log.debug("timer target %r stopped: %r dropped", timer.target, timer.message)
                continue
            try:
                timer.target.tell(timer.message)
            except (ActorGone, pykka.ActorDeadError):
                log.debug("timer target %r gone", timer.target, exc_info=True)
            except Exception:
                # A target that is no actor runs its own code here (the start
                # caches' let-go): its fault must be seen, and the thread go on.
                log.exception("timer target %r failed on %r", timer.target, timer.message)

    def _next_due(self) -> Timer | None:
        with self._cv:
            while not self._stopped:
                if not self._heap:
                    self._cv.wait()
                    continue
                due, _, timer = self._heap[0]
                wait = due - self.clock()
                if wait > 0:
                    self._cv.wait(wait)
                    continue
                heapq.heappop(self._heap)
                if not timer.cancelled:
                    return timer
            return None
