"""The whole product with the real Gemini CLI in its seats (Gemini CLI 0.61.0).

Each scenario runs a real ``choragos serve --headless``; every Gemini role
talks to the scripted Gemini API (tests/e2e/fakegemini.py), whose scripts
play the models: they run the protocol verbs with ``run_shell_command``.
The workspace holds the settings ``choragos init --seats`` writes, so the
verbs run without a permission dialog.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from tests.e2e import seats
from tests.e2e.fakegemini import shell
from tests.e2e.fakemodel import text, tool
from tests.e2e.scenario import BRIEF
from tests.e2e.seats import BOOT_TIMEOUT, Fakes, SeatCrew, tool_said

pytestmark = [pytest.mark.gemini, pytest.mark.timeout(120)]

StartCrew = Callable[..., SeatCrew]


def _delegate_answered(turn) -> bool:
    """The orchestrator's turn after its delegate command.  Its output is
    "delegated T1 to coder"; on a loaded machine Gemini CLI has handed the
    model an empty output for it instead (the command ran: the delegation is
    on the board), and no other shell command here prints nothing."""
    said = turn.tool_text
    return "delegated T1 to coder" in said or ("Output: (empty)" in said and "PGID" in said)


def test_boot_delegate_and_a_report_held_for_the_busy_turn(seat_crew: StartCrew,
                                                           fakes: Fakes) -> None:
    s = seats.two_seats(seat_crew, "gemini")
    model = fakes.gemini
    model.on(BRIEF.format(role="orchestrator"),
             shell('choragos delegate --to coder --task "Read the task file and report"'))
    busy = s.hold(text("Waiting for the coder."))
    model.on(_delegate_answered, busy)
    model.on("New task T1 from choragos",
             tool("read_file", {"file_path": str(s.workdir / ".choragos/tasks/T1.md")}))
    model.on(tool_said("Task T1 for coder"),
             shell('choragos work-done --id T1 --done --task "Read it, all good"'))
    seats.booted_and_briefed(s, "gemini", ("orchestrator", "coder"))

    # Gemini keeps its placeholder while it works: the spinner says busy.
    seats.report_waits_for_the_busy_turn(s, busy)
    s.wait_told("A worker reports: [T1 from coder] Read it, all good")
    assert s.board()["T1"]["state"] == "done"
    s.wait(lambda: s.injections("orchestrator", "report"), 10, "the report's injection event")
    report = s.injections("orchestrator", "report")[0]
    # The first Enter, or on a loaded machine the one retry after 1.5 s of
    # Gemini still showing the text; never more.
    assert report["ok"] and re.search(r"submitted after [12] enters?\b", report["detail"]), report
    assert all(r.headers.get("x-goog-api-key") == seats.FAKE_GEMINI_KEY
               for r in model.message_requests())


def test_permission_dialog_is_waiting_and_never_typed_into(seat_crew: StartCrew,
                                                           fakes: Fakes) -> None:
    s = seats.two_seats(seat_crew, "gemini")
    # No rule allows `sh -c`: Gemini asks "Allow execution of [Shell]?".
    fakes.gemini.on("New task T1 from choragos", shell("sh -c 'echo needs-42'"))
    s.wait_booted(["orchestrator", "coder"], timeout=BOOT_TIMEOUT)
    seats.dialog_holds_deliveries(s, "Allow once", never_told="needs-42")


def test_loop_detection_dialog_is_waiting_and_never_typed_into(seat_crew: StartCrew,
                                                               fakes: Fakes) -> None:
    """Gemini CLI halts a turn that makes the same tool call five times in a
    row and asks whether to keep loop detection on: a question like any other."""
    s = seats.two_seats(seat_crew, "gemini")
    same_read = tool("read_file", {"file_path": str(s.workdir / ".choragos/tasks/T1.md")})
    started: list[bool] = []

    def in_the_task(turn) -> bool:
        if "New task T1 from choragos" in turn.all_text:
            started.append(True)
        return bool(started)

    fakes.gemini.on(in_the_task, same_read, once=False)
    s.wait_booted(["orchestrator", "coder"], timeout=BOOT_TIMEOUT)
    seats.dialog_holds_deliveries(s, "Keep loop detection enabled", never_told="Second task")


def test_untrusted_folder_dialog_is_waiting_and_never_typed_into(seat_crew: StartCrew,
                                                                 fakes: Fakes) -> None:
    seats.untrusted_folder_waits(seat_crew, fakes.gemini, "gemini", "Trust folder")


def test_killed_worker_restarts_and_is_briefed_again(seat_crew: StartCrew,
                                                     fakes: Fakes) -> None:
    seats.killed_worker_restarts(seat_crew, fakes.gemini, "gemini")
