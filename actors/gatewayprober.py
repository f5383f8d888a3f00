"""The gateway prober: health and token totals, every two seconds.

The HTTP fetch runs on this actor's own thread, so a slow gateway stalls
nobody else; its timeouts keep even this actor's inbox moving.  Health is
shared with the socket threads through :class:`Health` (the P5 gate reads
it without asking any actor); everything else goes to the core as tells.
"""

from __future__ import annotations

import functools
from functools import singledispatchmethod
from typing import Any

from choragos.actors.base import Actor
from choragos.actors.latemessages import (
    FlushTick,
    FlushTokens,
    GatewayHealth,
    Probe,
    ProberState,
    TokenTotals,
)
from choragos.actors.timers import Timers
from choragos.gateway.client import MAX_BODY, parse_metrics

PROBE_EVERY = 2.0
FLUSH_EVERY = 30.0
FETCH_TIMEOUT = 1.0



def fetch_metrics(url: str, timeout: float = FETCH_TIMEOUT) -> bytes:
    """GET ``url``, reading at most one byte past the cap so oversize is detectable."""
    with _opener().open(url, timeout=timeout) as response:
        return response.read(MAX_BODY + 1)


@functools.cache
def _opener() -> Any:
    # Imported on the first probe: urllib's HTTP client brings ssl and email
    # (7 MB of a session's memory), and a session without a gateway never
    # probes.  Never through a proxy from the environment: the gateway is
    # local by contract.
    import urllib.request

    return urllib.request.build_opener(urllib.request.ProxyHandler({}))


class GatewayProber(Actor):
    def __init__(self, state: ProberState, core: Any, timers: Timers, me: Any,
                 supervisor: Any = None, fetch=fetch_metrics) -> None:
        super().__init__("gateway", supervisor)
        self.s = state
        self.core = core
        self.timers = timers
        self.me = me
        self.fetch = fetch

    @singledispatchmethod
    def handle(self, message: Any) -> Any:
        return super().handle(message)

    @handle.register(Probe)
    def _on_probe(self, msg: Probe) -> None:
        # Re-arm first: a crash below must not end the probing.
        self.timers.after(PROBE_EVERY, self.me, Probe())
        import http.client  # loaded by the first fetch (see _opener)

        try:
            totals = parse_metrics(self.fetch(self.s.url))
        except (OSError, http.client.HTTPException, ValueError) as exc:  # ValueError: MetricsError
            self._mark(False, _reason(exc))
            return
        self._mark(True, "metrics answered")
        self.s.totals = totals
        self.core.tell(TokenTotals(totals))

    @handle.register(FlushTick)
    def _on_flush(self, msg: FlushTick) -> None:
        self.timers.after(FLUSH_EVERY, self.me, FlushTick())
        self.core.tell(FlushTokens())

    def _mark(self, up: bool, reason: str) -> None:
        if self.s.health.set(up, reason):
            self.core.tell(GatewayHealth(up, reason))


def _reason(exc: Exception) -> str:
    reason = getattr(exc, "reason", None)  # URLError wraps the socket error
    return str(reason if reason is not None else exc) or type(exc).__name__
