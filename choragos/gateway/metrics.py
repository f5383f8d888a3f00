"""The built-in gateway's counters and their Prometheus exposition.

The counts live in a :class:`Tally`, not in the HTTP server, so a server can
be replaced without losing them.  A tally can start from a previous gateway
process's counters (``restore``, from its counts file; ``seed``, from the
totals the session last read) and keep them on disk as it goes
(``store``, a journal: see :mod:`choragos.gateway.counts`): the numbers the session
reads are cumulative per session.  The exposition is prometheus-client's, with the
token family named exactly as the session's prober parses it.  Every key is
bounded by :class:`~choragos.gateway.labels.Labels` on its way in, restored
ones too, so no request can grow the page without end.
"""

from __future__ import annotations

import threading
from collections import Counter, OrderedDict
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily

from choragos.gateway.client import DIRECTIONS, Totals
from choragos.gateway.counts import FAMILIES, Counts, CountsFile
from choragos.gateway.labels import Labels

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
REMEMBERED = 4096  # answer ids counted, so one read back again is not counted twice


class Tally:
    """Tokens per (agent, model, direction), requests and errors; thread-safe."""

    def __init__(self, store: CountsFile | None = None) -> None:
        self._lock = threading.Lock()
        self.store = store
        self.tokens: Counter[tuple[str, str, str]] = Counter()
        self.requests: Counter[tuple[str, str, str]] = Counter()
        self.errors: Counter[tuple[str, str, str]] = Counter()
        self._added: Counts = {}  # since the store last took it: the next journal line
        self.labels = Labels()
        self._counted: OrderedDict[str, None] = OrderedDict()

    def restore(self, counts: Counts) -> None:
        """Start from a previous gateway's counters, as its counts file kept them
        (bounded as live counts are: a file full of made-up roles is folded)."""
        with self._lock:
            for family in FAMILIES:
                found = getattr(self, family)
                for key, value in counts.get(family, {}).items():
                    if family != "tokens" or key[2] in DIRECTIONS:
                        found[self.labels.key(family, key, found)] += value

    def seed(self, totals: Totals) -> None:
        """Raise each token count to at least the session's last reading of it.

        The counts file is normally ahead of that reading; this covers a
        file that could not be written or read (junk is skipped).
        """
        with self._lock:
            for agent, models in totals.items():
                for model, counts in (models.items() if isinstance(models, dict) else ()):
                    for direction, value in (counts.items() if isinstance(counts, dict) else ()):
                        if direction in DIRECTIONS and type(value) is int and value > 0:
                            key = self.labels.key("tokens", (agent, model, direction),
                                                  self.tokens)
                            self.tokens[key] = max(self.tokens[key], value)

    def counts(self) -> Counts:
        """Every counter, as the counts file keeps them."""
        with self._lock:
            return {family: dict(getattr(self, family)) for family in FAMILIES}

    def persist(self, whole: bool = False) -> None:
        """Write to the store, if there is one: after each counted answer what it
        added, or (``whole``, at start) every counter."""
        if self.store is not None:
            self.store.save(self._take, whole)

    def _take(self, whole: bool) -> Counts:
        # One hold of the lock: a count lands either in what is taken now or in
        # the next line, never in both.
        with self._lock:
            added, self._added = self._added, {}
            if whole:
                return {family: dict(getattr(self, family)) for family in FAMILIES}
        return added

    def _add(self, family: str, key: tuple[str, str, str], value: int) -> None:
        """Count ``value`` more (the caller holds the lock)."""
        found = getattr(self, family)
        key = self.labels.key(family, key, found)
        found[key] += value
        added = self._added.setdefault(family, {})
        added[key] = added.get(key, 0) + value

    def add_tokens(self, agent: str, model: str, counts: dict[str, int]) -> None:
        with self._lock:
            for direction, value in counts.items():
                if direction in DIRECTIONS and isinstance(value, int) and value > 0:
                    self._add("tokens", (agent, model, direction), value)

    def first_time(self, answer_id: str) -> bool:
        """True the first time ``answer_id`` is counted (an OpenAI response can be
        read again, or read later in background mode: its usage counts once)."""
        with self._lock:
            if answer_id in self._counted:
                return False
            self._counted[answer_id] = None
            if len(self._counted) > REMEMBERED:
                self._counted.popitem(last=False)
            return True

    def add_request(self, agent: str, api: str, code: int) -> None:
        with self._lock:
            self._add("requests", (agent, api, str(code)), 1)

    def add_error(self, agent: str, api: str, kind: str) -> None:
        with self._lock:
            self._add("errors", (agent, api, kind), 1)

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
