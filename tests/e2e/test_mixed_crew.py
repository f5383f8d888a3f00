"""The mixed-vendor recipe: Claude Code orchestrates, Codex implements, Gemini reviews.

All three real CLIs run in one ``choragos serve --headless``, each against
its own scripted server; the whole loop must pass: delegate to the coder,
its report, delegate the review, the reviewer's report, the orchestrator
told both.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.e2e import fakegemini, fakeopenai
from tests.e2e.fakemodel import Turn, text, tool
from tests.e2e.scenario import BRIEF
from tests.e2e.seats import Fakes, SeatCrew, seat_role

pytestmark = [pytest.mark.claude, pytest.mark.gemini, pytest.mark.codex,
              pytest.mark.timeout(240)]


def bash(command: str) -> list[dict]:
    return tool("Bash", {"command": command, "description": "Run a command"})


def said(*needles: str) -> Callable[[Turn], bool]:
    return lambda turn: all(n in turn.all_text for n in needles)


def test_claude_orchestrates_codex_implements_gemini_reviews(
        seat_crew: Callable[..., SeatCrew], fakes: Fakes) -> None:
    s = seat_crew(seat_role("orchestrator", "claude", start=True)
                  + seat_role("coder", "codex") + seat_role("reviewer", "gemini"))
    claude, codex, gemini = fakes.claude, fakes.openai, fakes.gemini
    claude.on(BRIEF.format(role="orchestrator"),
              bash('choragos delegate --to coder --task "Create hello.txt saying hello"'))
    claude.on(said("delegated T1 to coder"), text("Waiting for the coder."))
    claude.on("[T1 from coder]",
              bash('choragos delegate --to reviewer --task "Review hello.txt"'))
    claude.on(said("delegated T2 to reviewer"), text("Waiting for the review."))
    claude.on("[T2 from reviewer]", text("Done: written and reviewed."))

    codex.on("New task T1 from choragos", fakeopenai.shell("printf 'hello\\n' > hello.txt"))
    codex.on(lambda turn: "exited with code 0" in turn.tool_text,
             fakeopenai.shell('choragos work-done --id T1 --done --task "Wrote hello.txt"'))

    gemini.on("New task T2 from choragos",
              tool("read_file", {"file_path": str(s.workdir / "hello.txt")}))
    gemini.on(lambda turn: "hello" in turn.tool_text and "work-done" not in turn.tool_text,
              fakegemini.shell('choragos work-done --id T2 --done --task "hello.txt looks right"'))

    # Three vendors' CLIs starting at once: on two cores shared with the rest
    # of the suite a boot has been seen to take close to a minute.
    s.wait_booted(["orchestrator", "coder", "reviewer"], timeout=90)
    profiles = {name: view["profile"] for name, view in s.status().items()}
    assert profiles == {"orchestrator": "claude", "coder": "codex", "reviewer": "gemini"}

    s.wait_told("A worker reports: [T1 from coder] Wrote hello.txt", 60)
    s.wait_told("A worker reports: [T2 from reviewer] hello.txt looks right", 60)
    board = s.wait(lambda: (b := s.board()).get("T2", {}).get("state") == "done" and b, 10,
                   "the review done")
    assert board["T1"]["state"] == "done" and board["T1"]["role"] == "coder"
    assert board["T2"]["role"] == "reviewer"
    assert (s.workdir / "hello.txt").read_text() == "hello\n"
    # Each vendor's server heard only its own seat.
    assert codex.wait_for_user_message(BRIEF.format(role="coder"), 1)
    assert gemini.wait_for_user_message(BRIEF.format(role="reviewer"), 1)
    elsewhere = claude.user_messages() + gemini.user_messages()
    assert not any(BRIEF.format(role="coder") in said for said in elsewhere)
