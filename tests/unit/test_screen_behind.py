"""Nothing is typed on a screen that is behind the agent's output.

The screen that allowed a write is read from what the session has fed its
terminal; output the agent wrote since (a dialog drawn just then) may still
wait in the PTY or in the reader's hands on a busy machine.  Each write
into the agent (the line, its Enter, a second Enter, the text again) waits
until that output is fed, and is then decided on the screen that shows it.
On a fake clock with a fake PTY whose output is fed late; the real role
actor and typist.
"""

from __future__ import annotations

from choragos.actors import messages as m
from choragos.actors.rolescreen import BEHIND_POLL, BEHIND_WAIT
from choragos.roles.rolestatus import RoleStatus
from tests.fakehost import World

TEXT = "New task T1 from choragos: read .choragos/tasks/T1.md"
DIALOG = "\r\n Do you want to proceed?\r\n ❯ 1. Yes\r\n   2. No\r\n"
LATE = 0.15  # the reader feeds the dialog this late


def test_a_line_offered_while_a_dialog_is_not_fed_yet_is_held_untyped(tmp_path):
    world = World(tmp_path)
    world.agent.write_unfed(DIALOG, LATE)
    world.inject(TEXT)
    assert world.agent.writes == []  # the idle screen read is behind the dialog
    world.run_until(world.core.outcomes, limit=LATE + 1.0)
    outcome = world.core.outcomes()[-1]
    assert outcome.untouched and not outcome.ok, outcome.detail
    assert world.state.status is RoleStatus.WAITING
    assert world.agent.writes == [] and world.agent.submitted == []


def test_an_enter_waits_for_a_dialog_drawn_after_the_echo_and_never_answers_it(tmp_path):
    world = World(tmp_path, echo_after=0.005)
    # Drawn after the echo, before the Enter's quiet has passed: fed late.
    world.timers.call(0.008, lambda: world.agent.write_unfed(DIALOG, LATE))
    world.inject(TEXT)
    world.run_until(world.core.outcomes, limit=60.0)
    outcome = world.core.outcomes()[-1]
    assert not outcome.ok and "dialog" in outcome.detail, outcome.detail
    assert world.writes_of(b"\r") == [] and world.agent.submitted == []
    assert len(world.writes_of(TEXT.encode())) == 1


def test_a_line_whose_output_is_fed_late_goes_in_once_fed_on_the_current_screen(tmp_path):
    """Output that only moves the pane on (no dialog) holds the write until
    fed, then the line goes as it would have: counted, its looks."""
    world = World(tmp_path)
    world.agent.write_unfed("\x1b7\x1b[1;1Hx\x1b8", LATE)  # elsewhere on the screen
    world.inject(TEXT)
    world.run_until(world.core.outcomes)
    (typed,) = world.writes_of(TEXT.encode())
    assert typed - 1000.0 >= LATE
    assert world.core.outcomes()[-1].ok and world.agent.submitted == [TEXT]


def test_a_pane_never_caught_up_is_typed_into_after_the_bounded_wait(tmp_path):
    """Output always waiting (a pane that never stops printing) puts a write
    off for BEHIND_WAIT, looked at every BEHIND_POLL, then goes as before."""
    world = World(tmp_path)
    world.agent.unfed += b"x"  # never fed
    world.inject(TEXT)
    world.run_until(lambda: world.agent.writes, limit=5.0)
    (typed,) = world.writes_of(TEXT.encode())
    assert BEHIND_WAIT <= typed - 1000.0 <= BEHIND_WAIT + BEHIND_POLL + 1e-9


def test_a_second_enter_waits_for_a_dialog_not_fed_yet_and_never_answers_it(tmp_path):
    world = World(tmp_path, deaf_enters=1)
    world.inject(TEXT)
    world.run_until(lambda: world.writes_of(b"\r"))
    # Its first Enter ignored; the dialog drawn just before the second is due.
    world.timers.call(1.45, lambda: world.agent.write_unfed(DIALOG, 0.3))
    world.run_until(world.core.outcomes, limit=60.0)
    world.run(5.0)
    assert len(world.writes_of(b"\r")) == 1 and world.agent.submitted == []


class SlowSeat:
    """A remote seat whose task file takes a while to send: ``during`` runs
    meanwhile (what the agent draws while the actor waits on the send)."""

    def __init__(self, during) -> None:
        self.during, self.sent = during, []

    def before_task(self, task_id: str) -> None:
        self.sent.append(task_id)
        self.during()


def test_a_remote_task_is_typed_on_the_screen_as_it_is_after_its_file_is_sent(tmp_path):
    world = World(tmp_path)
    world.state.seat = seat = SlowSeat(lambda: world.agent.draw(DIALOG))
    world.tell(m.Inject(m.Injection(1, "coder", TEXT, "task", "T1")))
    assert world.agent.writes == []  # typed on the screen read before the send
    (outcome,) = world.core.outcomes()
    assert outcome.untouched, outcome.detail
    assert seat.sent == ["T1"] and world.state.status is RoleStatus.WAITING
