"""A crew of real claudes survives its server's ``kill -9`` (durable sessions).

The coder is mid-task (its model holds the turn) when the server is killed.
``serve --resume`` brings the crew back: the coder gets its task handed back
with the note that the session restarted, does it, and reports; the
orchestrator's brief carries the recap of what was in flight.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.claudeenv import saved_reply
from tests.e2e.fakemodel import FakeModel, text, tool
from tests.e2e.scenario import BRIEF, ClaudeCrew, claude_role
from tests.e2e.test_scenarios import BOOT_TIMEOUT, bash, tool_said
from tests.integration.harness import role_toml

pytestmark = [pytest.mark.claude, pytest.mark.timeout(150)]


def test_a_killed_server_resumes_and_the_worker_reports_its_task(
        crew: Callable[..., ClaudeCrew], fake_model: FakeModel) -> None:
    s = crew(claude_role("orchestrator", "claude", start=True) + claude_role("coder", "claude"))
    work = s.workdir
    busy = s.hold(text("Still thinking about T1."), limit=90)
    fake_model.on("New task T1 from choragos", busy)
    s.wait_booted(["orchestrator", "coder"], timeout=BOOT_TIMEOUT)
    out = s.cli("delegate", "--to", "coder", "--task", "Create hello.txt saying hello")
    assert out.returncode == 0, out.stderr
    s.wait(busy.reached.is_set, 40, "the coder to be working on T1")
    s.wait_state("coder", "working", 20)
    s.kill9()
    busy.release()

    handed_back = "The choragos session restarted; task T1 is still yours"
    fake_model.on(handed_back,
                  tool("Write", {"file_path": str(work / "hello.txt"), "content": "hello\n"}))
    fake_model.on(tool_said("hello.txt"),
                  bash('choragos work-done --id T1 --done --task "Wrote hello.txt"',
                       "Report the task"))
    fake_model.on(BRIEF.format(role="orchestrator"), text("Reading my brief."))
    s.start(args=("--resume",))
    s.wait_booted(["orchestrator", "coder"], timeout=BOOT_TIMEOUT)
    s.wait_told(handed_back, 40)
    s.wait_event(lambda e: e["event"] == "work-done" and e["task"] == "T1", 45, "work-done")
    assert s.board()["T1"]["state"] == "done"
    assert (work / "hello.txt").read_text() == "hello\n"
    s.wait_told("A worker reports: [T1 from coder] Wrote hello.txt", 40)
    brief = (work / ".choragos" / "briefs" / "orchestrator.md").read_text()
    assert "This session was resumed" in brief
    assert "T1 (coder): delivered: Create hello.txt saying hello" in brief
    assert "Do not re-delegate in-flight tasks" in brief
    assert s.times_told("New task T1 from choragos") == 1


def test_resume_args_let_claude_continue_its_conversation(
        crew: Callable[..., ClaudeCrew], fake_model: FakeModel) -> None:
    # `claude --continue` takes the directory's most recent conversation, so
    # the coder is the only claude here (the orchestrator is the fixture agent).
    s = crew(role_toml("orchestrator", start=True)
             + claude_role("coder", "claude", resume_args=["--continue"]))
    fake_model.on("New task T1 from choragos", text("Noted T1; I will start after lunch."))
    s.wait_booted(["orchestrator", "coder"], timeout=BOOT_TIMEOUT)
    deliver_t1(s)
    s.kill9()

    handed_back = "The choragos session restarted; task T1 is still yours"
    fake_model.on(handed_back, bash('choragos work-done --id T1 --done --task "1 2 3"',
                                    "Report the task"))
    s.start(args=("--resume",))
    s.wait_told(handed_back, 60)
    earlier = history_before(fake_model, 0, handed_back)
    assert "New task T1 from choragos" in earlier and "after lunch" in earlier
    s.wait_event(lambda e: e["event"] == "work-done" and e["task"] == "T1", 45, "work-done")


def test_two_claude_roles_each_continue_their_own_conversation(
        crew: Callable[..., ClaudeCrew], fake_model: FakeModel) -> None:
    # Both roles are claudes in one directory, and the coder spoke last: the
    # directory's most recent conversation (what --continue would take) is
    # the coder's, so the orchestrator continuing its own proves the ids.
    s = crew(claude_role("orchestrator", "claude", start=True) + claude_role("coder", "claude"))
    fake_model.on(BRIEF.format(role="orchestrator"), text("Noted; my word is LIGHTHOUSE."))
    fake_model.on(BRIEF.format(role="coder"), text("Noted; my word is MARMALADE."))
    fake_model.on("New task T1 from choragos", text("Noted T1; I will start after lunch."))
    s.wait_booted(["orchestrator", "coder"], timeout=BOOT_TIMEOUT)
    deliver_t1(s)
    ids = {role: conversation_of(s, role) for role in ("orchestrator", "coder")}
    assert None not in ids.values() and ids["orchestrator"] != ids["coder"], ids
    s.wait(lambda: saved_reply(s.home, "LIGHTHOUSE"), 20, "the orchestrator's reply saved")
    s.kill9()

    handed_back = "The choragos session restarted; task T1 is still yours"
    fake_model.on(handed_back, bash('choragos work-done --id T1 --done --task "1 2 3"',
                                    "Report the task"))
    seen = len(fake_model.message_requests())
    s.start(args=("--resume",))
    s.wait_booted(["orchestrator", "coder"], timeout=BOOT_TIMEOUT)
    s.wait_told(handed_back, 60)
    for role in ("orchestrator", "coder"):
        assert cmdline(s.status()[role]["pid"])[-2:] == ["--resume", ids[role]]
        assert conversation_of(s, role) == ids[role]
    coder = history_before(fake_model, seen, handed_back)
    assert "MARMALADE" in coder and "after lunch" in coder and "LIGHTHOUSE" not in coder
    rebriefed = history_before(fake_model, seen, BRIEF.format(role="orchestrator"))
    assert "LIGHTHOUSE" in rebriefed and "MARMALADE" not in rebriefed
    assert "New task T1" not in rebriefed
    s.wait_event(lambda e: e["event"] == "work-done" and e["task"] == "T1", 45, "work-done")


def deliver_t1(s: ClaudeCrew) -> None:
    """T1 delegated to the coder, which takes it in, goes idle and has saved
    its reply (a kill before the save would lose it from the conversation
    that ``--continue`` and ``--resume`` read back)."""
    assert s.cli("delegate", "--to", "coder", "--task", "Count to three").returncode == 0
    s.wait_told("New task T1 from choragos", 40)
    s.wait(lambda: s.status()["coder"]["state"] == "idle"
           and s.board()["T1"]["state"] == "delivered", 30, "the coder idle with T1")
    s.wait(lambda: saved_reply(s.home, "after lunch"), 20, "the coder's reply saved")


def conversation_of(s: ClaudeCrew, role: str) -> str | None:
    """The id choragos keeps for ``role`` once the role was briefed into it."""
    path = s.workdir / ".choragos" / "state" / "conversations" / f"{role}.json"
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return record["id"] if record["used"] is True else None


def history_before(model: FakeModel, after: int, said: str) -> str:
    """The earlier messages of the first request (from the ``after``-th on)
    whose last message says ``said``: the history the CLI carried."""
    request = next(r for r in model.message_requests()[after:]
                   if said in json.dumps(r.body["messages"][-1]))
    return json.dumps(request.body["messages"][:-1])


def cmdline(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]


def test_after_a_handoff_a_claude_role_starts_a_new_conversation(
        crew: Callable[..., ClaudeCrew], fake_model: FakeModel) -> None:
    s = crew(role_toml("lead", "--handoff", start=True) + claude_role("coder", "claude"))
    s.wait_booted(["lead", "coder"], timeout=BOOT_TIMEOUT)
    before = s.wait(lambda: conversation_of(s, "coder"), 20, "the coder's conversation")
    out = s.cli("handoff", "--wait", "20", timeout=40)
    assert out.returncode == 0, out.stderr
    assert s.proc.wait(30) == 0
    s.start(args=("--resume",))
    s.wait_booted(["lead", "coder"], timeout=BOOT_TIMEOUT)
    flag, after = cmdline(s.status()["coder"]["pid"])[-2:]
    assert flag == "--session-id" and after != before
    s.wait(lambda: conversation_of(s, "coder") == after, 20, "the new conversation briefed")
