"""A real Claude worker reports ``--failed`` and the real Claude orchestrator hears it.

The worker's claude runs `choragos work-done` from its Bash tool with the
PATH the session gave it (the session's own `.choragos/bin` first), so this
also proves the verb is reachable from a real agent.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.e2e.fakemodel import FakeModel, Turn, text, tool
from tests.e2e.scenario import BRIEF, ClaudeCrew, claude_role

pytestmark = [pytest.mark.claude, pytest.mark.timeout(90)]

BOOT_TIMEOUT = 40
WHY = "The payments API needs a key this workspace does not have"


def bash(command: str, description: str) -> list[dict]:
    return tool("Bash", {"command": command, "description": description})


def tool_said(*needles: str) -> Callable[[Turn], bool]:
    return lambda turn: all(needle in turn.tool_text for needle in needles)


def test_a_worker_reports_failed_and_the_orchestrator_receives_it(
        crew: Callable[..., ClaudeCrew], fake_model: FakeModel) -> None:
    s = crew(claude_role("orchestrator", "claude", start=True) + claude_role("coder", "claude"))
    work = s.workdir
    fake_model.on(BRIEF.format(role="orchestrator"),
                  bash('choragos delegate --to coder --task "Charge the test card"',
                       "Delegate the task"))
    fake_model.on(tool_said("delegated T1 to coder"), text("Waiting for the coder."))
    fake_model.on("New task T1 from choragos",
                  tool("Read", {"file_path": str(work / ".choragos/tasks/T1.md")}))
    fake_model.on(tool_said("Task T1 for coder"),
                  bash(f'choragos work-done --id T1 --failed --task "{WHY}"',
                       "Report that the task failed"))
    acked: list[Turn] = []  # the worker's Bash tool printed the verb's ack
    fake_model.on(tool_said("reported T1 (failed)"),
                  lambda turn: acked.append(turn) or text("Reported the failure."))
    fake_model.on("A worker reports: [T1 from coder] FAILED", text("I will re-plan."))
    s.wait_booted(["orchestrator", "coder"], timeout=BOOT_TIMEOUT)

    done = s.wait_event(lambda e: e["event"] == "work-done" and e["task"] == "T1", 45,
                        "work-done")
    assert done["outcome"] == "failed" and done["role"] == "coder"
    s.wait_told(f"A worker reports: [T1 from coder] FAILED: {WHY}")
    task = s.board()["T1"]
    assert (task["state"], task["summary"]) == ("failed", WHY)
    s.wait(lambda: acked, 15, "the worker's claude to see `reported T1 (failed)`")
