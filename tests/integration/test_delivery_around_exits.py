"""A worker that exits before or while a task is typed: the task waits, it is not lost.

Both through a real ``serve --headless`` with fixture agents in real PTYs.
"""

from __future__ import annotations

import json

from tests.integration.harness import Serve, role_toml


def status(s: Serve) -> dict[str, dict]:
    return {r["name"]: r for r in json.loads(s.cli("status", "--json").stdout)["roles"]}


def task_lines(s: Serve, role: str, task: str) -> list[str]:
    return [line for line in s.submitted(role) if f"tasks/{task}.md" in line]


def test_work_queued_for_an_exited_worker_waits_until_it_is_booted_and_idle(serve):
    s = serve(role_toml("orchestrator", start=True) + role_toml("coder", "--exit-on", "quit"))
    s.wait_booted(["coder"])
    assert s.cli("keys", "coder", "--text", "quit", "enter").returncode == 0
    s.wait(lambda: status(s)["coder"]["state"] == "exited", 10, "the worker to exit")
    out = s.cli("delegate", "--to", "coder", "--task", "wait for the worker")
    assert out.returncode == 0, out.stderr
    # Acknowledged once journaled; queued once its checkpoint is taken.
    s.wait(lambda: status(s)["coder"]["queued"] == 1, 15, "the task to queue")
    coder = status(s)["coder"]
    assert (coder["ready"], coder["queued"]) == (False, 1)  # held, not typed into the void
    assert s.board()["T1"]["state"] == "queued"
    assert s.cli("restart", "coder").returncode == 0
    s.wait(lambda: s.board()["T1"]["state"] == "delivered", 20, "delivery after the restart")
    assert len(task_lines(s, "coder", "T1")) == 1
    booted = [e for e in s.events() if e["event"] == "boot injection" and e["role"] == "coder"]
    delivered = next(e for e in s.events() if e["event"] == "delivered")
    assert booted[-1]["t"] <= delivered["t"]  # briefed first, then given the task


def test_a_worker_killed_while_its_task_is_typed_gets_the_task_after_its_restart(serve):
    s = serve(role_toml("orchestrator", start=True)
              + role_toml("coder", "--die-on-keys", "tasks/T1.md", restart="on-failure"))
    s.wait_booted(["coder"])
    out = s.cli("delegate", "--to", "coder", "--task", "survive the crash")
    assert out.returncode == 0, out.stderr
    s.wait(lambda: s.agents("died", "coder"), 10, "the worker to die mid-injection")
    assert not task_lines(s, "coder", "T1")  # it died before any Enter
    s.wait(lambda: s.board()["T1"]["state"] == "delivered", 25, "delivery after the restart")
    assert len(task_lines(s, "coder", "T1")) == 1
    assert not [e for e in s.events() if e["event"] == "task failed"]
    exits = [e for e in s.events() if e["event"] == "role exited" and e["role"] == "coder"]
    assert len(exits) == 1 and exits[0]["restarting"]
