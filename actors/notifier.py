"""The push notifier (``[notify]``): a supervised actor that sends the messages.

It hears every hook the core fires (``Hooks.heard``), keeps the ones a
person is needed for, and lets the :class:`~choragos.web.notify.Coalescer`
say when to send; a timer brings it back for the held ones.  Sending
blocks this actor's thread only (up to the send timeout): the core never
waits on a push service.  A message that could not be sent is logged
(``notify failed``) and held, to go with what comes meanwhile after a wait
that doubles at each failure in a row (never a flood; a person left alone
overnight still hears of the role that died while the service was down).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import singledispatchmethod
from typing import TYPE_CHECKING, Any

from choragos.actors.base import Actor
from choragos.config.model import NotifySettings
from choragos.web import access as webaccess
from choragos.web import notify

if TYPE_CHECKING:
    from choragos.actors.session import Session

log = logging.getLogger("choragos.notify")


@dataclass(frozen=True)
class Flush:
    """The timer's: send what is due."""


@dataclass
class NotifyState:
    """The notifier's state: its settings, the page's link, the coalescer and its timer."""

    settings: NotifySettings
    base: Callable[[], str]  # the page's URL as the reader reaches it ("" while unknown)
    token: Callable[[], str | None]  # the token, only when it may travel in the link
    on_event: Callable[..., None]
    coalescer: notify.Coalescer = field(init=False)
    timer_due: float | None = None
    sent: int = 0

    def __post_init__(self) -> None:
        self.coalescer = notify.Coalescer(self.settings.every)


class NotifierActor(Actor):
    def __init__(self, state: NotifyState, timers: Any, me: Any, supervisor: Any = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__("notifier", supervisor)
        self.s = state
        self.timers = timers
        self.me = me
        self.clock = clock

    @singledispatchmethod
    def handle(self, message: Any) -> Any:
        return super().handle(message)

    @handle.register(notify.Alert)
    def _alert(self, alert: notify.Alert) -> None:
        now = self.clock()
        due = self.s.coalescer.add(alert, now)
        if due <= now:
            self._send(now)
        else:
            self._wake_at(due, now)

    def _wake_at(self, due: float, now: float) -> None:
        if self.s.timer_due is None:
            self.s.timer_due = due
            self.timers.after(due - now, self.me, Flush())

    @handle.register(Flush)
    def _flush(self, message: Flush) -> None:
        self.s.timer_due = None
        now = self.clock()
        self._send(now)
        if self.s.coalescer.held:  # a timer come early, or a retry yet to come
            self._wake_at(self.s.coalescer.due_at(now), now)

    def _send(self, now: float) -> None:
        batch = self.s.coalescer.take(now)
        if not batch:
            return
        settings, coalescer = self.s.settings, self.s.coalescer
        message = notify.compose(batch, self.s.base(), self.s.token(), coalescer.dropped)
        try:
            notify.send(settings.url, settings.kind, message)
        except (OSError, ValueError) as exc:
            wait = coalescer.failed(batch, now)
            log.warning("notify: could not send to the push service: %s; trying again "
                        "in %gs", exc, wait)
            self.s.on_event("notify failed", items=len(batch), reason=str(exc), retry_in=wait)
            self._wake_at(now + wait, now)
            return
        coalescer.sent()
        self.s.sent += 1
        self.s.on_event("notified", items=len(batch), hooks=sorted({a.hook for a in batch}))


def hear(handle: Any) -> Callable[[str, str, str, str, Mapping[str, str]], None]:
    """The ``Hooks.heard`` listener that tells the notifier of the hooks it sends for."""

    def listener(hook: str, role: str, task: str, task_id: str,
                 extra: Mapping[str, str]) -> None:
        if hook in notify.NOTIFIED:
            handle.tell(notify.Alert(hook, role, task_id, task, part=notify.part_of(extra)))

    return listener


def notifier(session: Session) -> Callable[[Any], Any] | None:
    """The notifier's start (under the session's supervisor), when ``[notify] url`` is set."""
    settings = session.config.notify
    if not settings.url:
        return None

    def base() -> str:
        if settings.link:
            return settings.link
        return webaccess.page_url(session.web.addr) if session.web is not None else ""

    def token() -> str | None:
        return webaccess.read_token(session.workdir) or None if settings.token_in_link else None

    state = NotifyState(settings, base, token, session.events.write)
    sup, timers = session.supervisor, session.timers
    return lambda h: NotifierActor.start(state, timers, h, sup)


def notifier_started(session: Session, hooks: Any, handle: Any) -> None:
    """The notifier runs: it hears the hooks from now on."""
    settings = session.config.notify
    hooks.heard.append(hear(handle))
    session.events.write("notify on", kind=settings.kind, every=settings.every,
                         token_in_link=settings.token_in_link)
