"""When a role may be briefed and when it takes a line, read from its
screen and state at a given time: on a fake clock, no process."""

from __future__ import annotations

import logging
from dataclasses import replace

import pytest

from choragos.actors import messages as m
from choragos.actors import rolescreen
from choragos.actors.rolescreen import (
    AT_REST,
    BOOT_MAX_WAIT,
    BOOT_QUIET,
    QUIET_IDLE,
    REST_WINDOW,
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
    boot_ready(s, s.last_output + quiet - REST_WINDOW)  # opens its rest window
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


def test_a_printing_agent_is_looked_at_twice_per_quiet_wait_and_briefed_on_the_tick(tmp_path):
    """Counted on the fake clock: an agent printing every 50 ms for 10 s
    before its prompt settles.  Looked at every 0.1 s, that was 112 boot
    checks; now two per quiet wait it could have reached (one to open the
    window that tells it at rest, one to read it), its CPU time read only
    once it is quiet, and the brief goes in on the first 0.1 s tick after
    1.2 s of quiet, as before."""
    world = booting(tmp_path)
    start = world.clock.t
    for n in range(1, 201):  # the last line at start + 10 s
        world.timers.call(0.05 * n, world.agent._chatter)
    looks: list[float] = []
    readings: list[float] = []
    wanted_ns = world.agent.wanted_ns
    world.agent.wanted_ns = lambda: readings.append(world.clock.t) or wanted_ns()
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
    assert len(looks) <= 21, f"{len(looks)} boot checks"
    assert len(readings) == 2 and readings[0] >= quiet_from + BOOT_QUIET - REST_WINDOW


def test_a_busy_agent_is_not_briefed_until_it_rests_a_whole_window(tmp_path):
    """An idle-looking prompt, quiet, but the agent wants the CPU (starved on
    its way to a dialog, or at work): measured window after window, and
    briefed only over a window it rested through."""
    world = booting(tmp_path)
    world.agent.busy = True
    rests = world.clock.t + 5.0
    world.timers.call(5.0, lambda: setattr(world.agent, "busy", False))
    world.tell(m.BootCheck(world.state.gen))
    world.run_until(lambda: world.writes_of(world.state.boot_text.encode()))
    (briefed,) = world.writes_of(world.state.boot_text.encode())
    assert rests + REST_WINDOW * (1 - AT_REST) <= briefed < rests + 2 * REST_WINDOW + 0.2
    world.run_until(world.core.outcomes)
    assert [o.ok for o in world.core.outcomes()] == [True]  # nothing said but the brief


@pytest.mark.parametrize(("wants", "briefed"), [(0.01, True), (0.35, True), (0.7, False)],
                         ids=["idle-machine", "busy-machine", "starved"])
def test_at_rest_is_a_share_of_the_window_not_a_moment(tmp_path, wants, briefed):
    """A resting agent on a busy machine wakes for its timers and waits on
    the run queue a while each time: a third of the window is still rest,
    briefed on the tick an idle machine's would be.  Wanting the CPU for
    most of it is not."""
    world = booting(tmp_path)
    world.agent.wants = wants
    world.tell(m.BootCheck(world.state.gen))
    world.run(BOOT_QUIET + 1.0)
    writes = world.writes_of(world.state.boot_text.encode())
    assert bool(writes) is briefed
    if briefed:
        assert writes[0] < 1000.0 + BOOT_QUIET + 0.1 + 1e-6


def test_an_agent_busy_past_the_longest_wait_is_never_typed_into_and_said_so(tmp_path):
    """Even an unknown TUI briefed anyway after BOOT_MAX_WAIT is not typed
    into while it wants the CPU; the operator hears of the held brief once,
    and the card's word goes once it is briefed."""
    world = booting(tmp_path, prompt="loading...")
    world.agent.busy = True
    world.tell(m.BootCheck(world.state.gen))
    world.run_until(lambda: world.core.outcomes(final=True), limit=BOOT_MAX_WAIT + 5)
    world.run(10.0)
    (held,) = world.core.outcomes(final=True)
    assert not held.ok and held.untouched and held.injection.kind == "boot"
    assert "not briefed" in held.detail and "not briefed" in world.state.detail
    assert not world.writes_of(world.state.boot_text.encode()) and not world.state.booted
    world.agent.busy = False
    world.run_until(lambda: world.state.booted)
    assert world.state.detail == "" and world.core.outcomes()[-1].ok


def test_a_stopped_agent_is_not_at_rest(tmp_path):
    """SIGSTOPped, an agent wants no CPU, yet reads nothing: not briefed."""
    world = booting(tmp_path)
    world.agent.stopped_ = True
    world.tell(m.BootCheck(world.state.gen))
    world.run(BOOT_QUIET + 3.0)
    assert not world.writes_of(world.state.boot_text.encode())
    world.agent.stopped_ = False
    world.run_until(lambda: world.state.booted)


def test_without_scheduler_figures_a_quiet_idle_screen_is_enough_and_said(tmp_path, caplog,
                                                                         monkeypatch):
    """No per-thread schedstat (macOS, a kernel without it): briefed on the
    quiet idle screen alone, as the tick before the check existed, and the
    log says once that the agent's rest is not known."""
    caplog.set_level(logging.INFO, logger="choragos.actors.rolescreen")
    monkeypatch.setattr(rolescreen, "_unmeasured_said", False)
    monkeypatch.setattr(rolescreen, "_kept_here", lambda: False)
    world = booting(tmp_path)
    world.agent.wants = None
    world.agent.busy = True  # were it measured, it would be held
    world.tell(m.BootCheck(world.state.gen))
    world.run_until(lambda: world.writes_of(world.state.boot_text.encode()))
    assert world.writes_of(world.state.boot_text.encode())[0] < 1000.0 + BOOT_QUIET + 0.1 + 1e-6
    assert caplog.text.count("no per-thread scheduler statistics") == 1


def test_an_agent_gone_between_readings_is_not_taken_for_a_system_without_figures(
        tmp_path, caplog, monkeypatch):
    """Where the system keeps the figures, an agent whose session exited
    between two readings has none to read either: that is not the system
    lacking them, and the log does not say so."""
    caplog.set_level(logging.INFO, logger="choragos.actors.rolescreen")
    monkeypatch.setattr(rolescreen, "_unmeasured_said", False)
    monkeypatch.setattr(rolescreen, "_kept_here", lambda: True)
    world = booting(tmp_path)
    world.agent.wants = None
    world.tell(m.BootCheck(world.state.gen))
    world.run_until(lambda: world.writes_of(world.state.boot_text.encode()))
    assert "no per-thread scheduler statistics" not in caplog.text


def test_a_remote_seat_is_not_measured(tmp_path):
    """The agent of a remote seat runs on the other machine; the local
    process is its ssh client, whose rest says nothing of it: not read."""
    world = booting(tmp_path)
    s = world.state
    world.agent.busy = True
    read: list[float] = []
    world.agent.wanted_ns = lambda: read.append(1.0)
    s.seat = object()
    try:
        assert boot_ready(s, s.last_output + BOOT_QUIET)
    finally:
        s.seat = None
    assert not read


def test_a_window_across_a_pause_does_not_count(tmp_path):
    """Paused before its brief, an agent wants no CPU; a window opened
    before the pause would call it at rest however busy it is once resumed.
    The resume opens a new one."""
    world = booting(tmp_path)
    world.tell(m.BootCheck(world.state.gen))
    world.run(BOOT_QUIET - REST_WINDOW + 0.1)
    assert world.state.rest_mark is not None  # a window open
    paused_then_busy(world)
    assert not world.writes_of(world.state.boot_text.encode())
    world.agent.busy = False
    world.run_until(lambda: world.state.booted)


def paused_then_busy(world: World) -> None:
    """Paused 10 s with a window open, resumed busy, and 3 s on."""
    world.tell(m.Pause())
    world.run(10.0)
    world.agent.wanted_ns()  # (the fake counts at its present rate since its last reading)
    world.agent.busy = True
    world.tell(m.Resume())
    world.run(3.0)
