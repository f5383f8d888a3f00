"""The deck's commands to the session: control commands through the same
``Dispatch`` registry as the control socket, and the deck's other reads
(a task's diff, the report page), all run on worker threads so a busy core
never freezes the screen; their answers come back to the loop's thread.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections import deque
from collections.abc import Callable

from choragos.ui.deckbase import DeckHost, SessionPort

log = logging.getLogger("choragos")


def answered(ack: dict, key: str) -> list:
    """The list ``key`` of a command's answer; none when the command failed."""
    return ack.get(key, []) if ack.get("status") == "ok" else []


class CommandRunner:
    """Commands and reads off the loop's thread."""

    def __init__(self, port: SessionPort, host: DeckHost) -> None:
        self.port = port
        self.host = host
        self._workers = Workers(2, "deck-cmd")

    def command(self, request: dict, then: Callable[[dict], None] | None = None,
                quiet: bool = False) -> None:
        """Run a control command; ``then(ack)`` on the loop's thread, and a
        failure said on the status line unless ``quiet``."""
        def work() -> None:
            try:
                ack = self.port.dispatch(request)
            except Exception as exc:  # reported on screen, never fatal
                ack = {"status": "error", "error": f"{type(exc).__name__}: {exc}"}
            self.host.post(lambda: self._answered(request, ack, then, quiet))

        self.background(work)

    def _answered(self, request: dict, ack: dict, then: Callable[[dict], None] | None,
                  quiet: bool) -> None:
        if ack.get("status") != "ok" and not quiet:
            self.host.say(f"{request['cmd']}: {ack.get('error', 'failed')}", "failed")
        if then is not None:
            then(ack)

    def background(self, work: Callable[[], None]) -> None:
        """Run ``work`` on a worker thread (it posts what it found)."""
        with contextlib.suppress(RuntimeError):  # shutting down
            self._workers.submit(work)

    def shutdown(self, wait: bool = False) -> None:
        """No more work; ``wait``: until what was started is done."""
        self._workers.shutdown(wait=wait)


class Workers:
    """Work run in order on up to ``most`` threads, each of which ends once
    no work is left.  A thread pool keeps its idle threads for good: the
    deck's two cost the server about 20 KB each (a stack, the interpreter's
    frame stack, the allocator's cache of the thread) and
    ``concurrent.futures`` 0.1 MB more, for commands that come a few at a
    time.  Work that raises is logged, and the thread goes on with the rest."""

    def __init__(self, most: int, name: str) -> None:
        self._most = most
        self._name = name
        self._queue: deque[Callable[[], None]] = deque()
        self._running = 0  # threads started and not yet ended
        self._started = 0  # threads ever started (their names count up)
        self._closed = False
        self._idle = threading.Condition()

    def submit(self, work: Callable[[], None]) -> None:
        """Run ``work`` on a worker thread; RuntimeError after ``shutdown``."""
        with self._idle:
            if self._closed:
                raise RuntimeError("cannot run work after shutdown")
            self._queue.append(work)
            if self._running >= self._most:
                return  # a running thread takes it
            self._running += 1
            name = f"{self._name}_{self._started}"
            self._started += 1
        # Not a daemon: like a pool's threads, what runs is finished at exit.
        thread = threading.Thread(target=self._run, name=name)
        try:
            thread.start()
        except BaseException:
            self._ended()
            raise

    def shutdown(self, wait: bool = False) -> None:
        """No more work; ``wait``: until what was queued is done, else what
        waits is dropped (what runs is finished)."""
        with self._idle:
            self._closed = True
            if not wait:
                self._queue.clear()
                return
            while self._running:
                self._idle.wait()

    def _run(self) -> None:
        while True:
            with self._idle:
                if not self._queue:
                    self._running -= 1
                    self._idle.notify_all()
                    return
                work = self._queue.popleft()
            try:
                work()
            except Exception:  # never fatal to the deck: said in the log
                log.exception("the deck's background work failed")

    def _ended(self) -> None:
        with self._idle:
            self._running -= 1
            self._idle.notify_all()
