"""The whole product with the real Codex CLI in its seats (Codex CLI 0.171.0).

Each scenario runs a real ``choragos serve --headless``; every Codex role
talks to the scripted Responses API (tests/e2e/fakeopenai.py) through a
custom model provider, and runs the protocol verbs with its
``exec_command`` tool.  The roles carry the ``-c`` overrides ``choragos
init --seats`` puts in a Codex role's args (socket access from its sandbox,
no login shell, no update check).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable

import pytest

from tests.conftest import pid_alive
from tests.e2e.fakemodel import Turn, text, tool
from tests.e2e.fakeopenai import shell
from tests.e2e.scenario import BRIEF, holds_for
from tests.e2e.seats import FAKE_OPENAI_KEY, Fakes, SeatCrew, seat_role

pytestmark = [pytest.mark.codex, pytest.mark.timeout(120)]

StartCrew = Callable[..., SeatCrew]
BOOT_TIMEOUT = 45


def said(*needles: str) -> Callable[[Turn], bool]:
    return lambda turn: all(n in turn.tool_text for n in needles)


def escalated(command: str) -> Callable[[Turn], list[dict]]:
    """A command the model asks to run outside the sandbox: Codex asks first."""
    return lambda turn: tool("exec_command", {
        "cmd": command, "sandbox_permissions": "require_escalated",
        "justification": "Needs to write outside the workspace"})


def test_boot_delegate_and_a_report_held_for_the_busy_turn(seat_crew: StartCrew,
                                                           fakes: Fakes) -> None:
    s = seat_crew(seat_role("orchestrator", "codex", start=True) + seat_role("coder", "codex"))
    model = fakes.openai
    model.on(BRIEF.format(role="orchestrator"),
             shell('choragos delegate --to coder --task "Create hello.txt saying hello"'))
    busy = s.hold(text("Waiting for the coder."))
    model.on(said("delegated T1 to coder"), busy)
    model.on("New task T1 from choragos", shell("cat .choragos/tasks/T1.md"))
    model.on(said("Task T1 for coder"), shell("printf 'hello\\n' > hello.txt"))
    model.on(lambda turn: "exited with code 0" in turn.tool_text and "hello" not in turn.text,
             shell('choragos work-done --id T1 --done --task "Wrote hello.txt"'))
    s.wait_booted(["orchestrator", "coder"], timeout=BOOT_TIMEOUT)
    for role in ("orchestrator", "coder"):
        assert s.status()[role]["profile"] == "codex"
        assert len(s.boot_injections(role)) == 1 and s.boot_injections(role)[0]["ok"]
        s.wait_told(BRIEF.format(role=role))

    s.wait_event(lambda e: e["event"] == "work-done" and e["task"] == "T1", 60, "work-done")
    s.wait(busy.reached.is_set, 15, "the orchestrator's held turn")
    assert holds_for(lambda: (v := s.status()["orchestrator"])["state"] == "working"
                     and v["queued"] == 1 and not s.injections("orchestrator", "report"), 1.5)
    busy.release()
    s.wait_told("A worker reports: [T1 from coder] Wrote hello.txt")
    assert s.board()["T1"]["state"] == "done"
    assert (s.workdir / "hello.txt").read_text() == "hello\n"
    s.wait(lambda: s.injections("orchestrator", "report"), 10, "the report's injection event")
    assert all(r.headers.get("authorization") == f"Bearer {FAKE_OPENAI_KEY}"
               for r in model.message_requests())


def test_approval_dialog_is_waiting_and_never_typed_into(seat_crew: StartCrew,
                                                         fakes: Fakes,
                                                         short_tmp) -> None:
    s = seat_crew(seat_role("orchestrator", "codex", start=True) + seat_role("coder", "codex"))
    outside = short_tmp / "escalated"
    fakes.openai.on("New task T1 from choragos", escalated(f"touch {outside}"))
    s.wait_booted(["orchestrator", "coder"], timeout=BOOT_TIMEOUT)
    assert s.cli("delegate", "--to", "coder", "--task", "Run the check").returncode == 0
    view = s.wait_state("coder", "waiting", 40)
    assert any("Yes, proceed" in line or "esc to cancel" in line for line in view["preview"])
    assert s.cli("delegate", "--to", "coder", "--task", "Second task").returncode == 0
    assert holds_for(lambda: (v := s.status()["coder"])["state"] == "waiting"
                     and v["queued"] == 1, 4)
    assert s.times_told("New task T2") == 0 and not outside.exists()


def test_untrusted_folder_dialog_is_waiting_and_never_typed_into(seat_crew: StartCrew,
                                                                 fakes: Fakes) -> None:
    s = seat_crew(seat_role("orchestrator", "codex", start=True), trusted=False)
    view = s.wait_state("orchestrator", "waiting", BOOT_TIMEOUT)
    assert any("Trust and continue" in line for line in view["preview"]), view
    assert holds_for(lambda: s.state("orchestrator") == "waiting", 4)
    assert not s.boot_injections("orchestrator") and not fakes.openai.message_requests()


def test_killed_worker_restarts_and_is_briefed_again(seat_crew: StartCrew,
                                                     fakes: Fakes) -> None:
    s = seat_crew(seat_role("orchestrator", "codex", start=True)
                  + seat_role("coder", "codex", restart="on-failure"))
    thinking = s.hold(text("Still thinking."))
    fakes.openai.on("New task T1 from choragos", thinking)
    s.wait_booted(["orchestrator", "coder"], timeout=BOOT_TIMEOUT)
    assert s.cli("delegate", "--to", "coder", "--task", "A long task").returncode == 0
    s.wait(thinking.reached.is_set, 30, "the coder's model to be asked")
    pid = s.wait_state("coder", "working", 15)["pid"]
    os.kill(pid, signal.SIGKILL)
    s.wait_told("Task T1 to coder failed")
    s.wait(lambda: len(s.boot_injections("coder")) == 2, BOOT_TIMEOUT, "the coder re-briefed")
    assert all(boot["ok"] for boot in s.boot_injections("coder"))
    view = s.wait_state("coder", "idle", 20)
    assert view["pid"] != pid and view["restarts"] == 1 and not pid_alive(pid)
    assert "killed by signal 9" in s.board()["T1"]["note"]
