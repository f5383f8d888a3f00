"""After its brief, a screen read idle on quiet alone takes a line only from
an agent at rest; and the typist never types again into a dialog.  On a
fake clock with a fake PTY: the real role actor, typist and screen reads.
"""

from __future__ import annotations

import logging
from dataclasses import replace

import pytest

from choragos.actors import messages as m
from choragos.actors import rolescreen
from choragos.actors.rolescreen import BUSY_HELD, BUSY_HOLD, QUIET_IDLE, REST_WINDOW
from choragos.actors.typist import CONFIRM_POLL, CONFIRM_WINDOW, Step, Typing
from choragos.roles.rolestatus import RoleStatus
from tests.fakehost import World
from tests.unit.test_rolescreen import paused_then_busy

QUIET_LINE = "ready for the next message"  # idle-looking, yet no profile's prompt
DIALOG = "\r\nDo you trust the files in this folder?\r\n\u276f 1. Yes, proceed\r\n  2. No\r\n"
TEXT = "New task T1 from choragos: read .choragos/tasks/T1.md"


def quiet_screen(tmp_path, **agent) -> tuple[World, list[float], list[float]]:
    """A briefed role whose agent has just drawn a screen nothing recognises;
    the times its session's CPU was read and its screen looked at again."""
    world = World(tmp_path, prompt=QUIET_LINE, **agent)
    readings = cpu_readings(world)
    looks: list[float] = []
    quiet_check = world.actor.watch.quiet_check
    world.actor.watch.quiet_check = lambda msg: (looks.append(world.clock.t), quiet_check(msg))
    world.output(b"\x1b[0m")  # (drawn: the actor hears of it)
    world.run(0.2)  # classified: a screen nothing matches reads working
    assert world.state.status is RoleStatus.WORKING
    return world, readings, looks


def cpu_readings(world: World) -> list[float]:
    """The times the agent's session's CPU is read from now on."""
    readings: list[float] = []
    wanted_ns = world.agent.wanted_ns
    world.agent.wanted_ns = lambda: readings.append(world.clock.t) or wanted_ns()
    return readings


def idle_at(world: World, limit: float = 60.0) -> float:
    world.run_until(lambda: world.state.status is RoleStatus.IDLE, limit=limit)
    return world.clock.t


def test_a_resting_agent_reads_idle_on_the_tick_it_did_and_is_read_twice(tmp_path):
    """The rest window is the last REST_WINDOW of the quiet wait, not more
    wait: idle on the look at QUIET_IDLE (+ the look's 0.05 s), as before.
    Counted: two looks per quiet wait (one before), two CPU readings."""
    world, readings, looks = quiet_screen(tmp_path)
    drawn = world.state.last_output
    assert idle_at(world) == drawn + QUIET_IDLE + 0.05
    assert len(looks) == 2 and len(readings) == 2
    assert readings[1] - readings[0] >= REST_WINDOW - 1e-6
    assert world.core.view().ready
    world.inject(TEXT)
    world.run_until(world.core.outcomes)
    assert world.core.outcomes()[-1].ok and world.agent.submitted == [TEXT]


def test_a_busy_quiet_agent_stays_working_until_it_rests(tmp_path):
    """Quiet, but wanting the CPU (starved on its way to a dialog, or at
    work): never read idle, measured window after window, and idle only over
    a window it rested through.  A line offered meanwhile is not typed."""
    world, readings, looks = quiet_screen(tmp_path, busy=True)
    rests = world.clock.t + 8.0
    world.timers.call(8.0, lambda: setattr(world.agent, "busy", False))
    world.run(7.5)
    assert world.state.status is RoleStatus.WORKING and not world.core.view().ready
    world.inject(TEXT)
    assert world.core.outcomes()[-1].untouched and not world.writes_of(TEXT.encode())
    became_idle = idle_at(world)
    assert rests < became_idle <= rests + 2 * REST_WINDOW + 0.1
    # Looked at once a window, not every 50 ms: about 8 s / 0.6 s.
    assert len(looks) <= 8.0 / REST_WINDOW + 4 and len(readings) <= len(looks) + 1


def test_a_busy_quiet_agent_that_draws_a_dialog_is_never_typed_into(tmp_path):
    """A line waits from the start, offered whenever the role says it is
    ready (as the core does): the agent's spell ends in a dialog, never in
    a prompt, so it is never typed."""
    world, _, _ = quiet_screen(tmp_path, busy=True)
    world.timers.call(5.0, lambda: world.agent.draw(DIALOG))
    for _ in range(100):
        if world.core.view().ready and not world.core.outcomes():
            world.inject(TEXT)
        world.run(0.1)
    assert world.state.status is RoleStatus.WAITING
    assert not world.writes_of(TEXT.encode())


def test_a_hold_past_busy_hold_is_said_once_and_cleared_by_output(tmp_path):
    """Quiet and busy past BUSY_HOLD: its card says so, its view carries the
    hold (the core says it if lines wait), once; new output ends it."""
    world, _, _ = quiet_screen(tmp_path, busy=True)
    world.run(QUIET_IDLE + BUSY_HOLD - 1.0)
    assert world.core.view().busy_held is None and world.state.detail == ""
    world.run(2.0)
    view = world.core.view()
    assert view.busy_held is not None and view.detail == BUSY_HELD
    held_views = [x.view for x in world.core.told
                  if isinstance(x, m.RoleReported) and x.view.busy_held is not None]
    world.run(10.0)
    assert [x.view for x in world.core.told if isinstance(x, m.RoleReported)
            and x.view.busy_held is not None] == held_views  # not said again
    world.agent.draw("\r\nstill here\r\n")
    world.run(0.2)
    assert world.core.view().busy_held is None and world.core.view().detail == ""


def test_a_stopped_agent_is_not_idle_and_not_looked_at_every_50ms(tmp_path):
    world, _, looks = quiet_screen(tmp_path)
    world.agent.stopped_ = True
    world.run(6.0)
    assert world.state.status is RoleStatus.WORKING
    assert len(looks) <= 6.0 / REST_WINDOW + 3
    world.agent.stopped_ = False
    idle_at(world, limit=2 * REST_WINDOW + 0.2)


def test_without_figures_the_quiet_screen_decides_alone_as_before(tmp_path, caplog,
                                                                 monkeypatch):
    caplog.set_level(logging.INFO, logger="choragos.actors.rolescreen")
    monkeypatch.setattr(rolescreen, "_unmeasured_said", False)
    monkeypatch.setattr(rolescreen, "_kept_here", lambda: False)
    world, _, looks = quiet_screen(tmp_path, wants=None, busy=True)
    drawn = world.state.last_output
    assert idle_at(world) == drawn + QUIET_IDLE + 0.05
    assert len(looks) == 2
    assert caplog.text.count("no per-thread scheduler statistics") == 1


def test_a_remote_seat_is_not_measured(tmp_path):
    world, readings, _ = quiet_screen(tmp_path, busy=True)
    world.state.seat = object()
    try:
        drawn = world.state.last_output
        assert idle_at(world) == drawn + QUIET_IDLE + 0.05
    finally:
        world.state.seat = None
    assert not readings


def test_a_window_across_a_pause_does_not_count(tmp_path):
    """Paused, an agent wants no CPU: a window open across the pause would
    call a busy one at rest once resumed."""
    world, _, _ = quiet_screen(tmp_path)
    world.run(QUIET_IDLE - REST_WINDOW + 0.1)
    assert world.state.rest_mark is not None
    paused_then_busy(world)
    assert world.state.status is RoleStatus.WORKING


def test_a_line_is_not_typed_again_into_a_dialog(tmp_path):
    """Its text never showed, and a dialog did: typed again, the text
    would answer it."""
    world = World(tmp_path, shows_text=False)
    world.inject(TEXT)
    world.timers.call(1.0, lambda: world.agent.draw(DIALOG))
    world.run_until(world.core.outcomes, limit=30.0)
    outcome = world.core.outcomes()[-1]
    assert not outcome.ok and "a dialog is on the agent's screen" in outcome.detail
    world.run(10.0)
    assert len(world.writes_of(TEXT.encode())) == 1


def test_no_second_enter_goes_into_a_dialog(tmp_path):
    """The first Enter not seen taken, and a dialog drawn meanwhile: a second
    Enter would pick its first answer."""
    world = World(tmp_path, deaf_enters=1)
    typings: list[Typing] = []
    on_end = world.actor.typist.on_end
    world.actor.typist.on_end = lambda typing, ending: (typings.append(typing),
                                                        on_end(typing, ending))
    world.inject(TEXT)
    world.run_until(lambda: world.writes_of(b"\r"))
    world.agent.draw("\x1b7" + DIALOG.replace("\r\n", "\x1b[B\r") + "\x1b8")
    world.run_until(world.core.outcomes, limit=30.0)
    assert len(world.writes_of(b"\r")) == 1
    outcome = world.core.outcomes()[-1]
    assert outcome.left_in_input and "a dialog came up" in outcome.detail
    assert typings[0].path[-1] is Step.LEFT


def test_a_quiet_screen_showing_busy_is_not_looked_at_again_and_again(tmp_path):
    """A static busy marker reads working however long it is quiet: only
    new output can change that, and it is read as it comes.  Counted: no
    look in 10 s (there were 140, every 50 ms, before)."""
    world, readings, looks = quiet_screen(tmp_path)
    world.state.profile = replace(world.state.profile, busy_markers=("esc to interrupt",))
    world.output(b"\r\nthinking (esc to interrupt)")
    world.run(10.0)
    assert world.state.status is RoleStatus.WORKING
    assert len(looks) <= 1 and not readings
    world.output(b"\x1b[2J\x1b[H" + QUIET_LINE.encode())  # the marker gone
    idle_at(world)


# -- the second Enter waits for rest too ------------------------------------

def _entered(tmp_path, **agent) -> tuple[World, list[float]]:
    """A line whose first Enter the agent read and did not take (the text
    still in its input); the times the typist read its session's CPU."""
    world = World(tmp_path, deaf_enters=1, **agent)
    world.inject(TEXT)
    world.run_until(lambda: world.writes_of(b"\r"))
    return world, cpu_readings(world)


def test_an_agent_starved_after_its_enter_gets_none_in_the_dialog_it_draws(tmp_path):
    """It read the Enter, then wants the CPU with its input not redrawn,
    and a look at its state finds it asleep (as a starved one often is):
    one look said idle and the second Enter went in at 1.5 s, to be read
    by the dialog it drew at 3 s.  Measured over a window, it is not at
    rest; once the dialog is up, the line is left for the operator."""
    world, _ = _entered(tmp_path, busy=True)
    world.agent.running = lambda: False
    world.timers.call(3.0, lambda: (setattr(world.agent, "busy", False),
                                    world.agent.draw("\x1b7" + DIALOG.replace("\r\n", "\x1b[B\r")
                                                     + "\x1b8")))
    world.run_until(world.core.outcomes, limit=60.0)
    assert len(world.writes_of(b"\r")) == 1
    outcome = world.core.outcomes()[-1]
    assert outcome.left_in_input and "a dialog came up" in outcome.detail


def test_a_stopped_agent_gets_its_second_enter_only_once_it_runs_and_rests(tmp_path):
    """Stopped, an agent is not running, yet reads nothing: the second
    Enter went in at 1.5 s, to whatever it would draw on waking."""
    world, _ = _entered(tmp_path)
    world.agent.stopped_ = True
    world.timers.call(5.0, lambda: setattr(world.agent, "stopped_", False))
    world.run(5.0)
    assert len(world.writes_of(b"\r")) == 1
    world.run_until(world.core.outcomes)
    assert world.core.outcomes()[-1].ok and len(world.writes_of(b"\r")) == 2


def test_a_resting_agent_gets_its_second_enter_when_it_did(tmp_path):
    """The window is the confirm window's last REST_WINDOW, not time added:
    the second Enter within a poll of CONFIRM_WINDOW, as before.  Counted:
    two readings of the agent's CPU."""
    world, readings = _entered(tmp_path)
    world.run_until(lambda: len(world.writes_of(b"\r")) == 2)
    first, second = world.writes_of(b"\r")
    assert CONFIRM_WINDOW <= second - first <= CONFIRM_WINDOW + CONFIRM_POLL
    assert len(readings) == 2 and readings[1] - readings[0] >= REST_WINDOW - 1e-6
    world.run_until(world.core.outcomes)
    assert world.core.outcomes()[-1].ok


@pytest.mark.parametrize("takes", [0.0, 1.2])
def test_a_line_its_first_enter_submits_waits_for_no_window(tmp_path, takes):
    """Taken at once, or after 1.2 s of work on a CPU: seen taken as it is
    drawn, whatever the window.  Counted: no reading before the window's
    opening look."""
    world = World(tmp_path, enter_takes=takes)
    readings = cpu_readings(world)
    world.inject(TEXT)
    world.run_until(world.core.outcomes)
    (enter,) = world.writes_of(b"\r")
    assert world.clock.t == enter + takes and world.core.outcomes()[-1].ok
    assert len(readings) == (1 if takes else 0)


def test_the_typists_window_and_the_quiet_checks_are_kept_apart(tmp_path):
    """The quiet check's window read (and reopened) in the middle of the
    typist's does not move the second Enter, and the typist's readings
    leave the quiet check's window and verdicts as they were."""
    world, readings = _entered(tmp_path)
    s = world.state
    world.run(1.2)
    assert len(readings) == 1  # the typist's window is open
    s.last_output = world.clock.t - 0.1
    rolescreen.at_rest(s, world.clock.t)  # the quiet check opens its own
    kept = (s.rest_mark, s.boot_busy_at, s.rested_at)
    world.run_until(lambda: len(world.writes_of(b"\r")) == 2)
    first, second = world.writes_of(b"\r")
    assert second - first <= CONFIRM_WINDOW + CONFIRM_POLL
    assert (s.rest_mark, s.boot_busy_at, s.rested_at) == kept
