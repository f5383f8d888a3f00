"""The whole product with the real Codex CLI in its seats (Codex CLI 0.171.0).

Each scenario runs a real ``choragos serve --headless``; every Codex role
talks to the scripted Responses API (tests/e2e/fakeopenai.py) through a
custom model provider, and runs the protocol verbs with its
``exec_command`` tool.  The roles carry the ``-c`` overrides a Codex seat
needs (socket access from its sandbox, no login shell, no update check).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e import seats
from tests.e2e.fakemodel import Turn, text, tool
from tests.e2e.fakeopenai import shell
from tests.e2e.scenario import BRIEF
from tests.e2e.seats import BOOT_TIMEOUT, Fakes, SeatCrew, tool_said

pytestmark = [pytest.mark.codex, pytest.mark.timeout(120)]

StartCrew = Callable[..., SeatCrew]


def escalated(command: str) -> Callable[[Turn], list[dict]]:
    """A command the model asks to run outside the sandbox: Codex asks first."""
    return lambda turn: tool("exec_command", {
        "cmd": command, "sandbox_permissions": "require_escalated",
        "justification": "Needs to write outside the workspace"})


def test_boot_delegate_and_a_report_held_for_the_busy_turn(seat_crew: StartCrew,
                                                           fakes: Fakes) -> None:
    s = seats.two_seats(seat_crew, "codex")
    model = fakes.openai
    model.on(BRIEF.format(role="orchestrator"),
             shell('choragos delegate --to coder --task "Create hello.txt saying hello"'))
    busy = s.hold(text("Waiting for the coder."))
    model.on(tool_said("delegated T1 to coder"), busy)
    model.on("New task T1 from choragos", shell("cat .choragos/tasks/T1.md"))
    model.on(tool_said("Task T1 for coder"), shell("printf 'hello\\n' > hello.txt"))
    model.on(lambda turn: "exited with code 0" in turn.tool_text,
             shell('choragos work-done --id T1 --done --task "Wrote hello.txt"'))
    seats.booted_and_briefed(s, "codex", ("orchestrator", "coder"))

    seats.report_waits_for_the_busy_turn(s, busy)
    s.wait_told("A worker reports: [T1 from coder] Wrote hello.txt")
    assert s.board()["T1"]["state"] == "done"
    assert (s.workdir / "hello.txt").read_text() == "hello\n"
    s.wait(lambda: s.injections("orchestrator", "report"), 10, "the report's injection event")
    # The Enter follows the echo and a quiet pane, with no fixed pause: had
    # Codex read it with the text as a paste, it would have needed a second.
    typed = [e for e in s.events() if e["event"] in ("injection", "boot injection")]
    assert all(e["ok"] and "submitted after 1 enter" in e["detail"] for e in typed), typed
    assert all(r.headers.get("authorization") == f"Bearer {seats.FAKE_OPENAI_KEY}"
               for r in model.message_requests())


def test_approval_dialog_is_waiting_and_never_typed_into(seat_crew: StartCrew, fakes: Fakes,
                                                         short_tmp: Path) -> None:
    s = seats.two_seats(seat_crew, "codex")
    outside = short_tmp / "escalated"
    fakes.openai.on("New task T1 from choragos", escalated(f"touch {outside}"))
    s.wait_booted(["orchestrator", "coder"], timeout=BOOT_TIMEOUT)
    seats.dialog_holds_deliveries(s, "esc to cancel", never_told="Process exited")
    assert not outside.exists()


def test_untrusted_folder_dialog_is_waiting_and_never_typed_into(seat_crew: StartCrew,
                                                                 fakes: Fakes) -> None:
    seats.untrusted_folder_waits(seat_crew, fakes.openai, "codex", "Trust and continue")


def test_killed_worker_restarts_and_is_briefed_again(seat_crew: StartCrew,
                                                     fakes: Fakes) -> None:
    seats.killed_worker_restarts(seat_crew, fakes.openai, "codex")
