"""The base of every choragos actor: typed messages and reported failures.

pykka sends a ``tell`` handler's exception to ``on_failure`` and stops the
actor, hands an ``ask`` handler's exception back to the caller and goes on,
and answers any ``BaseException`` by stopping *every* actor.  None of that
is supervision.  Here every handler runs inside one guard: a failure is
logged, reported to the supervisor with the unread inbox, and this instance
stops; the supervisor starts a fresh one on the same state object.

Three ways an instance ends, each told apart so the supervisor can apply the
child's restart type (see :mod:`actors.supervisor`):

- a crash (a handler raised): :class:`ChildFailed` goes to the supervisor;
- a normal exit (the actor called :meth:`Actor.finish`): :class:`ChildExited`;
- a retirement (the supervisor sent :class:`Retire` to replace the instance
  without a shutdown, as a rest-for-one restart or an escalation does): the
  state lives on, nothing is cleaned up, the unread inbox is handed back.

A deliberate stop (``ref.stop()``) runs :meth:`Actor.on_shutdown`.
"""

from __future__ import annotations

import logging
import queue
import traceback
from dataclasses import dataclass, field
from functools import singledispatchmethod
from typing import Any

import pykka

log = logging.getLogger("choragos.actors")


@dataclass(frozen=True)
class ChildFailed:
    """Sent to the supervisor by an actor whose handler raised."""

    name: str
    error: str
    trace: str
    leftovers: list[Any] = field(default_factory=list)
    urn: str = ""  # which instance: a stale report about a replaced one is ignored


@dataclass(frozen=True)
class ChildExited:
    """Sent to the supervisor by an actor that ended its work on purpose."""

    name: str
    urn: str = ""


@dataclass(frozen=True)
class Retire:
    """From the supervisor: stop this instance without a shutdown; the answer
    is the unread inbox (tells only), for the replacement."""


@dataclass(frozen=True)
class Crashed:
    """What an ``ask`` returns when the handler crashed (see Handle.ask)."""

    error: str


def dispatch_of(cls: type, name: str = "handle") -> Any:
    """The lookup of the registrations of ``cls``'s ``singledispatchmethod``
    ``name`` (a class -> the function registered for it), as a class
    attribute; None when ``name`` is a plain method.  Reading ``self.handle``
    makes a new wrapper each time on Python 3.11 (a closure and
    ``functools.update_wrapper``), so each class keeps its dispatcher's
    lookup instead (the actors here, the deck's actions too)."""
    method = next(k.__dict__[name] for k in cls.__mro__ if name in k.__dict__)
    found = getattr(getattr(method, "dispatcher", None), "dispatch", None)
    return found and staticmethod(found)


class Actor(pykka.ThreadingActor):
    """Dispatches messages by type to ``handle`` registrations."""

    def __init__(self, name: str, supervisor: Any | None = None) -> None:
        super().__init__()
        self.name = name
        self.supervisor = supervisor  # a Handle/ActorRef that accepts ChildFailed
        self._crashing = False

    def on_stop(self) -> None:
        # A crash is not a shutdown: the state (and the role's process) lives
        # on into the replacement instance, so only real stops clean up.
        if not self._crashing:
            self.on_shutdown()

    def on_shutdown(self) -> None:
        """Release what this actor owns; called on a deliberate stop only."""

    @singledispatchmethod
    def handle(self, message: Any) -> Any:
        raise TypeError(f"{self.name} cannot handle {type(message).__name__}")

    _handler_for: Any = None  # the class's dispatch, set for each subclass

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._handler_for = dispatch_of(cls)

    def on_receive(self, message: Any) -> Any:
        if isinstance(message, Retire):
            return self._retire()
        try:
            lookup = self._handler_for
            return (lookup(message.__class__).__get__(self) if lookup else self.handle)(message)
        except BaseException as exc:
            return self._crashed(exc)

    def finish(self) -> None:
        """End this actor normally (a transient or temporary child then stays
        down; a permanent one is started again)."""
        self._stop()
        _report(self.supervisor, ChildExited(self.name, self.actor_urn))

    def on_retire(self) -> None:
        """Hook: called before this instance is retired (a supervisor retires its children)."""

    def _retire(self) -> list[Any]:
        self._crashing = True  # not a shutdown: the state lives on
        self.on_retire()
        self._stop()
        return self._drain_inbox()

    def _crashed(self, exc: BaseException) -> Crashed:
        error = f"{type(exc).__name__}: {exc}"
        trace = traceback.format_exc()
        log.error("actor %s crashed: %s\n%s", self.name, error, trace)
        self._crashing = True
        self._stop()
        leftovers = self._drain_inbox()
        report = ChildFailed(self.name, error, trace, leftovers, self.actor_urn)
        _report(self.supervisor, report)
        return Crashed(error)

    def _drain_inbox(self) -> list[Any]:
        """Take the unread tells so the replacement can process them."""
        leftovers = []
        while True:
            try:
                envelope = self.actor_inbox.get_nowait()
            except queue.Empty:
                return leftovers
            if envelope.reply_to is None:
                leftovers.append(envelope.message)
            else:
                envelope.reply_to.set_exception(
                    exc_info=(pykka.ActorDeadError, pykka.ActorDeadError(
                        f"{self.name} crashed before answering"), None))


def _report(supervisor: Any, report: Any) -> None:
    """Tell the supervisor; one that is gone cannot act on it, so say so."""
    if supervisor is None:
        return
    try:
        supervisor.tell(report)
    except Exception as exc:  # pykka.ActorDeadError, handle.ActorGone
        log.error("actor %s: its supervisor is gone (%s); nobody restarts it",
                  report.name, exc)
