"""The built-in gateway's counters and their Prometheus exposition.

The counts live in a :class:`Tally`, not in the HTTP server, so a server can
be replaced without losing them, and a tally can start from the totals a
previous gateway process reported (``seed``): the numbers the session reads
are cumulative per session.  The exposition is prometheus-client's, with the
token family named exactly as the session's prober parses it.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily

from choragos.gateway import DIRECTIONS, Totals

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class Tally:
    """Tokens per (agent, model, direction), requests and errors; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.tokens: Counter[tuple[str, str, str]] = Counter()
        self.requests: Counter[tuple[str, str, str]] = Counter()
        self.errors: Counter[tuple[str, str, str]] = Counter()

    def seed(self, totals: Totals) -> None:
        """Start from a previous gateway's cumulative token totals (junk is skipped)."""
        for agent, models in totals.items():
            for model, counts in (models.items() if isinstance(models, dict) else ()):
                if isinstance(counts, dict):
                    self.add_tokens(str(agent), str(model), counts)

    def add_tokens(self, agent: str, model: str, counts: dict[str, int]) -> None:
        with self._lock:
            for direction, value in counts.items():
                if direction in DIRECTIONS and isinstance(value, int) and value > 0:
                    self.tokens[agent, model, direction] += value

    def add_request(self, agent: str, api: str, code: int) -> None:
        with self._lock:
            self.requests[agent, api, str(code)] += 1

    def add_error(self, agent: str, api: str, kind: str) -> None:
        with self._lock:
            self.errors[agent, api, kind] += 1

    def families(self) -> list[CounterMetricFamily]:
        with self._lock:
            tokens, requests, errors = (dict(self.tokens), dict(self.requests),
                                        dict(self.errors))
        return [
            _family("sphragis_tokens", "Model tokens seen by the gateway.",
                    ("agent", "model", "direction"), tokens),
            _family("sphragis_requests", "Requests proxied, by HTTP status sent to the agent.",
                    ("agent", "api", "code"), requests),
            _family("sphragis_errors", "Requests the gateway answered itself or could not "
                    "read the usage of, by kind.", ("agent", "api", "kind"), errors),
        ]


def _family(name: str, doc: str, labels: tuple[str, ...],
            values: dict[tuple[str, ...], int]) -> CounterMetricFamily:
    family = CounterMetricFamily(name, doc, labels=labels)
    for key, value in sorted(values.items()):
        family.add_metric(list(key), value)
    return family


class _Collector:
    def __init__(self, tally: Tally) -> None:
        self.tally = tally

    def collect(self) -> Iterator[CounterMetricFamily]:
        yield from self.tally.families()


def exposition(tally: Tally) -> bytes:
    """The Prometheus text for ``tally`` (a fresh registry: no process metrics)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Collector(tally))
    return generate_latest(registry)
