"""The session's own Prometheus ``/metrics`` (``[metrics] listen``), off by default.

Two sources, one registry of our own (never the process-wide default):

- the event log, heard record by record as it is written: the latencies
  (delegation to delivery, delivery to work-done, the wait at a gate), role
  restarts, injection retries and checkpoint durations;
- the core, asked at every scrape for its board and roster, so tasks by
  state, role states, tokens and cost read exactly what ``choragos board``
  and ``choragos status`` say at that moment.

docs/metrics.md describes each metric for a Grafana dashboard.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import start_http_server
from prometheus_client.registry import Collector

from choragos.config.model import split_host_port
from choragos.roles.rolestatus import RoleStatus

log = logging.getLogger("choragos.metrics")

# Seconds: a delivery is typed in within a second or two; a task takes minutes to hours.
_FAST = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)
_SLOW = (10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400)
ROLE_STATES = tuple(RoleStatus)

Ask = Callable[[dict], dict]  # a control command through the core, answered as an ack


class SessionMetrics:
    """Feed :meth:`hear` every event record; :meth:`serve` exposes the registry."""

    def __init__(self, ask: Ask) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._tasks: dict[str, dict[str, Any]] = {}
        self._guard = threading.Lock()
        self._server: Any = None
        histogram = _maker(Histogram, self.registry)
        counter = _maker(Counter, self.registry)
        self.to_delivery = histogram(
            "choragos_delegation_to_delivery_seconds",
            "From a delegation to its task being typed into the worker (gate waits included).",
            ["role"], buckets=sorted({*_FAST, *_SLOW}))
        self.to_work_done = histogram(
            "choragos_delivery_to_work_done_seconds",
            "From a task's delivery to the worker's work-done.", ["role"], buckets=_SLOW)
        self.gate_wait = histogram(
            "choragos_gate_wait_seconds",
            "How long a delegation waited at its approval gate until approved or rejected.",
            ["role", "decision"], buckets=_SLOW)
        self.checkpoint = histogram(
            "choragos_checkpoint_duration_seconds",
            "How long a workspace checkpoint took before a delivery.", [], buckets=_FAST)
        self.checkpoint_failures = counter(
            "choragos_checkpoint_failures", "Checkpoints that failed (the task went out anyway).")
        self.restarts = counter(
            "choragos_role_restarts", "Automatic restarts of a role after its process exited.",
            ["role"])
        self.retries = counter(
            "choragos_injection_retries",
            "Typed-in text (a task, a report, the boot brief) that had to be sent again.",
            ["role", "kind"])
        self.limits = counter(
            "choragos_role_limits",
            "Provider limits a role hit (one per limit, however often its agent retried).",
            ["role", "source"])
        self.refused = counter(
            "choragos_model_calls_refused",
            "Model calls the built-in gateway refused because a blocking budget was spent.",
            ["role"])
        self.registry.register(_BoardCollector(ask))

    # -- the event log --------------------------------------------------------------

    def hear(self, record: dict) -> None:
        """One event record, as written; never raises into the writer."""
        try:
            handler = _HANDLERS.get(str(record.get("event")))
            if handler is not None:
                with self._guard:
                    handler(self, record)
        except Exception:  # a metric must never cost an event
            log.debug("metrics: could not count %r", record.get("event"), exc_info=True)

    def _delegate(self, record: dict) -> None:
        self._tasks[str(record.get("task"))] = {"role": str(record.get("role")),
                                               "t": record["t"]}

    def _rerouted(self, record: dict) -> None:
        # Given to a free role while its own waits out a limit: the taker's times.
        task = self._tasks.get(str(record.get("task")))
        if task is not None and isinstance(record.get("role"), str):
            task["role"] = record["role"]

    def _gated(self, record: dict) -> None:
        task = self._tasks.get(str(record.get("task")))
        if task is not None:
            task["gated"] = record["t"]

    def _decided(self, record: dict) -> None:
        task = self._tasks.get(str(record.get("task")))
        if task is not None and "gated" in task:
            decision = "approved" if record["event"] == "gate approved" else "rejected"
            self.gate_wait.labels(task["role"], decision).observe(record["t"] - task["gated"])
            if decision == "rejected":  # never delivered: nothing more to time
                del self._tasks[str(record.get("task"))]

    def _delivered(self, record: dict) -> None:
        task = self._tasks.get(str(record.get("task")))
        if task is not None and "delivered" not in task:
            task["delivered"] = record["t"]
            self.to_delivery.labels(task["role"]).observe(record["t"] - task["t"])

    def _work_done(self, record: dict) -> None:
        task = self._tasks.get(str(record.get("task")))
        if record.get("note") or task is None or "done" in task or "delivered" not in task:
            return
        self.to_work_done.labels(task["role"]).observe(record["t"] - task["delivered"])
        # Timed to the end: forgotten, so a long session keeps only the tasks
        # in flight (a later record of it finds nothing, as a timed one did).
        del self._tasks[str(record.get("task"))]

    def _checkpointed(self, record: dict) -> None:
        seconds = record.get("seconds")
        if isinstance(seconds, int | float):
            self.checkpoint.observe(seconds)

    def _checkpoint_failed(self, record: dict) -> None:
        self.checkpoint_failures.inc()

    def _exited(self, record: dict) -> None:
        if record.get("restarting"):
            self.restarts.labels(str(record.get("role"))).inc()

    def _retry(self, record: dict) -> None:
        kind = "boot" if record["event"].startswith("boot") else str(record.get("kind"))
        self.retries.labels(str(record.get("role")), kind).inc()

    def _limited(self, record: dict) -> None:
        self.limits.labels(str(record.get("role")), str(record.get("source"))).inc()

    def _refused(self, record: dict) -> None:
        self.refused.labels(str(record.get("role"))).inc()

    # -- the endpoint ----------------------------------------------------------------

    def serve(self, listen: str) -> None:
        """Listen on ``host:port``; raises OSError when the address is taken."""
        host, port = split_host_port(listen)
        self._server, _ = start_http_server(port, host, registry=self.registry)

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


_HANDLERS: dict[str, Callable[[SessionMetrics, dict], None]] = {
    "delegate": SessionMetrics._delegate,
    "delegate gated": SessionMetrics._gated,
    "task rerouted": SessionMetrics._rerouted,
    "gate approved": SessionMetrics._decided,
    "gate rejected": SessionMetrics._decided,
    "delivered": SessionMetrics._delivered,
    "work-done": SessionMetrics._work_done,
    "checkpoint": SessionMetrics._checkpointed,
    "checkpoint failed": SessionMetrics._checkpoint_failed,
    "role exited": SessionMetrics._exited,
    "injection retry": SessionMetrics._retry,
    "boot injection retry": SessionMetrics._retry,
    "role limited": SessionMetrics._limited,
    "model call refused": SessionMetrics._refused,
}


def _maker(kind: type, registry: CollectorRegistry) -> Callable[..., Any]:
    def make(name: str, doc: str, labels: list[str] | None = None, **options: Any) -> Any:
        return kind(name, doc, labels or [], registry=registry, **options)
    return make


class _BoardCollector(Collector):
    """What the core's board and roster say, read at each scrape."""

    def __init__(self, ask: Ask) -> None:
        self.ask = ask

    def describe(self) -> list:
        return []  # asked at scrape time only: registering must not reach the core

    def collect(self) -> Iterator[Any]:
        board, status = self._answer("board"), self._answer("status")
        up = GaugeMetricFamily("choragos_session_up",
                               "1 when the session core answered this scrape.")
        up.add_metric([], 1.0 if board is not None and status is not None else 0.0)
        yield up
        if board is not None:
            yield _tasks(board.get("tasks") or [], board.get("archived_by") or [])
        if status is not None:
            yield from _roles(status.get("roles") or [])

    def _answer(self, cmd: str) -> dict | None:
        try:
            ack = self.ask({"cmd": cmd})
        except Exception as exc:  # the scrape still answers, with session_up 0
            log.debug("metrics: %s failed: %s", cmd, exc)
            return None
        return ack if ack.get("status") == "ok" else None


def _tasks(tasks: list[dict], archived: list[dict]) -> GaugeMetricFamily:
    """The session's tasks, the live board's and the archive's counted together."""
    family = GaugeMetricFamily("choragos_tasks", "Tasks of the session, by role and state.",
                               labels=["role", "state"])
    counts: dict[tuple[str, str], int] = {}
    for task in tasks:
        key = (str(task.get("role")), str(task.get("state")))
        counts[key] = counts.get(key, 0) + 1
    for tally in archived:
        key = (str(tally.get("role")), str(tally.get("state")))
        counts[key] = counts.get(key, 0) + int(tally.get("count") or 0)
    for (role, state), count in sorted(counts.items()):
        family.add_metric([role, state], count)
    return family


def _roles(roles: list[dict]) -> Iterator[Any]:
    state = GaugeMetricFamily("choragos_role_state",
                              "1 for the state each role is in now, 0 for the others.",
                              labels=["role", "state"])
    tokens = CounterMetricFamily("choragos_tokens", "Tokens each role's models handled "
                                 "(from the gateway's telemetry).",
                                 labels=["role", "direction"])
    cost = GaugeMetricFamily("choragos_cost_usd", "What those tokens cost in USD, priced "
                             "with [pricing]; absent when a model has no price.",
                             labels=["role"])
    until = GaugeMetricFamily("choragos_role_limited_until_seconds",
                              "When a limited role is set going again (Unix time); only "
                              "roles waiting out a provider's limit have a sample.",
                              labels=["role"])
    for role in roles:
        name = str(role.get("name"))
        if isinstance(role.get("limited_until"), int | float):
            until.add_metric([name], role["limited_until"])
        for known in ROLE_STATES:
            state.add_metric([name, known], 1.0 if role.get("state") == known else 0.0)
        for direction, count in (role.get("tokens") or {}).items():
            tokens.add_metric([name, direction], count)
        if isinstance(role.get("cost"), int | float):
            cost.add_metric([name], role["cost"])
    yield from (state, tokens, cost, until)
