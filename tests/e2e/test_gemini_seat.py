"""The whole product with the real Gemini CLI in its seats (Gemini CLI 0.61.0).

Each scenario runs a real ``choragos serve --headless``; every Gemini role
talks to the scripted Gemini API (tests/e2e/fakegemini.py), whose scripts
play the models: they run the protocol verbs with ``run_shell_command``.
The workspace holds the ``.gemini/settings.json`` that ``choragos init
--seats`` writes, so the verbs run without a permission dialog.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable

import pytest

from tests.conftest import pid_alive
from tests.e2e.fakegemini import shell
from tests.e2e.fakemodel import Turn, text, tool
from tests.e2e.scenario import BRIEF, holds_for
from tests.e2e.seats import Fakes, SeatCrew, seat_role

pytestmark = [pytest.mark.gemini, pytest.mark.timeout(120)]

StartCrew = Callable[..., SeatCrew]
BOOT_TIMEOUT = 45  # Gemini draws nothing for ~3 s, more on two busy cores


def said(*needles: str) -> Callable[[Turn], bool]:
    return lambda turn: all(n in turn.tool_text for n in needles)


def test_boot_delegate_and_a_report_held_for_the_busy_turn(seat_crew: StartCrew,
                                                           fakes: Fakes) -> None:
    s = seat_crew(seat_role("orchestrator", "gemini", start=True) + seat_role("coder", "gemini"))
    model = fakes.gemini
    model.on(BRIEF.format(role="orchestrator"),
             shell('choragos delegate --to coder --task "Read the task file and report"'))
    busy = s.hold(text("Waiting for the coder."))
    model.on(said("delegated T1 to coder"), busy)
    model.on("New task T1 from choragos",
             tool("read_file", {"file_path": str(s.workdir / ".choragos/tasks/T1.md")}))
    model.on(said("Task T1 for coder"),
             shell('choragos work-done --id T1 --done --task "Read it, all good"'))
    s.wait_booted(["orchestrator", "coder"], timeout=BOOT_TIMEOUT)
    for role in ("orchestrator", "coder"):
        assert s.status()[role]["profile"] == "gemini"
        assert len(s.boot_injections(role)) == 1 and s.boot_injections(role)[0]["ok"]
        s.wait_told(BRIEF.format(role=role))

    s.wait_event(lambda e: e["event"] == "work-done" and e["task"] == "T1", 60, "work-done")
    s.wait(busy.reached.is_set, 15, "the orchestrator's held turn")
    # Gemini keeps its placeholder while it works: the spinner says busy, and
    # the report waits in choragos' queue instead of Gemini's.
    assert holds_for(lambda: (v := s.status()["orchestrator"])["state"] == "working"
                     and v["queued"] == 1 and not s.injections("orchestrator", "report"), 1.5)
    busy.release()
    s.wait_told("A worker reports: [T1 from coder] Read it, all good")
    assert s.board()["T1"]["state"] == "done"
    s.wait(lambda: s.injections("orchestrator", "report"), 10, "the report's injection event")
    report = s.injections("orchestrator", "report")[0]
    assert report["ok"] and "submitted after 1 enter(s)" in report["detail"], report
    assert all(r.headers.get("x-goog-api-key") == "fake-gemini-key-000"
               for r in model.message_requests())


def test_permission_dialog_is_waiting_and_never_typed_into(seat_crew: StartCrew,
                                                           fakes: Fakes) -> None:
    s = seat_crew(seat_role("orchestrator", "gemini", start=True) + seat_role("coder", "gemini"))
    # No rule allows `sh -c`: Gemini asks "Allow execution of [Shell]?".
    fakes.gemini.on("New task T1 from choragos", shell("sh -c 'echo needs-42'"))
    s.wait_booted(["orchestrator", "coder"], timeout=BOOT_TIMEOUT)
    assert s.cli("delegate", "--to", "coder", "--task", "Run the check").returncode == 0
    view = s.wait_state("coder", "waiting", 40)
    assert any("Allow once" in line for line in view["preview"]), view
    assert s.cli("delegate", "--to", "coder", "--task", "Second task").returncode == 0
    assert holds_for(lambda: (v := s.status()["coder"])["state"] == "waiting"
                     and v["queued"] == 1, 4)
    assert s.times_told("New task T2") == 0 and s.times_told("needs-42") == 0


def test_untrusted_folder_dialog_is_waiting_and_never_typed_into(seat_crew: StartCrew,
                                                                 fakes: Fakes) -> None:
    s = seat_crew(seat_role("orchestrator", "gemini", start=True), trusted=False)
    view = s.wait_state("orchestrator", "waiting", BOOT_TIMEOUT)
    assert any("Trust folder" in line for line in view["preview"]), view
    assert holds_for(lambda: s.state("orchestrator") == "waiting", 4)
    assert not s.boot_injections("orchestrator") and not fakes.gemini.message_requests()


def test_killed_worker_restarts_and_is_briefed_again(seat_crew: StartCrew,
                                                     fakes: Fakes) -> None:
    s = seat_crew(seat_role("orchestrator", "gemini", start=True)
                  + seat_role("coder", "gemini", restart="on-failure"))
    thinking = s.hold(text("Still thinking."))
    fakes.gemini.on("New task T1 from choragos", thinking)
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
