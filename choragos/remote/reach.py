"""Whether a host answers: what an ssh failure means, and when to ask again.

A remote role's process can end for two kinds of reason.  Its agent
exited on a host that answers: the crash restart policy applies.  Or the
host did not answer (the connection dropped, sshd is down, the network
is gone, the host reboots): the agent is not at fault, so its role is
*held* instead, its crash budget untouched and its task waiting, while the
host is probed with back-off (:class:`Reach`) until it answers.

One kind of ssh failure is neither: a login the host turns away (the key
refused, a host key that changed).  That is a fault of the configuration
that no waiting mends, so it is :data:`REFUSED`: the role is held saying
so and the host is not probed again until the operator restarts the role.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

__all__ = ["ANSWERED", "REFUSED", "UNREACHABLE", "Reach", "classify", "next_delay"]

ANSWERED = ""               # the host answered (or the failure was not ssh's)
UNREACHABLE = "unreachable"  # the host did not answer: wait for it
REFUSED = "refused"          # it answered and turned the login away: the operator's to fix

SSH_FAILED = 255  # ssh's own status when it could not connect or the connection dropped

# What OpenSSH says when the host answered but the login cannot succeed as
# configured: waiting never mends these.  (A name that does not resolve is
# not among them: a tailnet's or a VPN's names go with the network.)
CONFIG_FAULTS = (
    "permission denied", "host key verification failed", "remote host identification has "
    "changed", "too many authentication failures", "no matching host key type",
    "no matching key exchange", "no matching cipher", "no matching mac", "unable to negotiate",
    "bad configuration option", "no more authentication methods", "account is locked",
    "keyboard-interactive", "password:",
)

FIRST_DELAY = 3.0   # seconds before the first probe of a host that stopped answering
DELAY_CAP = 120.0   # the probes' back-off grows no further
SETTLE = 60.0       # an outage that begins this soon after the last ended continues it


def classify(code: int | None, stderr: str) -> str:
    """:data:`UNREACHABLE`, :data:`REFUSED` or :data:`ANSWERED` for an ssh
    command's exit ``code`` and what it wrote on its standard error."""
    if code != SSH_FAILED:
        return ANSWERED
    said = stderr.lower()
    if any(fault in said for fault in CONFIG_FAULTS):
        return REFUSED
    return UNREACHABLE


def last_line(stderr: str) -> str:
    """What ssh said last: the line people need (the rest is warnings)."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def next_delay(tries: int) -> float:
    """Seconds before the next probe after ``tries`` probes that found nothing."""
    return min(DELAY_CAP, FIRST_DELAY * 2.0 ** min(tries, 32))


@dataclass(frozen=True)
class Probe:
    """What one probe of a host found."""

    kind: str    # ANSWERED, UNREACHABLE or REFUSED
    why: str     # what ssh said, when it did not answer
    ended: float  # (monotonic) when the probe ended


@dataclass(frozen=True)
class Outage:
    """Where a host's outage stands, as a held role reads it."""

    episode: int   # counts outages: a role makes its noise once per episode and kind
    kind: str      # UNREACHABLE or REFUSED
    why: str
    since: float   # (wall clock) when it began
    next_try: float | None  # (monotonic) the next probe is due; None: not probed (REFUSED)


class Reach:
    """One host's outages, shared by every role that runs there.

    The first role that finds the host gone begins an outage; the others
    join it and share its rounds: each held role has a probe due at
    :attr:`Outage.next_try`, and when several are due at once one probe
    answers them all (:meth:`fresh`).  An outage that begins within
    :data:`SETTLE` seconds of the last one's end (a connection that flaps)
    continues it: its back-off goes on growing and nothing is said again.
    """

    def __init__(self, clock=time.monotonic, wall=time.time) -> None:
        self._clock, self._wall = clock, wall
        self._lock = threading.Lock()
        self.episode = 0
        self.current: Outage | None = None
        self._tries = 0
        self._ended_at: float | None = None  # (monotonic) when the last outage ended
        self.last: Probe | None = None

    def lost(self, kind: str, why: str) -> Outage:
        """A role found the host not answering (``kind``, ``why``): the outage."""
        with self._lock:
            now = self._clock()
            current = self.current
            if current is None:
                flapping = self._ended_at is not None and now - self._ended_at < SETTLE
                if not flapping:
                    self.episode += 1
                    self._tries = 0
                due = None if kind == REFUSED else now + next_delay(self._tries)
                current = Outage(self.episode, kind, why, self._wall(), due)
            elif current.kind != kind or current.next_try is None:
                due = None if kind == REFUSED else now + next_delay(self._tries)
                current = Outage(current.episode, kind, why, current.since, due)
            self.current = current
            return current

    def probed(self, probe: Probe) -> Outage | None:
        """What a probe found: the outage that goes on, or None once the host answered."""
        with self._lock:
            self.last = probe
            if probe.kind == ANSWERED:
                if self.current is not None:
                    self._ended_at = probe.ended
                self.current = None
                return None
            self._tries += 1
            current = self.current
            episode = current.episode if current is not None else self._begin()
            since = current.since if current is not None else self._wall()
            due = None if probe.kind == REFUSED else probe.ended + next_delay(self._tries)
            self.current = Outage(episode, probe.kind, probe.why, since, due)
            return self.current

    def _begin(self) -> int:
        self.episode += 1
        return self.episode

    def answered(self) -> None:
        """The host answered a start: the outage, if any, is over."""
        self.probed(Probe(ANSWERED, "", self._clock()))

    def fresh(self, due: float) -> Probe | None:
        """A probe that ended at or after ``due``: it answers a round due then."""
        last = self.last
        return last if last is not None and last.ended >= due else None
