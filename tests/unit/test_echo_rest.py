"""A line whose echo never came is typed again only into an agent at rest
over the echo wait's last REST_WINDOW, and again over the retry pause's,
never into a dialog.  On a fake clock with a fake PTY: the real role actor,
typist and screen reads.
"""

from __future__ import annotations

import pytest

from choragos.actors.rolescreen import REST_WINDOW
from choragos.actors.typist import ECHO_POLL, ECHO_WAIT, RETRY_DELAY, STARVED_WAIT, Step, Typing
from tests.fakehost import World
from tests.unit.test_rest_after_brief import DIALOG, TEXT, cpu_readings

T, R = Step.TYPED, Step.RETRYING


def _unechoed(tmp_path, **agent) -> tuple[World, list[float], list[Typing]]:
    """A line typed into an agent that reads it and never draws it; the times
    its session's CPU was read, and the typing once it ends."""
    world = World(tmp_path, shows_text=False, **agent)
    readings = cpu_readings(world)
    typings: list[Typing] = []
    on_end = world.actor.typist.on_end
    world.actor.typist.on_end = lambda typing, ending: (typings.append(typing),
                                                        on_end(typing, ending))
    world.inject(TEXT)
    return world, readings, typings


def _dialog(world: World) -> None:
    world.agent.busy = False
    world.agent.draw(DIALOG)


def test_an_agent_at_work_on_the_text_is_not_typed_into_twice_nor_into_its_dialog(tmp_path):
    """It read the text and wants the CPU with nothing drawn, asleep at every
    look at its state (as a starved one often is), then draws a dialog at
    6 s.  One look said idle at 2 s and the text went in again at 5 s, to
    be read by that dialog.  Measured over a window, it is not at rest; once
    the dialog is up, the line fails, said so, typed once."""
    world, _, typings = _unechoed(tmp_path, busy=True)
    world.agent.running = lambda: False
    world.timers.call(6.0, lambda: _dialog(world))
    world.run_until(world.core.outcomes, limit=60.0)
    outcome = world.core.outcomes()[-1]
    assert not outcome.ok and "a dialog is on the agent's screen" in outcome.detail
    assert tuple(typings[0].path) == (T, Step.FAILED)  # no retry announced either
    world.run(10.0)
    assert len(world.writes_of(TEXT.encode())) == 1


def test_an_agent_never_at_rest_fails_loudly_with_its_text_typed_once(tmp_path):
    world, _, typings = _unechoed(tmp_path, busy=True)
    world.agent.running = lambda: False
    world.run_until(world.core.outcomes, limit=3 * STARVED_WAIT)
    outcome = world.core.outcomes()[-1]
    assert not outcome.ok and not outcome.left_in_input
    assert f"has not come to rest in {STARVED_WAIT:g}s; not typed again" in outcome.detail
    assert tuple(typings[0].path) == (T, Step.FAILED)
    assert len(world.writes_of(TEXT.encode())) == 1


def test_a_resting_agent_gets_its_text_again_when_it_did(tmp_path):
    """The windows are the last REST_WINDOW of the echo wait and of the
    pause, not time added: the text goes in again within a look of
    ECHO_WAIT + RETRY_DELAY, as before.  Counted: two CPU readings per
    window, each a window apart."""
    world, readings, _ = _unechoed(tmp_path)
    world.run_until(lambda: len(world.writes_of(TEXT.encode())) == 2)
    first, second = world.writes_of(TEXT.encode())
    assert ECHO_WAIT + RETRY_DELAY <= second - first <= ECHO_WAIT + RETRY_DELAY + ECHO_POLL
    assert len(readings) == 4
    opened, ended = readings[::2], readings[1::2]
    assert all(b - a >= REST_WINDOW - 1e-6 for a, b in zip(opened, ended, strict=True))


def test_an_agent_at_work_in_the_pause_is_waited_for_again(tmp_path):
    """At rest when the echo wait ended, then at work in the pause before
    the retype: what allowed the retype changed, so its echo is awaited
    again (and the dialog it draws meanwhile keeps the text out)."""
    world, _, typings = _unechoed(tmp_path)
    world.timers.call(ECHO_WAIT + 1.0, lambda: setattr(world.agent, "busy", True))
    world.timers.call(ECHO_WAIT + RETRY_DELAY + 2.0, lambda: _dialog(world))
    world.run_until(world.core.outcomes, limit=60.0)
    outcome = world.core.outcomes()[-1]
    assert not outcome.ok and "a dialog is on the agent's screen" in outcome.detail
    assert tuple(typings[0].path) == (T, R, T, Step.FAILED)
    assert len(world.writes_of(TEXT.encode())) == 1


@pytest.mark.parametrize(("echo_after", "reads"), [(0.005, 0), (ECHO_WAIT - 0.5, 1)])
def test_a_line_whose_echo_comes_is_not_measured(tmp_path, echo_after, reads):
    """Echoed at once: no CPU reading at all, the line as before.  Echoed
    in the wait's last REST_WINDOW: the window's opening reading, no more."""
    world = World(tmp_path, echo_after=echo_after)
    readings = cpu_readings(world)
    world.inject(TEXT)
    world.run_until(world.core.outcomes)
    assert world.core.outcomes()[-1].ok and world.agent.submitted == [TEXT]
    assert len(readings) == reads


def test_without_figures_one_look_decides_as_before(tmp_path):
    """Where the system keeps no figures, one look at its state: running,
    waited on up to STARVED_WAIT, then typed again."""
    world, _, _ = _unechoed(tmp_path, busy=True, wants=None)
    world.run(STARVED_WAIT)
    assert len(world.writes_of(TEXT.encode())) == 1
    world.run_until(lambda: len(world.writes_of(TEXT.encode())) == 2, limit=2 * ECHO_WAIT
                    + RETRY_DELAY + 2.0)
