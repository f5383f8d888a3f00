"""The listener's gate: fail closed while an enforced gateway is down.

A session whose gateway is enforced hands out no work it cannot count:
while the prober has not seen the gateway up, the commands that would start
work (``wire.gateway_refusal`` names them) are refused before the core
sees them, each refusal an event naming the command and the reason.
"""

from __future__ import annotations

from collections.abc import Callable

from choragos.actors.latemessages import ProberState
from choragos.control import wire
from choragos.gateway.client import GatewayMode


class GatewayGate:
    def __init__(self, mode: GatewayMode, prober: ProberState,
                 log_event: Callable[..., None]) -> None:
        self.mode = mode
        self.prober = prober  # the prober's state: its health is read on every request
        self.log_event = log_event

    def refusal(self, request: dict) -> str | None:
        """Why ``request`` is refused now, or None."""
        if not self.mode.enforced or self.prober.health.up:
            return None
        refusal = wire.gateway_refusal(request)
        if refusal is None:
            return None
        self.log_event(wire.GATEWAY_DOWN, cmd=request.get("cmd"),
                       reason=self.prober.health.reason)
        return refusal["error"]
