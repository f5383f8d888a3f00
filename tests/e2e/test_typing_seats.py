"""Line after line typed into each real CLI: each submitted by its first Enter.

The Enter goes in a write of its own once the text shows in the agent's
input and the pane has been quiet for the profile's ``enter_quiet`` (and,
for Gemini CLI, its ``enter_delay`` floor): too soon and the CLI reads it
as part of a paste, a newline in its input that needs a second Enter.
Each case delivers a run of tasks to one real CLI, the fake model
answering each with a word, and reads how every line went in.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from tests.e2e import seats
from tests.e2e.seats import SeatCrew

StartCrew = Callable[..., SeatCrew]
LINES = 6  # tasks per CLI: each one's Enter is a separate chance to be read as a paste
# Over 800 characters: Claude Code shows it as "[Pasted text #1]", not as text.
LONG = "All done. " + " ".join(f"check-{n:03d} passed;" for n in range(60))


@pytest.mark.parametrize("cli", [
    pytest.param("claude", marks=pytest.mark.claude),
    pytest.param("codex", marks=pytest.mark.codex),
    pytest.param("gemini", marks=pytest.mark.gemini),
])
@pytest.mark.timeout(240)
def test_every_line_is_submitted_by_its_first_enter(seat_crew: StartCrew, cli: str) -> None:
    s = seat_crew(seats.seat_role("coder", cli, start=True))
    seats.booted_and_briefed(s, cli, ("coder",))
    for n in range(1, LINES + 1):
        assert s.cli("delegate", "--to", "coder", "--task", f"Say ok {n}").returncode == 0
    s.wait(lambda: len(s.injections("coder", "task")) == LINES, 40 * LINES,
           f"{LINES} tasks typed into {cli}")
    # A long line too: the start role's report of a task.
    assert s.cli("work-done", "--id", f"T{LINES}", "--done", "--task", LONG).returncode == 0
    s.wait(lambda: s.injections("coder", "report"), 60, "the long report typed")
    typed = s.injections("coder") + s.boot_injections("coder")
    said = "; ".join(f"{e['kind']}: {e['detail']}" for e in typed)
    assert all(event["ok"] for event in typed), said
    # A machine busy enough can hold the CLI's read of the text past the
    # quiet, and its Enter then lands in the paste (the typist's second Enter
    # submits it), and the role's next Enters wait longer: one such line of
    # the run is allowed, a quiet too short for the CLI fails most of them.
    again = [e for e in typed if "submitted after 1 enter" not in e["detail"]]
    assert len(again) <= 1, said
    quiet = [float(re.search(r"Enter (\d+\.\d+)s after", e["detail"]).group(1)) for e in typed]
    print(f"{cli}: {len(typed)} lines, {len(typed) - len(again)} submitted by their first Enter, "
          f"Enter {min(quiet):.2f}-{max(quiet):.2f} s after the text")
    for n in range(1, LINES + 1):  # each task's line reached the model once
        s.wait_told(f"New task T{n} from choragos")
        assert s.times_told(f"New task T{n} from choragos") == 1
    s.wait_told(LONG)
    assert s.times_told(LONG) == 1
