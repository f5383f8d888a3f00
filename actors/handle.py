"""A stable address for a supervised actor.

pykka cannot restart a stopped actor, so the supervisor replaces a crashed
instance with a fresh one.  Everyone else holds a :class:`Handle`, never an
``ActorRef``: while the replacement starts, messages are buffered here and
then delivered in order, so nothing sent to a crashing actor is lost.

A handle the supervisor closed (the actor was stopped, given up, or was a
temporary child that ended) refuses every message: ``tell`` and ``ask``
raise :class:`ActorGone` and the refusal is logged, so a message to an
actor that will never run again is never dropped in silence.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import pykka

from choragos.actors.base import Crashed

log = logging.getLogger("choragos.actors")

class ActorGone(Exception):
    """The actor behind a handle stopped for good (the session is ending)."""


class ActorCrashed(Exception):
    """The handler of an ``ask`` raised; the actor is being replaced."""


class Handle:
    def __init__(self, name: str) -> None:
        self.name = name
        self._ref: pykka.ActorRef | None = None
        self._pending: list[Any] = []
        self._lock = threading.Lock()
        self._replaced = threading.Condition(self._lock)
        # Set under the lock, read without it (a bool: the reader of every
        # role's output asks it for every piece it reads).
        self.closed = False
        self._why = "it has stopped"

    def __repr__(self) -> str:
        return f"<Handle {self.name}>"

    def attach(self, ref: pykka.ActorRef, leftovers: list[Any] = ()) -> None:
        """Point at a (new) instance and hand it what the old one never read."""
        with self._lock:
            backlog = [*leftovers, *self._pending]
            self._pending.clear()
            for message in backlog:
                ref.tell(message)
            self._ref = ref
            self._replaced.notify_all()

    def requeue(self, messages: list[Any]) -> None:
        """Put an old instance's unread tells back, ahead of newer ones."""
        with self._lock:
            if not self.closed:
                self._pending[:0] = messages

    def detach(self) -> None:
        """Start buffering: the current instance is going away."""
        with self._lock:
            self._ref = None

    def close(self, why: str = "it has stopped") -> None:
        """Refuse every message from now on; ``why`` is what the senders are told."""
        with self._lock:
            self.closed = True
            self._why = why
            self._ref = None
            self._pending.clear()
            self._replaced.notify_all()

    def tell(self, message: Any) -> None:
        """Deliver (or buffer across a restart); raises :class:`ActorGone` when
        the actor will never run again."""
        with self._lock:
            if self.closed:
                self._refuse(message)
            if self._ref is not None:
                try:
                    self._ref.tell(message)
                    return
                except pykka.ActorDeadError:
                    self._ref = None
            self._pending.append(message)

    def ask(self, message: Any, timeout: float = 5.0) -> Any:
        """Ask and wait for the answer, riding over a restart if one happens."""
        deadline = time.monotonic() + timeout
        while True:
            ref = self._wait_for_ref(deadline, message)
            try:
                future = ref.ask(message, block=False)
                answer = future.get(timeout=max(0.0, deadline - time.monotonic()))
                if isinstance(answer, Crashed):
                    raise ActorCrashed(f"{self.name} crashed: {answer.error}")
                return answer
            except pykka.ActorDeadError:
                with self._lock:
                    if self._ref is ref:
                        self._ref = None
            if time.monotonic() >= deadline:
                raise pykka.Timeout(f"{self.name} did not answer within {timeout}s")

    def _refuse(self, message: Any) -> None:
        error = f"{self.name} is gone: {self._why}"
        log.warning("%s; %s not delivered", error, type(message).__name__)
        raise ActorGone(error)

    def _wait_for_ref(self, deadline: float, message: Any = None) -> pykka.ActorRef:
        with self._lock:
            while self._ref is None:
                if self.closed:
                    self._refuse(message)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise pykka.Timeout(f"{self.name} is restarting; try again")
                self._replaced.wait(remaining)
            return self._ref

    def current(self) -> pykka.ActorRef | None:
        """The instance behind the handle right now (None while replacing)."""
        with self._lock:
            return self._ref

    @property
    def alive(self) -> bool:
        with self._lock:
            return self._ref is not None and self._ref.is_alive()
