"""The typing protocol, step by step, on a fake clock with a fake PTY.

Each case scripts the fake agent (how it echoes, takes Enters, is starved
or stopped by the machine) and says how the line must end: its outcome,
the steps it went through, what was written and when.  The real role actor
and typist run; no real time passes and no process runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from choragos.actors import messages as m
from choragos.actors.typist import (
    ALLOWED,
    CONFIRM_WINDOW,
    ECHO_WAIT,
    ENDS,
    FAST_POLL,
    QUIET_TICK,
    RETRY_DELAY,
    STARVED_WAIT,
    IllegalStep,
    Step,
    Typing,
)
from choragos.agents.profiles import GENERIC
from choragos.roles.rolestatus import RoleStatus
from tests.fakehost import World

T, E, R = Step.TYPED, Step.ENTERED, Step.RETRYING
TEXT = "New task T1 from choragos: read .choragos/tasks/T1.md"
ENTER_QUIET = GENERIC.enter_quiet  # the fake agent's profile


@dataclass
class Case:
    id: str
    agent: dict[str, Any] = field(default_factory=dict)
    profile: dict[str, Any] = field(default_factory=dict)  # the profile's timing, changed
    before: Any = None  # what the machine does to the agent as the text goes in
    ok: bool = True
    path: tuple[Step, ...] = (T, E, Step.TAKEN)
    detail: str = "submitted after 1 enter"
    texts: int = 1  # how many times the text was written
    submitted: list[str] = field(default_factory=lambda: [TEXT])
    retries: int = 0
    left: bool = False
    was_submitted: bool = False  # the outcome says its Enter went in


CASES = [
    Case("typed-echo-at-once"),
    Case("bracketed-paste", {"bracketed": True}, detail="pasted (bracketed paste)"),
    Case("echo-late-within-the-wait", {"echo_after": 1.5}),
    Case("a-busy-pane-delays-the-enter", {"chatter": 8}),
    Case("first-enter-swallowed-second-submits", {"deaf_enters": 1},
         path=(T, E, E, Step.TAKEN), detail="submitted after 2 enters"),
    Case("enter-never-taken-is-left-in-input", {"deaf_enters": 5}, ok=False,
         path=(T, E, E, Step.LEFT), detail="the agent did not take the Enter",
         submitted=[], left=True),
    Case("never-echoed-is-retried-then-fails", {"shows_text": False}, ok=False,
         path=(T, R, T, Step.FAILED),
         detail="the text did not appear on the agent's screen after 2 attempts",
         texts=2, submitted=[], retries=1),
    Case("starved-before-reading-the-text-is-typed-once",
         before=lambda agent: agent.starve(7.55)),
    Case("starved-past-the-wait-on-the-text-is-left-unretyped",
         before=lambda agent: agent.starve(STARVED_WAIT + 10), ok=False,
         path=(T, Step.LEFT), detail="has not read the text in 30s; not typed again",
         submitted=[], left=True),
    Case("starved-on-its-enter-gets-no-second-enter",
         before=lambda agent: agent.world.timers.call(0.05, lambda: agent.starve(5))),
    Case("busy-after-reading-its-enter-gets-no-second-enter", {"enter_takes": 5.0}),
    Case("stopped-from-outside-is-waited-for-as-long-as-it-is",
         before=lambda agent: agent.stop(STARVED_WAIT + 10)),
    # Never at rest after its Enter: no second Enter, whenever it might read it.
    Case("busy-on-a-cpu-past-the-starved-wait-gets-no-second-enter",
         {"deaf_enters": 1, "busy": True}, ok=False, path=(T, E, Step.LEFT),
         detail="has not come to rest in 30s after its Enter; no second Enter",
         submitted=[], left=True, was_submitted=True),
    # Where the system keeps no figures, one look at its state decides, as before.
    Case("unmeasured-busy-gets-its-second-enter-after-the-starved-wait",
         {"deaf_enters": 1, "busy": True, "wants": None}, path=(T, E, E, Step.TAKEN),
         detail="submitted after 2 enters"),
    # An agent that reads an Enter within 0.1 s of text as part of a paste
    # (Gemini CLI's timer): its profile's quiet and floor make the first
    # Enter submit; with none, the first is a newline and the second submits.
    Case("a-paste-window-is-waited-out-by-its-profile", {"paste_window": 0.1},
         profile={"enter_quiet": 0.1, "enter_delay": 0.2}),
    Case("a-paste-window-without-a-quiet-takes-a-second-enter", {"paste_window": 0.1},
         profile={"enter_quiet": 0.0}, path=(T, E, E, Step.TAKEN),
         detail="submitted after 2 enters", submitted=[TEXT + "\n"]),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_line_goes_through_its_steps(tmp_path, case: Case):
    world = World(tmp_path, **case.agent)
    world.state.profile = replace(world.state.profile, **case.profile)
    typings: list[Typing] = []
    on_end = world.actor.typist.on_end
    world.actor.typist.on_end = lambda typing, ending: (typings.append(typing),
                                                        on_end(typing, ending))
    if case.before:
        case.before(world.agent)
    world.inject(TEXT)
    world.run_until(world.core.outcomes, limit=3 * STARVED_WAIT)
    outcome = world.core.outcomes()[-1]
    assert (outcome.ok, outcome.left_in_input) == (case.ok, case.left), outcome.detail
    assert case.detail in outcome.detail
    assert outcome.submitted is case.was_submitted
    assert tuple(typings[0].path) == case.path
    assert len(world.writes_of(TEXT.encode())) == case.texts
    assert len(world.core.outcomes(final=False)) == case.retries
    world.run(5.0)  # nothing more is typed after the end
    assert world.agent.submitted == case.submitted
    assert len(world.writes_of(TEXT.encode())) == case.texts
    assert world.core.view().held is case.left


def test_the_enter_goes_alone_once_the_echo_shows_and_the_pane_is_quiet(tmp_path):
    """A profile's quiet longer than the gaps in the agent's output (50 ms
    here) holds the Enter until the output stops."""
    world = World(tmp_path, echo_after=0.5, chatter=4)
    world.state.profile = replace(world.state.profile, enter_quiet=0.1)
    world.inject(TEXT)
    world.run_until(world.core.outcomes)
    (typed,), (enter,) = world.writes_of(TEXT.encode()), world.writes_of(b"\r")
    echoed = typed + 0.5
    quiet_from = echoed + 4 * 0.05  # the last of the chatter after the echo
    assert quiet_from + 0.1 <= enter <= quiet_from + 0.1 + QUIET_TICK
    assert [data for _, data in world.agent.writes] == [TEXT.encode(), b"\r"]


def test_the_enter_follows_the_echo_with_no_fixed_pause(tmp_path):
    world = World(tmp_path, echo_after=0.005)
    world.inject(TEXT)
    world.run_until(world.core.outcomes)
    (typed,), (enter,) = world.writes_of(TEXT.encode()), world.writes_of(b"\r")
    assert ENTER_QUIET <= enter - typed <= 0.005 + ENTER_QUIET + QUIET_TICK
    assert world.clock.t == enter  # taken, and seen as the agent drew it


def test_the_echo_and_the_clearing_are_seen_as_they_are_drawn(tmp_path):
    """Looked for as the agent's output arrives, not at the next poll: an
    echo drawn between two looks (13 ms, the polls at 20 and 40) gets its
    Enter the profile's quiet after it, and the clearing is seen at once.
    Counted: the typing's timer wake-ups for the line."""
    world = World(tmp_path, echo_after=0.013)
    looks: list[float] = []
    step = world.actor.typist.step
    world.actor.typist.step = lambda msg: (looks.append(world.clock.t), step(msg))
    world.inject(TEXT)
    world.run_until(world.core.outcomes)
    (typed,), (enter,) = world.writes_of(TEXT.encode()), world.writes_of(b"\r")
    assert enter - typed == pytest.approx(0.013 + ENTER_QUIET)
    assert world.clock.t == enter
    assert len(looks) == 1  # the quiet's end; before, the polls at 20 ms and the confirm's


def test_a_look_due_before_the_enter_does_not_look_after_it(tmp_path):
    """A look for the echo that comes once the Enter went in (its timer ran
    as the agent's output was read) takes no step: no second Enter."""
    world = World(tmp_path, deaf_enters=1)
    world.inject(TEXT)
    world.run_until(lambda: world.writes_of(b"\r"))
    world.tell(m.InjectStep(world.state.gen, 1, Step.TYPED))
    world.tell(m.InjectStep(world.state.gen, 1, Step.TYPED))
    assert len(world.writes_of(b"\r")) == 1
    world.run_until(world.core.outcomes)
    assert "submitted after 2 enters" in world.core.outcomes()[-1].detail


def test_a_profiles_floor_holds_the_enter_back(tmp_path):
    """Gemini's paste runs on a timer of its own: its profile's floor."""
    world = World(tmp_path)
    world.state.profile = replace(world.state.profile, enter_delay=0.5)
    world.inject(TEXT)
    world.run_until(world.core.outcomes)
    (typed,), (enter,) = world.writes_of(TEXT.encode()), world.writes_of(b"\r")
    assert 0.5 <= enter - typed < 0.5 + FAST_POLL
    assert "Enter 0.50s after the text" in world.core.outcomes()[-1].detail


def test_an_enter_read_with_the_text_is_a_paste_and_never_submits(tmp_path):
    """The fake agent's paste rule holds: why the Enter is a write of its own."""
    world = World(tmp_path)
    world.agent.write(TEXT.encode() + b"\r")
    world.run(1.0)
    assert world.agent.submitted == [] and world.agent.line == TEXT + "\n"


def test_an_agent_that_takes_a_quick_enter_as_a_newline_gets_it_late_enough(tmp_path):
    """The Enter waits for the echo and a quiet pane as long as the profile
    says, so an agent that reads an Enter soon after text as part of a paste
    (Gemini's 40 ms timer) still submits at the first."""
    world = World(tmp_path, paste_window=0.1, echo_after=0.02)
    world.state.profile = replace(world.state.profile, enter_quiet=0.1)
    world.inject(TEXT)
    world.run_until(world.core.outcomes)
    assert world.core.outcomes()[-1].ok
    assert "submitted after 1 enter" in world.core.outcomes()[-1].detail


def test_a_retry_finds_the_text_shown_late_and_only_presses_enter(tmp_path):
    """The agent draws the text after the echo wait ran out: the retry looks
    first, finds it in the input, and types nothing."""
    world = World(tmp_path, echo_after=ECHO_WAIT + 1.0)
    world.inject(TEXT)
    world.run_until(world.core.outcomes)
    assert world.core.outcomes()[-1].ok, world.core.outcomes()[-1].detail
    assert len(world.core.outcomes(final=False)) == 1  # the echo wait ran out once...
    assert world.agent.submitted == [TEXT]  # ...and it went in once
    assert len(world.writes_of(TEXT.encode())) == 1
    (retried,) = world.core.outcomes(final=False)
    assert f"retrying in {RETRY_DELAY:g}s" in retried.detail


def test_a_text_ending_at_the_last_column_is_seen_with_its_wrap_pending(tmp_path):
    cols = 80
    prompt = "." * (cols - len(TEXT) - 2) + "> "
    world = World(tmp_path, cols=cols, prompt=prompt)
    world.inject(TEXT)
    world.run_until(world.core.outcomes)
    assert world.core.outcomes()[-1].ok
    assert not world.core.outcomes(final=False)  # no retry: typed once
    assert world.agent.submitted == [TEXT]


def test_an_enter_unread_past_the_starved_wait_gets_no_second_enter(tmp_path):
    world = World(tmp_path)
    world.inject(TEXT)
    _until_echoed(world)
    world.agent.starve(STARVED_WAIT + 20)
    world.run_until(world.core.outcomes, limit=3 * STARVED_WAIT)
    outcome = world.core.outcomes()[-1]
    assert not outcome.ok and outcome.submitted and outcome.left_in_input
    assert "no second Enter" in outcome.detail
    assert len(world.writes_of(b"\r")) == 1
    world.run(30.0)  # once read, the one Enter submits it
    assert world.agent.submitted == [TEXT]


def test_a_line_left_in_input_holds_the_role_until_it_is_cleared(tmp_path):
    world = World(tmp_path, deaf_enters=5)
    world.inject(TEXT)
    world.run_until(world.core.outcomes)
    assert world.core.view().held and not world.core.view().ready
    world.inject("next line", injection_id=2)
    refused = world.core.outcomes()[-1]
    assert refused.untouched and not refused.ok  # never typed after the left line
    world.agent.line = ""
    world.agent.draw("\r\n" + world.agent.prompt)  # the operator cleared it
    world.tell(m.Classify(world.state.gen))
    assert not world.core.view().held and world.core.view().ready


def test_steps_are_held_while_the_role_is_paused(tmp_path):
    world = World(tmp_path, echo_after=0.0)
    world.inject(TEXT)
    world.state.status = RoleStatus.PAUSED
    world.run(10.0)
    assert world.writes_of(b"\r") == [] and not world.core.outcomes()
    world.state.status = RoleStatus.IDLE
    world.run_until(world.core.outcomes)
    assert world.core.outcomes()[-1].ok


def test_nothing_is_typed_into_a_question(tmp_path):
    world = World(tmp_path)
    world.agent.draw("\r\nDo you want to proceed?\r\n\u276f 1. Yes\r\n  2. No\r\n")
    world.tell(m.Classify(world.state.gen))
    world.inject(TEXT)
    outcome = world.core.outcomes()[-1]
    assert outcome.untouched and not outcome.ok
    assert world.agent.writes == []


def test_an_exit_after_the_enter_reports_the_line_submitted(tmp_path):
    from choragos.terminal.restartpolicy import ExitStatus

    world = World(tmp_path, deaf_enters=1)
    world.inject(TEXT)
    world.run_until(lambda: world.writes_of(b"\r"))
    world.tell(m.Exited(world.state.gen, ExitStatus(code=1)))
    outcome = world.core.outcomes()[-1]
    assert not outcome.ok and outcome.submitted and "exited" in outcome.detail


def test_the_confirm_window_starts_over_while_the_agent_is_busy(tmp_path):
    world = World(tmp_path, deaf_enters=1, busy=True)
    world.inject(TEXT)
    world.run_until(lambda: world.writes_of(b"\r"))
    world.run(3 * CONFIRM_WINDOW)  # busy on a CPU: slow, not deaf
    assert len(world.writes_of(b"\r")) == 1 and not world.core.outcomes()


def _until_echoed(world: World) -> None:
    """Run until the text shows: echoed, not yet quiet, its Enter still to come."""
    world.run_until(lambda: world.actor.typist.shows_pending(TEXT))
    assert not world.writes_of(b"\r")


# -- the table itself -------------------------------------------------------

def test_every_step_is_reachable_and_an_end_leads_nowhere():
    reached, todo = {Step.TYPED}, [Step.TYPED]
    while todo:
        for nxt in ALLOWED[todo.pop()] - reached:
            reached.add(nxt)
            todo.append(nxt)
    assert reached == set(Step)
    assert all(not ALLOWED[end] for end in ENDS)


def test_a_step_the_table_does_not_allow_raises():
    typing = Typing(m.Injection(1, "coder", "x", "notice"), 0.0, 0.0)
    typing.move(Step.ENTERED)
    with pytest.raises(IllegalStep):
        typing.move(Step.RETRYING)  # an Enter went in: typing again could double it


# -- the looks at an agent that never reads ----------------------------------

def _starve_before_the_text(world: World) -> None:
    world.agent.starve(10 * STARVED_WAIT)
    world.inject(TEXT)


def _starve_before_the_enter(world: World) -> None:
    world.inject(TEXT)
    _until_echoed(world)
    world.agent.starve(10 * STARVED_WAIT)


@pytest.mark.parametrize("starve", [_starve_before_the_text, _starve_before_the_enter],
                         ids=["unread-text", "unread-enter"])
def test_an_agent_that_never_reads_is_looked_at_less_and_less(tmp_path, starve):
    """Counted on the fake clock: the typing's looks (timer wake-ups of the
    role actor) through the starved wait of an agent that reads nothing.
    Polled every 100 ms (the text) or 50 ms (its Enter), that was 316 and
    801 looks; backing off to one a second once the usual wait is over, it
    is 63 and 73 (half of them in the first two seconds, as for any agent),
    and the line still ends as before."""
    world = World(tmp_path)
    looks: list[float] = []
    step = world.actor.typist.step
    world.actor.typist.step = lambda msg: (looks.append(world.clock.t), step(msg))
    starve(world)
    looks.clear()
    world.run_until(world.core.outcomes, limit=3 * STARVED_WAIT)
    outcome = world.core.outcomes()[-1]
    assert not outcome.ok and outcome.left_in_input
    assert f"in {STARVED_WAIT:g}s" in outcome.detail
    assert looks[-1] - looks[0] >= STARVED_WAIT - 1.0  # the whole wait, not cut short
    assert len(looks) <= 80, f"{len(looks)} looks in {looks[-1] - looks[0]:.1f} fake s"


def test_an_agent_that_needed_a_second_enter_gets_the_next_ones_later(tmp_path):
    """Gemini's paste timer runs late on a busy machine, so an Enter at the
    profile's floor can still be read as part of the text.  The line after
    one its first Enter did not submit waits twice as long for its Enter,
    and the floor eases back as first Enters submit again."""
    world = World(tmp_path, paste_window=0.25)
    world.state.profile = replace(world.state.profile, enter_quiet=0.1, enter_delay=0.2)
    details = []
    for n in range(1, 7):
        world.inject(f"{TEXT} ({n})", injection_id=n)
        world.run_until(lambda n=n: len(world.core.outcomes()) == n)
        details.append(world.core.outcomes()[-1].detail)
        world.run(1.0)
    enters = [d.split("submitted after ")[1] for d in details]
    floors = [d.split("Enter ")[1].split("s after")[0] for d in details]
    # The profile's floor is inside the agent's window: a second Enter; the
    # floor doubles past it and eases back a quarter a line until it is
    # inside again, and doubles again.  (Without it, every line took two.)
    assert enters == ["2 enters", "1 enter", "1 enter", "2 enters", "1 enter", "1 enter"]
    assert floors == ["0.20", "0.40", "0.30", "0.23", "0.45", "0.34"]
    assert world.agent.submitted == [f"{TEXT} ({n})" + ("\n" if n in (1, 4) else "")
                                     for n in range(1, 7)]
