"""A dialog is never left on a frame half drawn.

tests/fixtures/screens/gemini_trust_redraws.bin is what Gemini CLI 0.61.0
wrote to its PTY (120x40) as it started in an untrusted folder, as a role's
reader read it on a loaded machine: its input area, then its trust dialog
drawn three times over (each drawing erases the last one line by line,
bottom up, and draws it again).  One read there ended after the erasing
(byte ERASED): a blank screen for 67 ms, until the next read.  A read can
end anywhere in a drawing; one ending early shows the box's top and no
question.  Gemini's profile reads such screens as *working*, so a role
whose screen was read then left *waiting* with the dialog still up (once
seen in the e2e untrusted-folder test on a busy machine).  It must stay
*waiting* unless the screen matches nothing for UNMATCHED_SETTLE.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from choragos.actors import messages as m
from choragos.actors.rolescreen import UNMATCHED_SETTLE
from choragos.actors.rolewatch import CLASSIFY_DELAY
from choragos.agents.profiles import GEMINI
from choragos.agents.screenstatus import WAITING, classify, matched_status
from choragos.roles.rolestatus import RoleStatus
from choragos.terminal.emulator import Terminal
from tests.fakehost import World

SCREENS = Path(__file__).resolve().parents[1] / "fixtures" / "screens"
STREAM = (SCREENS / "gemini_trust_redraws.bin").read_bytes()
# Where each drawing of the dialog ends (the first starts at byte 1827).
DRAWN = (5015, 9116, len(STREAM))
ERASED = DRAWN[1] + 207  # the read that ended here erased the second drawing
TOP_ONLY = 10900  # one ending here shows the third drawing down to its box's top
LOOK = CLASSIFY_DELAY + 0.05  # new output is read this long after it came


def screen_of(data: bytes) -> tuple[list[str], tuple[int, int]]:
    term = Terminal(120, 40)
    term.feed(data)
    return term.display(), term.cursor


def test_each_whole_drawing_of_the_dialog_reads_waiting() -> None:
    for end in DRAWN:
        lines, cursor = screen_of(STREAM[:end])
        assert classify(lines, GEMINI, cursor=cursor) == WAITING, end


def test_a_read_ending_inside_a_redraw_matches_nothing_or_the_dialog() -> None:
    """Cut every few bytes: never idle nor busy, so holding on a screen that
    matches nothing covers every half-drawn frame of this capture."""
    lines, cursor = screen_of(STREAM[:ERASED])
    assert not any(line.strip() for line in lines)
    assert matched_status(lines, GEMINI, cursor=cursor) is None
    lines, cursor = screen_of(STREAM[:TOP_ONLY])
    assert any("╭" in line for line in lines) and not any("Trust folder" in line
                                                          for line in lines)
    assert matched_status(lines, GEMINI, cursor=cursor) is None
    term = Terminal(120, 40)
    term.feed(STREAM[:DRAWN[0]])
    for at in range(DRAWN[0], len(STREAM), 7):
        term.feed(STREAM[at:at + 7])
        said = matched_status(term.display(), GEMINI, cursor=term.cursor)
        assert said in (WAITING, None), (at, said)


def gemini_at_its_dialog(tmp_path: Path) -> World:
    """A Gemini role, not yet briefed, its reader fed the stream up to the
    end of the dialog's second drawing: *waiting*."""
    world = World(tmp_path, prompt="")
    s = world.state
    s.profile, s.booted, s.status = GEMINI, False, RoleStatus.BOOTING
    world.output(STREAM[:DRAWN[1]])
    world.run(LOOK)
    assert s.status is RoleStatus.WAITING
    world.agent.writes.clear()  # the terminal's replies to Gemini's queries
    return world


def statuses(world: World) -> list[RoleStatus]:
    return [x.view.status for x in world.core.told if isinstance(x, m.RoleReported)]


@pytest.mark.parametrize("cut", [ERASED, TOP_ONLY], ids=["erased", "box-top-only"])
def test_a_read_ending_mid_redraw_leaves_the_role_waiting(tmp_path: Path, cut: int) -> None:
    world = gemini_at_its_dialog(tmp_path)
    reported = len(statuses(world))
    world.output(STREAM[DRAWN[1]:cut])
    world.run(LOOK)
    assert world.state.status is RoleStatus.WAITING
    world.run(UNMATCHED_SETTLE / 2)  # on a busy machine the rest of the frame comes late
    world.output(STREAM[cut:])
    world.run(UNMATCHED_SETTLE * 2)
    assert world.state.status is RoleStatus.WAITING
    assert set(statuses(world)[reported:]) <= {RoleStatus.WAITING}
    assert not world.agent.writes  # nothing typed into the dialog


def test_a_screen_that_stays_unmatched_leaves_the_dialog_after_the_settle(tmp_path: Path) -> None:
    world = gemini_at_its_dialog(tmp_path)
    world.output(STREAM[DRAWN[1]:ERASED])  # and nothing more comes
    world.run(LOOK + UNMATCHED_SETTLE - 0.1)
    assert world.state.status is RoleStatus.WAITING
    world.run(0.3)
    assert world.state.status is RoleStatus.WORKING  # the profile's reading, as before


def test_a_screen_that_says_something_leaves_the_dialog_at_once(tmp_path: Path) -> None:
    world = gemini_at_its_dialog(tmp_path)
    idle = (SCREENS / "gemini_idle_boot.txt").read_text().split("\n")
    world.output(("\x1b[2J\x1b[H" + "\r\n".join(idle[:39])).encode())
    world.run(LOOK)
    assert world.state.status is RoleStatus.IDLE
