"""A role's timed looks at its screen on the fake clock: a still screen is
a stall once, a role held still on purpose never is, and output starts the
count over."""

from __future__ import annotations

from dataclasses import replace

import pytest

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
