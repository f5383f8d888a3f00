"""A role never briefed at boot: a program that draws nothing, one that never
stops printing, one at a dialog, one whose brief never showed.  On a fake
clock, no process: each leaves ``booting`` once the boot's longest wait has
passed (or its brief failed), says why once, is never typed into, and is
looked at only as often as something can change."""

from __future__ import annotations

from choragos.actors import messages as m
from choragos.actors.rolescreen import BOOT_MAX_WAIT
from choragos.roles.rolestatus import NOT_BRIEFED, RoleStatus
from tests.fakehost import World

DIALOG = "Do you trust the files in this folder?\r\n\u276f 1. Yes, proceed\r\n  2. No\r\n"


def booting(tmp_path, prompt: str = "agent> ") -> tuple[World, list[float]]:
    """A role just spawned, its boot check on its way; the times of every boot check armed."""
    world = World(tmp_path, prompt=prompt)
    s = world.state
    s.booted, s.status, s.spawned = False, RoleStatus.BOOTING, world.clock.t
    looks: list[float] = []
    after = world.timers.after
    world.timers.after = lambda delay, target, msg: (
        isinstance(msg, m.BootCheck) and looks.append(world.clock.t + delay),
        after(delay, target, msg))[1]
    world.tell(m.BootCheck(s.gen))
    return world, looks


def held(world: World) -> list[m.InjectionOutcome]:
    return [o for o in world.core.outcomes() if o.untouched and o.injection.kind == "boot"]


def test_a_program_that_draws_nothing_leaves_booting_and_is_said_once(tmp_path):
    """A plain ``cat`` showed ``booting`` for good, in silence, and its boot
    check looked ten times a second for as long as it ran.  Now: shown idle
    (quiet) but not ready, said once, never typed into, not looked at again
    until it draws; once it draws a prompt and rests it is briefed."""
    world, looks = booting(tmp_path, prompt="")
    world.run(BOOT_MAX_WAIT + 60.0)
    s = world.state
    (said,) = held(world)
    assert said.detail.startswith(NOT_BRIEFED) and "drawn nothing" in said.detail
    assert s.status is RoleStatus.IDLE and s.detail == said.detail
    assert not world.core.view().ready and world.core.view().status is RoleStatus.IDLE
    assert world.agent.writes == []  # nothing typed: a blank screen is never briefed
    assert max(looks) <= s.spawned + BOOT_MAX_WAIT + 0.1 + 1e-6
    assert len(looks) <= 12, f"{len(looks)} boot checks"
    world.output(b"agent> ")
    world.run_until(lambda: s.booted)
    assert world.agent.submitted == [s.boot_text] and s.detail == ""
    assert len(held(world)) == 1


def test_an_agent_blank_for_a_while_is_briefed_once_it_draws_not_at_the_longest_wait(tmp_path):
    """An agent still loading shows a blank, quiet screen (a real CLI on a
    busy machine, for seconds): its boot check then waited until the
    longest wait, 20 s after the spawn, whatever it drew meanwhile, so every
    boot took 20 s and the brief came at the moment the role was said
    unbriefed.  Now its prompt's arrival is looked at as it comes."""
    world, _ = booting(tmp_path, prompt="")
    s = world.state
    world.run(4.0)  # blank and quiet past the boot's quiet wait
    assert not s.booted
    world.output(b"agent> ")
    world.run_until(lambda: s.booted)
    assert world.clock.t - s.spawned < 8.0, f"briefed {world.clock.t - s.spawned:.1f}s in"
    assert world.agent.submitted == [s.boot_text] and not held(world)


def test_a_program_that_never_stops_printing_is_said_and_shown_working(tmp_path):
    """A line every 50 ms for ever (``yes``): never quiet, so never briefed,
    and it showed ``booting`` in silence.  Now said once past the longest
    wait, and shown working; briefed once it pauses at a prompt."""
    world, looks = booting(tmp_path, prompt="")
    printing = [True]

    def chatter() -> None:
        if printing[0]:
            world.agent.draw("y\r\n")
            world.timers.call(0.05, chatter)
    world.timers.call(0.05, chatter)
    world.run(BOOT_MAX_WAIT + 10.0)
    s = world.state
    (said,) = held(world)
    assert "not paused" in said.detail and s.detail == said.detail
    assert s.status is RoleStatus.WORKING and not world.agent.writes
    assert len(looks) <= 2 * (BOOT_MAX_WAIT + 10.0) / 0.6 + 2  # twice per quiet wait at most
    printing[0] = False
    world.output(b"agent> ")
    world.run_until(lambda: s.booted)
    assert world.agent.submitted == [s.boot_text] and s.detail == ""


def test_a_dialog_at_boot_is_not_looked_at_every_tick_and_not_typed_into(tmp_path):
    """A startup dialog left up overnight: shown waiting (its own alarm), no
    boot check until it draws again, no key; answered, the brief goes in."""
    world, looks = booting(tmp_path, prompt="")
    world.agent.draw(DIALOG)
    world.run(600.0)
    s = world.state
    assert s.status is RoleStatus.WAITING and world.agent.writes == []
    assert len(looks) <= 10, f"{len(looks)} boot checks"
    assert held(world) == []  # a dialog is said as waiting, not as a held brief
    world.output(b"\x1b[2J\x1b[Hagent> ")
    world.run_until(lambda: s.booted)
    assert world.agent.submitted == [s.boot_text]


def test_a_brief_that_never_showed_is_on_the_card(tmp_path):
    """Retried twice and given up: the outcome was logged and the hook run,
    but the card (and ``status``) showed a plain idle role.  Now it says
    the role is not briefed and why."""
    world, _ = booting(tmp_path)
    world.agent.shows_text = False
    world.run_until(lambda: world.state.booted, limit=BOOT_MAX_WAIT + 60)
    (outcome,) = [o for o in world.core.outcomes() if o.injection.kind == "boot"]
    assert not outcome.ok and "attempts" in outcome.detail
    assert world.state.detail == f"{NOT_BRIEFED}: {outcome.detail}"
    assert world.core.view().detail == world.state.detail
