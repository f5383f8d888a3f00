"""When a role may be briefed and when it takes a line, read from its
screen and state at a given time: on a fake clock, no process."""

from __future__ import annotations

from dataclasses import replace

import pytest

from choragos.actors import messages as m
from choragos.actors.rolescreen import BOOT_MAX_WAIT, BOOT_QUIET, QUIET_IDLE, boot_ready, ready
from choragos.roles.rolestatus import RoleStatus
from tests.fakehost import World

DIALOG = "\r\nDo you trust the files in this folder?\r\n\u276f 1. Yes, proceed\r\n  2. No\r\n"


def booting(tmp_path, prompt: str = "agent> ", screen: str = "") -> World:
    world = World(tmp_path, prompt=prompt)
    s = world.state
    s.booted, s.status, s.spawned = False, RoleStatus.BOOTING, world.clock.t
    if screen:
        world.agent.draw(screen)
    return world


@pytest.mark.parametrize(("prompt", "screen", "markers", "quiet", "since_spawn", "expected"), [
    ("agent> ", "", (), BOOT_QUIET, 2.0, True),  # an idle prompt, quiet long enough
    ("agent> ", "", (), BOOT_QUIET - 0.1, 2.0, False),  # still drawing
    ("agent> ", DIALOG, (), 60.0, 60.0, False),  # a dialog: never, however long
    ("agent> ", "", ("for agents",), BOOT_QUIET, 2.0, False),  # its marker not drawn yet
    ("built for agents\r\nagent> ", "", ("for agents",), BOOT_QUIET, 2.0, True),
    ("loading...", "", (), BOOT_QUIET, 2.0, False),  # not idle-looking...
    ("loading...", "", (), BOOT_QUIET, BOOT_MAX_WAIT, True),  # ...briefed in the end
], ids=["idle-and-quiet", "not-quiet", "dialog", "marker-missing", "marker-shown",
        "unknown-screen", "unknown-screen-past-the-max-wait"])
def test_when_a_role_may_be_briefed(tmp_path, prompt, screen, markers, quiet, since_spawn,
                                    expected):
    world = booting(tmp_path, prompt, screen)
    s = world.state
    s.profile = replace(s.profile, boot_markers=markers)
    s.spawned = world.clock.t - since_spawn
    assert boot_ready(s, s.last_output + quiet) is expected


def test_a_blank_screen_is_never_briefed(tmp_path):
    world = booting(tmp_path, prompt="")
    assert not boot_ready(world.state, world.clock.t + BOOT_MAX_WAIT + QUIET_IDLE)


def test_the_boot_check_types_the_brief_once_and_the_role_is_booted(tmp_path):
    world = booting(tmp_path)
    world.tell(m.BootCheck(world.state.gen))
    world.run_until(world.core.outcomes)
    (outcome,) = world.core.outcomes()
    assert outcome.ok and outcome.injection.kind == "boot"
    assert world.state.booted and world.agent.submitted == [world.state.boot_text]
    assert world.clock.t - 1000.0 >= BOOT_QUIET  # it waited for the quiet first


@pytest.mark.parametrize(("change", "expected"), [
    (lambda s, now: None, True),
    (lambda s, now: setattr(s, "booted", False), False),
    (lambda s, now: setattr(s, "status", RoleStatus.WAITING), False),
    (lambda s, now: setattr(s, "settle_until", now + 1), False),
    (lambda s, now: setattr(s, "left_in_input", "a line"), False),
    (lambda s, now: setattr(s, "typing", object()), False),
], ids=["idle", "not-briefed", "waiting", "settling", "line-left-in-input", "typing"])
def test_when_a_role_takes_a_line(tmp_path, change, expected):
    world = World(tmp_path)
    now = world.clock.t
    change(world.state, now)
    assert ready(world.state, now) is expected


def test_a_printing_agent_is_looked_at_once_per_quiet_wait_and_briefed_on_the_tick(tmp_path):
    """Counted on the fake clock: an agent printing every 50 ms for 10 s
    before its prompt settles.  Looked at every 0.1 s, that was 112 boot
    checks; now one per quiet wait it could have reached (10), and the brief
    goes in on the first 0.1 s tick after 1.2 s of quiet, as before."""
    world = booting(tmp_path)
    start = world.clock.t
    for n in range(1, 201):  # the last line at start + 10 s
        world.timers.call(0.05 * n, world.agent._chatter)
    looks: list[float] = []
    after = world.timers.after
    world.timers.after = lambda delay, target, msg: (
        isinstance(msg, m.BootCheck) and looks.append(world.clock.t + delay),
        after(delay, target, msg))[1]
    world.tell(m.BootCheck(world.state.gen))
    world.run_until(lambda: world.writes_of(world.state.boot_text.encode()))
    (briefed,) = world.writes_of(world.state.boot_text.encode())
    quiet_from = start + 10.0
    assert quiet_from + BOOT_QUIET <= briefed < quiet_from + BOOT_QUIET + 0.1 + 1e-6
    assert round((briefed - start) / 0.1, 6).is_integer()  # on the 0.1 s grid
    assert len(looks) <= 12, f"{len(looks)} boot checks"
