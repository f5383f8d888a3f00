"""The event-fed half of the session's /metrics, record by record."""

from __future__ import annotations

from choragos.session.metrics import SessionMetrics


def ev(t: float, event: str, **fields: object) -> dict:
    return {"t": 1000.0 + t, "event": event, **fields}


def fed(*records: dict) -> SessionMetrics:
    metrics = SessionMetrics(lambda request: {"status": "error", "error": "no core"})
    for record in records:
        metrics.hear(record)
    return metrics


def value(metrics: SessionMetrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


def test_latencies_gate_waits_retries_and_checkpoints() -> None:
    m = fed(ev(0, "delegate", task="T1", role="rel"),
            ev(0, "delegate gated", task="T1", role="rel"),
            ev(40, "gate approved", task="T1", role="rel"),
            ev(40.2, "checkpoint", task="T1", ref="r", seconds=0.2),
            ev(41, "injection retry", role="rel", kind="task", ok=False),
            ev(42, "delivered", task="T1", role="rel"),
            ev(42.5, "delivered", task="T1", role="rel", by="work-done"),  # counts once
            ev(100, "work-done", task="T1", role="rel", note=None),
            ev(101, "work-done", task="T1", role="rel", note="already closed"),
            ev(102, "delegate", task="T2", role="rel"),
            ev(102, "delegate gated", task="T2", role="rel"),
            ev(110, "gate rejected", task="T2", role="rel"),
            ev(111, "boot injection retry", role="lead", kind="boot", ok=False),
            ev(112, "role exited", role="lead", restarting=True),
            ev(113, "role exited", role="lead", restarting=False),
            ev(114, "checkpoint failed", task="T9", error="disk"),
            {"t": "garbage", "event": "delivered", "task": "T1"})  # never raises
    assert value(m, "choragos_delegation_to_delivery_seconds_sum", role="rel") == 42
    assert value(m, "choragos_delegation_to_delivery_seconds_count", role="rel") == 1
    assert value(m, "choragos_delivery_to_work_done_seconds_sum", role="rel") == 58
    assert value(m, "choragos_delivery_to_work_done_seconds_count", role="rel") == 1
    assert value(m, "choragos_gate_wait_seconds_sum", role="rel", decision="approved") == 40
    assert value(m, "choragos_gate_wait_seconds_sum", role="rel", decision="rejected") == 8
    assert value(m, "choragos_checkpoint_duration_seconds_count") == 1
    assert value(m, "choragos_checkpoint_failures_total") == 1
    assert value(m, "choragos_injection_retries_total", role="rel", kind="task") == 1
    assert value(m, "choragos_injection_retries_total", role="lead", kind="boot") == 1
    assert value(m, "choragos_role_restarts_total", role="lead") == 1


def test_a_scrape_without_a_core_says_so_and_still_answers() -> None:
    m = fed()
    assert value(m, "choragos_session_up") == 0
    assert value(m, "choragos_tasks", role="x", state="done") is None


def test_a_task_timed_to_its_end_is_forgotten() -> None:
    """Counted: an entry was kept for every task of the session (1,000 after
    1,000 tasks); now only the tasks still in flight, and the latencies are
    the same.  A task's later records (a second delivery or work-done) count
    nothing, as before."""
    records = []
    for n in range(1000):
        records += [ev(n, "delegate", task=f"T{n}", role="rel"),
                    ev(n + 1, "delivered", task=f"T{n}", role="rel"),
                    ev(n + 3, "work-done", task=f"T{n}", role="rel", note=None)]
    records += [ev(2000, "delegate", task="T1000", role="rel"),
                ev(2000, "delegate gated", task="T1000", role="rel"),
                ev(2010, "gate rejected", task="T1000", role="rel"),
                ev(2011, "delegate", task="T1001", role="rel"),
                ev(2012, "delivered", task="T1", role="rel"),
                ev(2013, "work-done", task="T1", role="rel", note=None)]
    m = fed(*records)
    assert list(m._tasks) == ["T1001"]
    assert value(m, "choragos_delegation_to_delivery_seconds_count", role="rel") == 1000
    assert value(m, "choragos_delivery_to_work_done_seconds_count", role="rel") == 1000
    assert value(m, "choragos_delivery_to_work_done_seconds_sum", role="rel") == 2000
    assert value(m, "choragos_gate_wait_seconds_sum", role="rel", decision="rejected") == 10


def test_a_rerouted_task_is_timed_for_the_role_that_took_it() -> None:
    m = fed(ev(0, "delegate", task="T1", role="dev"),
            ev(1, "task rerouted", task="T1", role="ops", was="dev", reason="limit"),
            ev(2, "delivered", task="T1", role="ops"),
            ev(30, "work-done", task="T1", role="ops", note=None))
    assert value(m, "choragos_delegation_to_delivery_seconds_count", role="dev") is None
    assert value(m, "choragos_delegation_to_delivery_seconds_sum", role="ops") == 2
    assert value(m, "choragos_delivery_to_work_done_seconds_sum", role="ops") == 28
