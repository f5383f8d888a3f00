"""When a role may be briefed and when it takes a line, read from its
screen and state at a given time: on a fake clock, no process."""

from __future__ import annotations

from dataclasses import replace

import pytest

from choragos.actors import messages as m
from choragos.actors.rolescreen import (
    BOOT_MAX_WAIT,
    BOOT_QUIET,
    BUSY_RELOOK,
    QUIET_IDLE,
    boot_ready,
    ready,
)
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


def test_a_running_agent_is_not_briefed_until_it_has_rested_a_whole_quiet_wait(tmp_path):
    """An idle-looking prompt, quiet, but the agent runs (starved of CPU on
    its way to a dialog): the quiet wait counts again from its last sight
    running, so the brief goes in one quiet wait after it rests, not before."""
    world = booting(tmp_path)
    world.agent.busy = True
    rests = world.clock.t + 5.0
    world.timers.call(5.0, lambda: setattr(world.agent, "busy", False))
    world.tell(m.BootCheck(world.state.gen))
    world.run_until(lambda: world.writes_of(world.state.boot_text.encode()))
    (briefed,) = world.writes_of(world.state.boot_text.encode())
    # Seen running every 0.1 s: the wait counts from its last sight running.
    assert rests - 0.1 + BOOT_QUIET - 1e-6 <= briefed < rests + BOOT_QUIET + 0.2
    world.run_until(world.core.outcomes)
    assert [o.ok for o in world.core.outcomes()] == [True]  # nothing said but the brief


def test_an_agent_running_past_the_longest_wait_is_never_typed_into_and_said_so(tmp_path):
    """Even an unknown TUI briefed anyway after BOOT_MAX_WAIT is not typed
    into while it runs; the operator hears of the held brief once."""
    world = booting(tmp_path, prompt="loading...")
    world.agent.busy = True
    world.tell(m.BootCheck(world.state.gen))
    world.run_until(lambda: world.core.outcomes(final=True), limit=BOOT_MAX_WAIT + 5)
    world.run(10.0)
    (held,) = world.core.outcomes(final=True)
    assert not held.ok and held.untouched and held.injection.kind == "boot"
    assert "not briefed" in held.detail and "not briefed" in world.state.detail
    assert not world.writes_of(world.state.boot_text.encode())
    assert not world.state.booted


def test_a_quiet_unmarked_screen_is_not_idle_while_its_program_runs(tmp_path):
    """An unknown TUI with no busy marker counts as idle after QUIET_IDLE of
    quiet, but not while its program runs (at work without a word, or
    starved of CPU on its way to draw more): it takes no line then, and it
    is read as idle soon after it rests."""
    world = World(tmp_path, prompt="")
    s = world.state
    world.output(b"thinking it over")  # matches nothing: working
    world.run(0.5)
    assert s.status is RoleStatus.WORKING
    world.agent.busy = True
    world.run(QUIET_IDLE + 4.0)
    assert s.status is RoleStatus.WORKING and not ready(s, world.clock.t)
    world.agent.busy = False
    rested = world.clock.t
    world.run_until(lambda: s.status is RoleStatus.IDLE)
    assert world.clock.t - rested <= BUSY_RELOOK + 0.1
    assert ready(s, world.clock.t + 1.0)
