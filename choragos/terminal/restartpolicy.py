"""When a role's process exits, should it come back, and after how long?

OTP's vocabulary: ``""`` is *temporary* (never restarted), ``on-failure``
is *transient* (restarted after a non-zero exit or a signal), ``always`` is
*permanent*.  A budget of ``retries`` automatic restarts stops a broken
command from crash-looping; a manual restart resets it.
"""

from __future__ import annotations

from dataclasses import dataclass

BACKOFF_BASE = 1.0
BACKOFF_CAP = 30.0


@dataclass(frozen=True)
class ExitStatus:
    """How a process ended: its exit code or signal, and what that means when known."""

    code: int | None = None
    signal: int | None = None
    cause: str = ""  # what the exit means, when known better than its number

    @property
    def failed(self) -> bool:
        return self.signal is not None or (self.code or 0) != 0

    def describe(self) -> str:
        if self.cause:
            return f"{self.cause} ({self._number()})"
        return self._number()

    def _number(self) -> str:
        if self.signal is not None:
            return f"killed by signal {self.signal}"
        return f"exit status {self.code}"


@dataclass(frozen=True)
class Decision:
    """Whether an exited role's process comes back, after how long, and why."""

    restart: bool
    delay: float = 0.0
    reason: str = ""


def decide(policy: str, retries: int, used: int, status: ExitStatus,
           stopping: bool = False) -> Decision:
    """Decide on a restart after the ``used``-th automatic restart so far."""
    if stopping:
        return Decision(False, reason="stopped on purpose")
    if policy == "always" or (policy == "on-failure" and status.failed):
        if used >= retries:
            return Decision(False, reason=f"restart budget spent ({used} of {retries})")
        # The exponent stops growing long before the cap matters: 2 ** 1024 is
        # no float, and a role with a large restart_retries gets that far.
        delay = min(BACKOFF_CAP, BACKOFF_BASE * 2.0 ** min(used, 64))
        return Decision(True, delay, reason=f"restart {used + 1} of {retries}")
    if policy == "on-failure":
        return Decision(False, reason="clean exit")
    return Decision(False, reason="no restart policy")
