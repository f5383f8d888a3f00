"""The built-in gateway given up, said aloud and tried again after a cool-down.

The gateway's runner (``proxyrunner.py``) lives under a supervisor of its
own ("builtin-gateway", a temporary child of the session's): restarted up
to 5 times a minute, then given up.  A session run overnight must not end
its night there on a transient fault (the port briefly taken, a crash loop
on one bad answer), so a give-up is

- said: the server log warns that work is held (fail-closed) and when the
  next try is, an event says the same, and the ``on_exit`` hook (and the
  notifier through it) hears of it as a part of the session, not a role
  (``CHORAGOS_EXITED=part``, ``CHORAGOS_PART=gateway``);
- tried again by the session's timers after a cool-down that doubles at
  each give-up in a row (30 s, 1 min, 2, 4, 8, then 15 min at most) and
  starts over from 30 s once a revived gateway has stayed up longer than
  the longest wait; at once when the operator asks (``choragos restart
  --gateway``).

A try builds the subtree anew (:class:`~choragos.actors.subtree.Subtree`:
a new supervisor with a fresh allowance, a new runner on the same state, so
the counts file goes on from where it was and is not reset).  The prober
then finds the gateway up and the gate opens as after any outage.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from choragos.actors.children import Child
from choragos.actors.subtree import Subtree, tell_exit_hook
from choragos.control import wire

if TYPE_CHECKING:
    from choragos.actors.session import Session

log = logging.getLogger("choragos.gateway")

NAME = "builtin-gateway"
FIRST_WAIT = 30.0
LONGEST_WAIT = 15 * 60.0
# Tests only: the first wait in seconds (the later ones double it as usual).
COOLDOWN_ENV = "CHORAGOS_TEST_GATEWAY_COOLDOWN"


@dataclass(frozen=True)
class TryAgain:
    """The timers': the cool-down after give-up ``number`` is over."""

    number: int


def cool_down(tries: int, first: float = FIRST_WAIT) -> float:
    """The wait before try ``tries + 1`` of a run of give-ups."""
    return min(first * 2 ** min(tries, 32), LONGEST_WAIT)


class GatewayRevival:
    """The "builtin-gateway" subtree of ``session``, its give-ups and its tries."""

    def __init__(self, session: Session, *, intensity: int, period: float,
                 children: tuple[Child, ...]) -> None:
        self.session = session
        self.subtree = Subtree(NAME, session, children, intensity=intensity, period=period,
                               on_given_up=self.given_up)
        self.first = float(os.environ.get(COOLDOWN_ENV) or FIRST_WAIT)
        self.down = ""  # why it was given up, while it is
        self.give_ups = 0  # in this session: a timer for an older one is stale
        self.tries = 0  # give-ups in a row: the next wait grows with them
        self.revived_at: float | None = None
        self._lock = threading.Lock()  # one give-up or try at a time

    def given_up(self, reason: str) -> None:
        """Say so, and set the timer for the next try."""
        session = self.session
        if session.stopped.is_set() or session.timers is None:
            return
        with self._lock:
            now = time.monotonic()
            if self.revived_at is not None and now - self.revived_at > LONGEST_WAIT:
                self.tries = 0  # it stayed up a long while: a new run of faults
            wait = cool_down(self.tries, self.first)
            self.tries += 1
            self.give_ups += 1
            self.down = reason
            number = self.give_ups
        at = time.strftime("%H:%M:%S", time.localtime(time.time() + wait))
        log.warning("the built-in gateway is given up after repeated failures: %s; work is "
                    "held (no work is handed out while it is down) until it is back; next "
                    "try in %gs, at %s (`choragos restart --gateway` tries now)",
                    reason, wait, at)
        session.events.write("gateway retry scheduled", after=wait, at=at, reason=reason)
        tell_exit_hook(session, "gateway", "the built-in gateway", reason)
        session.timers.after(wait, self, TryAgain(number))

    def tell(self, message: TryAgain) -> None:
        """The timers' call (so never blocking their thread): try on a thread of its own."""
        threading.Thread(target=self.revive, args=("cool-down", message.number),
                         name="gateway-revival", daemon=True).start()

    def restart(self) -> dict:
        """The answer to the operator's ``choragos restart --gateway`` (on the
        core's thread: the try runs on a thread of its own, the answer does not
        wait for the gateway to listen)."""
        if not self.down:
            return wire.error("the built-in gateway is not given up (its supervisor starts it "
                              "again after a crash): nothing to restart; `choragos status` "
                              "shows it")
        threading.Thread(target=self.revive, args=("operator",), name="gateway-revival",
                         daemon=True).start()
        return wire.ok(action="restart", part="gateway")

    def revive(self, on: str, number: int | None = None) -> None:
        """Build the given-up gateway anew (``number``: the give-up a timer was
        set for; a try since, the operator's, leaves that timer nothing to do)."""
        session = self.session
        with self._lock:
            if not self.down or session.stopped.is_set() or number not in (None, self.give_ups):
                return
            error, self.down = self.down, ""
            self.revived_at = time.monotonic()
        log.warning("the built-in gateway is started again (on: %s)", on)
        session.events.write("actor restarted", actor=NAME, supervisor="session",
                             error=error, on=on)
        try:
            self.subtree.await_dropped()
            self.subtree.build({"core": session.core})
        except Exception as exc:
            log.exception("the built-in gateway could not be started again")
            session.events.write("gateway restart failed", on=on, error=str(exc))
            self.given_up(f"its restart failed: {exc}")

