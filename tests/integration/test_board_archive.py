"""Done tasks leave the live board for an archive that is still read."""

from __future__ import annotations

import json

from choragos.board.tasks import KEEP_RESOLVED
from choragos.control import wire
from tests.integration.gatewayfakes import free_port
from tests.integration.harness import role_toml, scrape, value

TEAM = role_toml("orchestrator", start=True) + role_toml("coder")


def test_done_tasks_are_archived_and_still_listed_and_reported(serve):
    port = free_port()
    s = serve(TEAM + f'[checkpoints]\nenabled = false\n[metrics]\nlisten = "127.0.0.1:{port}"\n')
    s.wait_booted(["orchestrator", "coder"])
    for role in ("orchestrator", "coder"):  # nothing typed: reports and tasks queue
        assert s.cli("pause", role).returncode == 0
    total = KEEP_RESOLVED + 30
    for _ in range(total):
        ack = wire.request(s.sock, {"cmd": "delegate", "to": ["coder"], "task": "history"})
        task_id = ack["tasks"][0]["id"]
        ack = wire.request(s.sock, {"cmd": "work-done", "id": task_id, "task": "closed",
                                    "done": True})
        assert ack["status"] == "ok", ack
    live = json.loads(s.cli("board", "--json").stdout)
    assert len(live["tasks"]) == KEEP_RESOLVED and live["archived"] == 30
    assert live["archived_by"] == [{"role": "coder", "state": "done", "count": 30}]
    # The metrics and the "every task is settled" line count the whole session.
    samples = scrape(port)
    assert value(samples, "choragos_tasks", role="coder", state="done") == total
    s.wait(lambda: f"every task is settled: {total} done, 0 failed, 0 rejected" in s.stderr(),
           10, "the settled line")
    assert live["tasks"][0]["id"] == "T31"
    every = json.loads(s.cli("board", "--all", "--json").stdout)["tasks"]
    assert [t["id"] for t in every] == [f"T{n}" for n in range(1, total + 1)]
    assert "30 older done or rejected tasks archived" in s.cli("board").stdout
    # An archived task is still known: a late report on it is matched, not "unknown".
    late = s.cli("work-done", "--id", "T1", "--task", "late")
    assert "already done" in late.stdout + late.stderr
    report = s.cli("report", "--json")
    assert report.returncode == 0, report.stderr
    coder = next(r for r in json.loads(report.stdout)["roles"] if r["role"] == "coder")
    assert coder["done"] == total
