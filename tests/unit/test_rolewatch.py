"""A role's timed looks at its screen on the fake clock: a still screen is
a stall once, a role held still on purpose never is, and output starts the
count over."""

from __future__ import annotations

from dataclasses import replace

import pytest

from choragos.actors import messages as m
from choragos.actors import roleio
from choragos.actors.rolewatch import CLASSIFY_DELAY
from choragos.roles.rolestatus import RoleStatus
from tests.fakehost import World

STALL = 10.0


def watched(tmp_path, status: RoleStatus = RoleStatus.WORKING) -> World:
    world = World(tmp_path)
    s = world.state
    s.spec = replace(s.spec, stall_after=STALL)
    s.status = status
    world.tell(roleio.OutputSeen(s.gen))  # output came: the watch arms its checks
    return world


def stalled(world: World) -> bool:
    return bool(world.core.view() and world.core.view().stalled)


@pytest.mark.parametrize(("status", "expected"), [
    (RoleStatus.WORKING, True),
    (RoleStatus.PAUSED, False),  # held still on purpose
    (RoleStatus.LIMITED, False),
], ids=["working", "paused", "limited"])
def test_a_still_screen_is_a_stall_unless_held_still(tmp_path, status, expected):
    world = watched(tmp_path, status)
    world.state.status = status  # the classification may have moved it
    world.run(STALL - 1)
    assert not stalled(world)
    world.run(2)
    assert stalled(world) is expected


def test_output_starts_the_stall_count_over(tmp_path):
    world = watched(tmp_path)
    world.run(STALL - 2)
    world.agent.draw("more output")
    world.tell(roleio.OutputSeen(world.state.gen))
    world.run(STALL - 2)
    assert not stalled(world)
    world.run(3)
    assert stalled(world)


def test_a_burst_of_output_is_classified_once(tmp_path):
    world = watched(tmp_path, RoleStatus.IDLE)
    for _ in range(5):
        world.agent.draw("x")
        world.tell(roleio.OutputSeen(world.state.gen))
    pending = [t for t in world.timers.heap if not t[2].cancelled]
    world.run(CLASSIFY_DELAY)
    assert len(pending) == 2  # one classification and one stall check, not five of each
    assert not world.state.classify_pending


KEYS = 50
KEY_GAP = 0.06  # a quick typist: about 17 keys a second


def reported(world: World) -> list[m.RoleView]:
    return [x.view for x in world.core.told if isinstance(x, m.RoleReported)]


def at_prompt(tmp_path) -> World:
    """An idle role whose prompt reads idle with a line typed into it (as
    the real agents' input boxes do), its first view published."""
    world = World(tmp_path)
    s = world.state
    s.profile = replace(s.profile, idle_markers=("agent>",))
    world.output(b"")
    world.run(1.0)
    assert reported(world) and reported(world)[-1].status is RoleStatus.IDLE
    return world


def type_line(world: World, text: str) -> None:
    for char in text:
        roleio.type_keys(world.state, char.encode(), world.inbox.tell)
        world.run(KEY_GAP)


def test_the_line_being_typed_is_published_once_the_keys_pause(tmp_path):
    """50 keys over 3 s: the preview was published after every
    classification (17 times), and every echo after one sent the actor a
    notice (17); now the card's text once, after the last key, and one
    notice, for the first key's echo."""
    world = at_prompt(tmp_path)
    before = len(reported(world))
    notices = []
    tell = world.inbox.tell
    world.inbox.tell = lambda msg: (notices.append(msg) if isinstance(msg, roleio.OutputSeen)
                                    else None, tell(msg))
    line = "abcdefghij" * (KEYS // 10)
    type_line(world, line)
    assert len(reported(world)) == before  # the card's text waited
    assert len(notices) == 1
    world.run(2 * CLASSIFY_DELAY)
    views = reported(world)[before:]
    assert len(views) == 1
    assert any(line in text for text in views[0].preview)
    assert views[0] == world.actor.view()  # the card as the screen is now
    world.run(5.0)
    assert reported(world)[before:] == views
    assert not world.state.classify_pending  # no more looks once it was published


def test_a_status_change_is_published_at_once_while_keys_are_typed(tmp_path):
    world = at_prompt(tmp_path)
    type_line(world, "abcdef")
    world.state.status = RoleStatus.WORKING  # what a classification of a busy screen sets
    world.actor._publish()
    view = reported(world)[-1]
    assert view.status is RoleStatus.WORKING  # at once, not after the keys pause
    assert any("abcdef" in text for text in view.preview)  # the preview goes with it


def test_a_preview_with_no_keys_typed_is_published_at_its_classification(tmp_path):
    world = at_prompt(tmp_path)
    before = len(reported(world))
    world.output(b"agent output")
    world.run(CLASSIFY_DELAY)
    views = reported(world)[before:]
    assert len(views) == 1 and any("agent output" in text for text in views[0].preview)
