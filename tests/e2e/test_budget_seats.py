"""Claude Code stopped mid-task by a blocking budget, through the built-in gateway.

The gateway answers the coder's next model call itself (402): the CLI shows
the message and gives up the turn.  Nothing is typed into it while it is
blocked; once the operator raises the budget (a reload here) it is told to
continue, and finishes its task.
"""

from __future__ import annotations

import json

import pytest

from tests.e2e.fakemodel import FakeModel, Usage, tool
from tests.e2e.scenario import claude_role
from tests.e2e.seats import BOOT_TIMEOUT
from tests.e2e.test_scenarios import bash
from tests.integration.gatewayfakes import free_port

BIG = Usage(input_tokens=200_000, output_tokens=10)


def _coder(s) -> dict:
    out = s.cli("status", "--json")
    assert out.returncode == 0, out.stderr
    return next(r for r in json.loads(out.stdout)["roles"] if r["name"] == "coder")


@pytest.mark.claude
@pytest.mark.timeout(240)
def test_claude_code_blocked_by_its_budget_holds_then_continues_once_raised(
        crew, fake_model: FakeModel) -> None:
    port = free_port()
    s = crew(claude_role("orchestrator", "claude", start=True)
             + claude_role("coder", "claude", budget_tokens=100_000, budget_action="block")
             + f'[gateway]\nbuiltin = true\naddr = "127.0.0.1:{port}"\n'
             + f'[gateway.upstream]\nanthropic = "{fake_model.base_url}"\n')
    work = s.workdir

    def crossing(turn) -> list:
        fake_model.usage = BIG  # this answer crosses the budget: counted, the next refused
        return tool("Write", {"file_path": str(work / "hello.txt"), "content": "hello\n"})

    def reported(turn) -> list:
        fake_model.usage = Usage()
        return bash('choragos work-done --id T1 --done --task "Wrote hello.txt"',
                    "Report the task")

    fake_model.on("New task T1", crossing)
    fake_model.on("Continue: the operator raised", reported)
    s.wait_booted(["orchestrator", "coder"], timeout=BOOT_TIMEOUT)
    assert s.cli("delegate", "--to", "coder", "--task", "Create hello.txt").returncode == 0
    refused = s.wait_event(lambda e: e["event"] == "model call refused", 90, "the refusal")
    assert refused["role"] == "coder" and "tokens of 100000" in refused["why"]
    s.wait(lambda: s.board()["T1"]["note"].startswith("model calls blocked"), 30, "the note")
    assert (work / "hello.txt").read_text() == "hello\n"
    assert s.cli("delegate", "--to", "coder", "--task", "Then this").returncode == 0
    # Held, not typed into a blocked role: the delegation is answered once queued.
    assert _coder(s)["queued"] == 1 and s.board()["T2"]["state"] == "queued"

    config = work / ".choragos.toml"
    config.write_text(config.read_text().replace("budget_tokens = 100000",
                                                 "budget_tokens = 10000000"))
    assert s.cli("reload").returncode == 0
    s.wait_event(lambda e: e["event"] == "budget continue" and e["task"] == "T1", 30,
                 "the continue line")
    s.wait_event(lambda e: e["event"] == "work-done" and e["task"] == "T1", 90, "work-done")
    assert s.board()["T1"]["state"] == "done"
    assert [e["event"] for e in s.events()].count("model call refused") == 1
