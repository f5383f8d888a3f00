"""The deck's commands to the session: control commands through the same
``Dispatch`` registry as the control socket, and the deck's other reads
(a task's diff, the report page), all run on worker threads so a busy core
never freezes the screen; their answers come back to the loop's thread.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from choragos.ui.deckbase import DeckHost, SessionPort


def answered(ack: dict, key: str) -> list:
    """The list ``key`` of a command's answer; none when the command failed."""
    return ack.get(key, []) if ack.get("status") == "ok" else []


class CommandRunner:
    """Commands and reads off the loop's thread."""

    def __init__(self, port: SessionPort, host: DeckHost) -> None:
        self.port = port
        self.host = host
        self._workers = ThreadPoolExecutor(max_workers=2, thread_name_prefix="deck-cmd")

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
        self._workers.shutdown(wait=wait, cancel_futures=not wait)
