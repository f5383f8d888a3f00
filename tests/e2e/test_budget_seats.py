"""Claude Code stopped mid-task by a blocking budget, through the built-in gateway.

The gateway answers the coder's next model call itself (402): the CLI shows
the message and gives up the turn.  Nothing is typed into it while it is
blocked; once the operator raises the budget (a reload here) it is told to
continue, and finishes its task.
"""

from __future__ import annotations

import json

import pytest

from tests.e2e import seats
from tests.e2e.fakegemini import shell as gemini_shell
from tests.e2e.fakemodel import FakeModel, Usage, text, tool
from tests.e2e.fakeopenai import shell
from tests.e2e.scenario import claude_role
from tests.e2e.seats import BOOT_TIMEOUT
from tests.e2e.test_scenarios import bash
from tests.integration.gatewayfakes import free_port

BIG = Usage(input_tokens=200_000, output_tokens=10)


def _raised_then_continued(s) -> None:
    """The operator raises the coder's token budget (a reload): it is told to
    continue T1, and reports it."""
    config = s.workdir / ".choragos.toml"
    config.write_text(config.read_text().replace("budget_tokens = 100000",
                                                 "budget_tokens = 10000000"))
    assert s.cli("reload", "--loosen").returncode == 0  # a raise is the operator's to confirm
    s.wait_event(lambda e: e["event"] == "budget continue" and e["task"] == "T1", 30,
                 "the continue line")
    s.wait_event(lambda e: e["event"] == "work-done" and e["task"] == "T1", 90, "work-done")


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
    # Held, not typed into a blocked role: it stays in the coder's queue (queued
    # after its checkpoint, which the delegation's answer does not wait for).
    s.wait(lambda: _coder(s)["queued"] == 1, 10, "T2 queued and held")
    assert s.board()["T2"]["state"] == "queued"

    _raised_then_continued(s)
    assert s.board()["T1"]["state"] == "done"
    assert [e["event"] for e in s.events()].count("model call refused") == 1


@pytest.mark.parametrize("cli", [pytest.param("codex", marks=pytest.mark.codex),
                                 pytest.param("gemini", marks=pytest.mark.gemini)])
@pytest.mark.timeout(240)
def test_codex_and_gemini_blocked_by_a_budget_hold_then_continue_once_raised(
        seat_crew, fakes, cli: str) -> None:
    """As for Claude Code: the CLI gives up the turn on the 402 (no retry storm,
    no dialog), is held, and is continued by the raise."""
    model, api = (fakes.openai, "openai") if cli == "codex" else (fakes.gemini, "gemini")
    run = shell if cli == "codex" else gemini_shell
    s = seat_crew(seats.seat_role("orchestrator", cli, start=True)
                  + seats.seat_role("coder", cli, budget_tokens=100_000, budget_action="block")
                  + f'[gateway]\nbuiltin = true\naddr = "127.0.0.1:{free_port()}"\n'
                  + f'[gateway.upstream]\n{api} = "{model.base_url}"\n')

    def crossing(turn) -> list:
        model.usage = BIG  # this answer crosses the budget: counted, the next call refused
        reply = run("echo working")  # a tool call: the turn goes on to that next call
        return reply(turn) if callable(reply) else reply

    def reported(turn) -> list:
        model.usage = Usage()
        reply = run('choragos work-done --id T1 --done --task "Done"')
        return reply(turn) if callable(reply) else reply

    model.on("New task T1", crossing)
    model.on("Continue: the operator raised", reported)
    model.default = text("Ready.")
    s.wait_booted(["orchestrator", "coder"], timeout=BOOT_TIMEOUT)
    assert s.cli("delegate", "--to", "coder", "--task", "First").returncode == 0
    s.wait_event(lambda e: e["event"] == "over budget", 60, "the budget crossed")
    refused = s.wait_event(lambda e: e["event"] == "model call refused", 90, "the refusal")
    assert refused["role"] == "coder"
    s.wait(lambda: _coder(s)["state"] == "idle", 60, "the CLI gave up the turn, idle")
    # Held from the crossing on, not typed into a blocked role.
    assert s.cli("delegate", "--to", "coder", "--task", "Second").returncode == 0
    s.wait(lambda: _coder(s)["queued"] == 1, 10, "T2 queued and held")
    assert s.board()["T2"]["state"] == "queued"
    calls = len(model.requests)
    _raised_then_continued(s)
    # The refused call was not retried over and over: one refusal said, few calls made.
    assert [e["event"] for e in s.events()].count("model call refused") == 1
    assert calls < 20, calls
