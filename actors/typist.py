"""How a role types one injection into its agent's pane, step by step.

An injection goes through named steps (:class:`Step`), and :data:`ALLOWED`
says which may follow which, as ``choragos/roles/rolestatus.py`` does for a
role's status.  The text is written (``typed``: inside bracketed-paste
markers when the agent asked for them), its echo is awaited on the emulated
screen, the Enter goes in a write of its own once the echo shows and the
pane is quiet (``entered``), and the input clearing says it was ``taken``.
An echo that never comes is typed again after a pause (``retrying``), but
only into an agent at rest at the end of the wait and again at the end of
the pause, and never into a dialog; a line that reached the agent's input
but was not taken is ``left`` there for the operator; everything else that
ends it is ``failed``.

Every wait reads the clock and every write goes to the child the role's
state holds, both given by the role actor (see ``actors/rolehost.py``), so
the whole protocol runs in memory against a fake clock and a fake PTY.
The next step is a message told through the session's timers: a handler
never sleeps.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from choragos.actors import messages as m
from choragos.actors import rolescreen
from choragos.actors.rolescreen import BEHIND_POLL, BEHIND_WAIT, REST_WINDOW
from choragos.agents import screenstatus
from choragos.agents.profiles import typed_form
from choragos.plural import counted
from choragos.roles import briefs
from choragos.roles.rolestatus import RoleStatus
from choragos.session import hopstamps

if TYPE_CHECKING:
    from choragos.actors.role import RoleState

log = logging.getLogger("choragos.role")

# The Enter goes in its own write, once the text shows on the agent's screen
# and the pane has been quiet for the profile's ``enter_quiet``: agent TUIs
# read text+Enter arriving together as a paste, which never submits, and an
# agent that has drawn the text has read it.  A profile may also ask for a
# floor from the text to the Enter (``enter_delay``).
ECHO_WAIT = 2.0
# The echo and the input's clearing are looked for as the agent's output
# arrives (the reader's notice), and, should a notice be late, every
# FAST_POLL while they usually come, then every ECHO_POLL / CONFIRM_POLL.
FAST_POLL = 0.02
FAST_FOR = 0.3
QUIET_TICK = 0.005  # the least wait for a quiet pane: never a timer due at once
TIMER_SLACK = 0.001  # a wait this close to its end is over (clock readings differ by a hair)
ECHO_POLL = 0.1
CONFIRM_POLL = 0.05
CONFIRM_WINDOW = 1.5
# How long typed input the agent has not read yet is waited on (a starved
# agent on a busy machine) before the usual retries and failure apply.
STARVED_WAIT = 30.0
# Through that wait the looks back off, doubling from the step's own poll up
# to SLOW_POLL_MAX: an agent that never reads (a fixture that only prints)
# is not looked at every 50 ms for half a minute.
SLOW_POLL_MAX = 1.0
PAUSED_POLL = 0.2
# An agent that read a line's first Enter as part of the text (its paste
# timer ran late on a busy machine) gets the next lines' Enters later: the
# floor from the text to the Enter doubles, up to ENTER_FLOOR_MAX, and
# eases back by a quarter with each line a first Enter submits (a busy
# machine stays busy for a while: one good line does not undo it).
ENTER_FLOOR_STEP = 0.2
ENTER_FLOOR_MAX = 1.6
ENTER_FLOOR_EASE = 0.75
RETRY_DELAY = 3.0
BOOT_RETRIES = 2
LEFT_IN_INPUT = "its input holds a line it did not take: press Enter in its pane, or clear it"


class Step(StrEnum):
    TYPED = "wait-echo"      # the text is written: its echo is awaited before the Enter
    ENTERED = "confirm"      # an Enter is written: the input clearing is awaited
    RETRYING = "retype"      # the echo never came: the text goes in again after a pause
    TAKEN = "taken"          # the input cleared: the line was submitted
    LEFT = "left in input"   # given up with the line in (or on its way to) the input
    FAILED = "failed"        # not typed: retries spent, or the process went away


ENDS = frozenset({Step.TAKEN, Step.LEFT, Step.FAILED})
ALLOWED: dict[Step, frozenset[Step]] = {
    Step.TYPED: frozenset({Step.ENTERED, Step.RETRYING, Step.LEFT, Step.FAILED}),
    Step.ENTERED: frozenset({Step.ENTERED, Step.TAKEN, Step.LEFT, Step.FAILED}),
    Step.RETRYING: frozenset({Step.TYPED, Step.FAILED}),
    Step.TAKEN: frozenset(),
    Step.LEFT: frozenset(),
    Step.FAILED: frozenset(),
}


class IllegalStep(Exception):
    pass


@dataclass
class Typing:
    """An injection on its way into the pane."""

    injection: m.Injection
    started: float  # when the current wait began (it starts over for a slow agent)
    began: float  # when this typing was written: the starved wait counts from here
    text: str = ""  # the injection's text as typed (inert for a shell: see typed_form)
    attempts: int = 1
    enters: int = 0
    entered: float = 0.0
    boot: bool = False
    pasted: bool = False
    first_enter: float = 0.0
    timer: Any = None  # the next look's timer: one at a time, a newer look replaces it
    slow_poll: float = 0.0  # the last look's wait once the agent was found slow (0: not slow)
    rest_mark: Any = None  # the rest window of the wait in progress (the role's own is another)
    behind_since: float | None = None  # a write put off since then: output not fed yet
    step: Step = Step.TYPED
    path: list[Step] = field(default_factory=lambda: [Step.TYPED])  # every step taken

    def move(self, step: Step) -> None:
        """Go to ``step``; raise unless the table allows it."""
        if step not in ALLOWED[self.step]:
            raise IllegalStep(f"typing cannot go from {self.step} to {step}")
        self.step = step
        self.path.append(step)

    def summary(self) -> str:
        """How the text went in, for the injection's event."""
        how = "pasted (bracketed paste)" if self.pasted else "typed"
        return (f"{how}, Enter {self.first_enter:.2f}s after the text, "
                f"submitted after {counted(self.enters, 'enter')}")


@dataclass(frozen=True)
class Ending:
    """How a typing ended, for the role actor to report."""

    ok: bool
    detail: str
    submitted: bool = False  # its Enter went in: typed again it could run twice
    left_in_input: bool = False


class Typist:
    """Types the role's one injection in flight (``state.typing``) through
    its steps.  Holds nothing itself: an actor that replaces a crashed one
    makes a new typist on the same state."""

    def __init__(self, state: RoleState, now: Callable[[], float], timers: Any, me: Any,
                 report: Callable[[Any], None],
                 on_end: Callable[[Typing, Ending], None]) -> None:
        self.s = state
        self.now = now
        self.timers = timers
        self.me = me
        self.report = report
        self.on_end = on_end
        self._steps: dict[str, Callable[[Typing], None]] = {
            Step.TYPED: self._await_echo, Step.ENTERED: self._await_taken,
            Step.RETRYING: self._retype}

    # -- the actor's calls ---------------------------------------------

    def begin(self, injection: m.Injection, boot: bool = False, attempts: int = 1) -> None:
        """Type the text.  A retry, or a line typed in an earlier round, first
        looks whether the input holds it already (it showed late): typed
        again it would go in twice, so it only gets its Enter.  (A first
        typing does not look: what an input holds then is someone else's.)"""
        s = self.s
        text = typed_form(s.profile, briefs.one_line(injection.text))
        now = self.now()
        previous = s.typing
        s.typing = typing = Typing(injection, now, now, text, attempts=attempts, boot=boot)
        if previous is not None and previous.injection.id == injection.id:
            typing.path = [*previous.path, Step.TYPED]  # the retry's whole way
        again = attempts > 1 or injection.id in s.typed
        if again and self.shows_pending(text):
            log.info("%s: the text is already in its input; not typed again", s.spec.name)
        else:
            typing.pasted = self._type_text(text)
            s.typed.append(injection.id)
        self._next(typing, max(FAST_POLL, self._enter_floor()))

    def step(self, msg: m.InjectStep) -> None:
        """A step's timer came: take the step the table names, unless the
        message is for another process or typing (a stale one)."""
        s = self.s
        typing = s.typing
        if (msg.gen != s.gen or typing is None or typing.injection.id != msg.injection_id
                or msg.step != typing.step):
            return
        if s.status is RoleStatus.PAUSED:
            self.timers.after(PAUSED_POLL, self.me, msg)  # hold until resume
            return
        run = self._steps.get(msg.step)
        if run is not None:
            run(typing)

    def output_seen(self) -> None:
        """The agent drew something: the echo or the input's clearing may be
        on the screen now, a look sooner than the next timer's."""
        s = self.s
        typing = s.typing
        if typing is None or s.status is RoleStatus.PAUSED:
            return
        if typing.step is Step.TYPED and self.shows_pending(typing.text):
            self._await_echo(typing)  # the Enter now, or a timer for the quiet's end
        elif typing.step is Step.ENTERED and not self.shows_pending(typing.text):
            self._taken(typing)

    def abandon(self, detail: str, submitted: bool = False) -> None:
        """End the typing in flight from outside: the process exited or was
        stopped, or a crashed actor left it half done."""
        self._end(self.s.typing, Step.FAILED, Ending(False, detail, submitted=submitted))

    def release_cleared_input(self) -> None:
        """A line the agent did not take holds the role until the operator
        has sent or cleared it: once the input no longer shows it, the role
        takes lines again."""
        s = self.s
        left = s.left_in_input
        # Still unread in the terminal, the line is not on the screen yet.
        if (left is None or self.shows_pending(left)
                or (s.child is not None and s.child.unread_input() > 0)):
            return
        s.left_in_input = None
        if s.detail == LEFT_IN_INPUT:
            s.detail = ""

    def shows_pending(self, text: str) -> bool:
        """``text`` is on the screen in the agent's input, not sent yet."""
        s = self.s
        # Where the typed text ends, not the cursor: a line that fills its
        # row to the last column leaves the cursor on that column.
        lines, cursor = s.terminal.display(), s.terminal.typed_end
        text = briefs.one_line(text)
        return any(screenstatus.input_pending(lines, shown, s.profile.box_prompts, cursor=cursor)
                   for shown in dict.fromkeys((text, s.terminal.as_drawn(text))))

    # -- the steps -----------------------------------------------------

    def _type_text(self, text: str) -> bool:
        """Write the text (never an Enter); True when it went in as a bracketed paste."""
        data = briefs.one_line(text).encode()
        pasted = self.s.terminal.bracketed_paste
        if pasted:
            data = b"\x1b[200~" + data + b"\x1b[201~"
        self.s.child.write(data)
        if hopstamps.ON:
            hopstamps.mark("typed", self.s.spec.name)
        return pasted

    def _await_echo(self, typing: Typing) -> None:
        """Press Enter once the text shows and the pane is quiet.  An echo
        that never came is no proof the text was lost: the agent may be
        starved, or at work on it (on its way to a dialog, say), and a look
        at its state finds such an agent asleep often enough.  So, as for a
        second Enter, the text counts as not echoed only if the agent read it
        and was at rest over the wait's last REST_WINDOW (:meth:`_rest_at_end`);
        a line whose echo comes is seen before any window opens."""
        s = self.s
        now = self.now()
        shown = self.shows_pending(typing.text)
        if hopstamps.ON:
            hopstamps.mark("echo-shown" if shown else "echo-look", s.spec.name)
        due = self._enter_due(typing, now) if shown else 0.0
        if shown and (due <= TIMER_SLACK or now - typing.started >= ECHO_WAIT):
            if not self._behind(typing, now):
                self._press_enter(typing)
            return
        if s.child.stopped():
            # Stopped from outside (SIGSTOP, a debugger): the text waits in the
            # terminal's input queue, so the echo comes once it runs again.  (A
            # stopped agent wants no CPU: a window across the stop says nothing.)
            typing.started, typing.rest_mark = now, None
            self._slow_down(typing, ECHO_POLL)
        if shown:
            # The Enter is due once the pane has been quiet long enough.
            self._next(typing, max(due, QUIET_TICK))
            return
        verdict = self._rest_at_end(typing, now, typing.started, ECHO_WAIT, ECHO_POLL)
        if verdict is not None and self._may_type_again(typing, now, *verdict):
            self._retry_or_fail(typing, "the text did not appear on the agent's screen")

    def _may_type_again(self, typing: Typing, now: float, rested: bool, measured: bool) -> bool:
        """At the end of the echo wait, and again at the end of the pause
        before the text goes in again: whether it may go in again now.  An
        agent that has not read all that was typed, or was not at rest, may
        be at work on the text: typed again it could go in twice, or into the
        dialog it draws next; the whole wait again, up to STARVED_WAIT from
        the text.  Past that, a line still unread is left in the input, one
        never at rest fails, and a dialog on the screen is never typed into."""
        if self._slow(typing, lambda: not rested):
            if typing.step is Step.RETRYING:
                typing.move(Step.TYPED)  # something changed in the pause: its echo awaited again
            typing.started = now
            self._wait_again(typing, ECHO_POLL)
            return False
        if self.s.child.unread_input() > 0:
            # Unread through the whole starved wait: typed again, it would go
            # in twice the moment the agent reads.
            self._leave_in_input(typing, f"the agent has not read the text in "
                                         f"{STARVED_WAIT:g}s; not typed again")
            return False
        if not rested and measured:
            self._end(typing, Step.FAILED, Ending(
                False, f"the text did not appear, and the agent has not come to rest in "
                       f"{STARVED_WAIT:g}s; not typed again"))
            return False
        if self._dialog_up():
            # The text went somewhere and a dialog shows: typed again, it would answer it.
            self._end(typing, Step.FAILED, Ending(
                False, "the text did not appear, and a dialog is on the agent's screen; "
                       "not typed again"))
            return False
        return True

    def _enter_due(self, typing: Typing, now: float) -> float:
        """Seconds until the Enter may follow the shown text: the pane quiet
        for the profile's ``enter_quiet``, and its floor from the text passed."""
        return max(self.s.profile.enter_quiet - (now - self.s.last_output),
                   typing.began + self._enter_floor() - now)

    def _enter_floor(self) -> float:
        """The least time from the text to its Enter: the profile's, or more
        where this agent has lately needed a second Enter."""
        return max(self.s.profile.enter_delay, self.s.enter_floor)

    def _learn_pace(self, typing: Typing) -> None:
        """A line its first Enter did not submit raises the floor for the
        next; one it did brings a raised floor back down."""
        s = self.s
        if typing.enters > 1:
            s.enter_floor = min(ENTER_FLOOR_MAX, max(ENTER_FLOOR_STEP, 2 * self._enter_floor()))
            log.info("%s: its first Enter did not submit; the next lines' Enters wait %.2fs",
                     s.spec.name, s.enter_floor)
        elif s.enter_floor:
            lower = s.enter_floor * ENTER_FLOOR_EASE
            s.enter_floor = lower if lower > max(s.profile.enter_delay,
                                                 ENTER_FLOOR_STEP / 2) else 0.0

    def _slow(self, typing: Typing, busy: Callable[[], bool]) -> bool:
        """The agent has not read all that was typed, or is still at work on
        it (``busy``), and has not been waited on for that longer than
        STARVED_WAIT (one that never reads or never rests is hung, and its
        line fails loudly as any other)."""
        if self.now() - typing.began > STARVED_WAIT:
            return False
        return self.s.child.unread_input() > 0 or busy()

    def _press_enter(self, typing: Typing) -> None:
        typing.enters += 1
        typing.slow_poll = 0.0  # a new wait: looked at as closely as any
        typing.rest_mark = None  # and its rest measured over its own window's end
        typing.entered = self.now()
        if typing.enters == 1:
            typing.first_enter = typing.entered - typing.started
        typing.move(Step.ENTERED)
        self.s.child.write(b"\r")
        if hopstamps.ON:
            hopstamps.mark("enter", self.s.spec.name)
        self._next(typing, FAST_POLL)

    def _await_taken(self, typing: Typing) -> None:
        """Poll until the input box no longer holds the text (the Enter was taken).

        The agent's time to take the Enter counts from when it read it and
        came to rest: one the machine has not run since the Enter went in,
        or has not finished running, is slow, not deaf.  At rest is measured
        over the confirm window's last REST_WINDOW, as for the brief: a
        single look at its state finds a starved agent asleep often enough,
        and a second Enter it reads once it has drawn a dialog answers it.
        A line the first Enter submits is seen taken before any window.
        """
        if not self.shows_pending(typing.text):
            self._taken(typing)
            return
        now = self.now()
        verdict = self._rest_at_end(typing, now, typing.entered, CONFIRM_WINDOW, CONFIRM_POLL)
        if verdict is None:
            return
        rested, measured = verdict
        if self._slow(typing, lambda: not rested):
            typing.entered = now  # the whole window again once it has run
            self._wait_again(typing, CONFIRM_POLL)
        elif self.s.child.unread_input() > 0:
            # The Enter itself is still unread: a second one would be read
            # after it, by whatever the first one opens.
            self._leave_in_input(typing, f"the agent has not read the Enter in "
                                         f"{STARVED_WAIT:g}s; no second Enter", submitted=True)
        elif not rested and measured:
            # Never at rest: a second Enter would be read whenever it does,
            # by whatever it has drawn by then.
            self._leave_in_input(typing, f"the agent has not come to rest in {STARVED_WAIT:g}s "
                                         "after its Enter; no second Enter", submitted=True)
        elif self._dialog_up():
            # Whatever the first Enter did, a second one would answer the dialog.
            self._leave_in_input(typing, "a dialog came up before the Enter was seen taken; "
                                         "no second Enter", submitted=True)
        elif typing.enters < 2:
            if not self._behind(typing, now):
                self._press_enter(typing)  # the one second Enter
        else:
            self._leave_in_input(typing, "the agent did not take the Enter")

    def _rest_at_end(self, typing: Typing, now: float, since: float, wait: float,
                     poll: float) -> tuple[bool, bool] | None:
        """Whether the agent rested through the last REST_WINDOW of a wait
        that began at ``since`` and lasts ``wait`` (looked at every ``poll``),
        and whether that was measured; None, and the next look set, until
        the wait has run and the window has a verdict.  The window is opened
        by the first look in the wait's last REST_WINDOW, so a resting
        agent's verdict comes at the wait's end, as one look's did."""
        waited = now - since
        if waited < wait - REST_WINDOW - TIMER_SLACK:
            self._next(typing, self._poll(typing, waited, poll))
            return None
        rested, measured = self._rested(typing, now)
        if waited < wait - TIMER_SLACK or rested is None:
            self._next(typing, self._window_look(typing, now, since + wait,
                                                 self._poll(typing, waited, poll)))
            return None
        return rested, measured

    def _rested(self, typing: Typing, now: float) -> tuple[bool | None, bool]:
        """Whether the agent rested through the window the typing keeps (None:
        not run yet; one is opened on the first look), and whether that was
        measured.  Not measured (a remote seat, a system without the
        figures): as one look at its state says, as before the measure."""
        rested, typing.rest_mark = rolescreen.rest_window(self.s, now, typing.rest_mark)
        if rested and typing.rest_mark is None:
            return not self.s.child.running(), False
        return rested, True

    @staticmethod
    def _window_look(typing: Typing, now: float, ends: float, poll: float) -> float:
        """The next look near a wait's end (``ends``): its usual poll, and no
        later than that end (or, if later, the end of the rest window open)."""
        if typing.rest_mark is not None:
            ends = max(typing.rest_mark[0] + REST_WINDOW, ends)
        return min(poll, max(ends - now, QUIET_TICK))

    def _wait_again(self, typing: Typing, poll: float) -> None:
        """The agent was slow (the caller has moved the wait's start to now):
        the whole wait again, its rest measured over that wait's end, its
        looks backing off from ``poll``."""
        typing.rest_mark = None
        self._slow_down(typing, poll)
        self._next(typing, self._poll(typing, 0.0, poll))

    def _taken(self, typing: Typing) -> None:
        if hopstamps.ON:
            hopstamps.mark("taken", self.s.spec.name)
        self._learn_pace(typing)
        self._end(typing, Step.TAKEN, Ending(True, typing.summary()))

    def _retype(self, typing: Typing) -> None:
        """Never type the same text twice: the agent stopped with it still
        unread is waited for, and text that reached its input after all is
        not typed again (:meth:`begin` looks first).  What allowed the text
        in again is asked again as the pause ends (at rest over its last
        REST_WINDOW, nothing unread, no dialog): an agent asleep at the end
        of the echo wait and at work since may be on its way to a dialog."""
        if self.s.child.stopped():
            typing.started, typing.rest_mark = self.now(), None
            typing.move(Step.TYPED)
            self._await_echo(typing)
            return
        now = self.now()
        verdict = self._rest_at_end(typing, now, typing.started, RETRY_DELAY, RETRY_DELAY)
        if (verdict is not None and self._may_type_again(typing, now, *verdict)
                and not self._behind(typing, now)):
            self.begin(typing.injection, typing.boot, typing.attempts + 1)

    def _behind(self, typing: Typing, now: float) -> bool:
        """Output the agent wrote is not on its screen yet (see
        ``rolescreen.behind``): the screen that allowed this write may be
        stale by a dialog just drawn, so the step looks again once it is
        fed (the feed's notice, or BEHIND_POLL), up to BEHIND_WAIT of a
        pane that never stops printing."""
        if not rolescreen.behind(self.s):
            typing.behind_since = None
            return False
        if typing.behind_since is None:
            typing.behind_since = now
        if now - typing.behind_since >= BEHIND_WAIT:
            return False
        self._next(typing, BEHIND_POLL)
        return True

    def _dialog_up(self) -> bool:
        """The agent's screen shows a question, a menu or a dialog."""
        return rolescreen.screen_status(self.s, self.now()) is RoleStatus.WAITING

    def _leave_in_input(self, typing: Typing, why: str, submitted: bool = False) -> None:
        """Give up on a line that is (or will be) in the agent's input: the
        role takes no line until it has been sent or cleared."""
        self.s.left_in_input = typing.text
        self.s.detail = LEFT_IN_INPUT
        self._end(typing, Step.LEFT, Ending(False, why, submitted=submitted,
                                            left_in_input=True))

    def _retry_or_fail(self, typing: Typing, why: str) -> None:
        limit = BOOT_RETRIES + 1 if typing.boot else 2
        if typing.attempts < limit:
            self.report(m.InjectionOutcome(self.s.spec.name, typing.injection, False,
                                           f"{why}; retrying in {RETRY_DELAY:g}s", final=False))
            typing.move(Step.RETRYING)
            # A pause looked at only as it ends: first to open its rest window.
            typing.started, typing.slow_poll, typing.rest_mark = self.now(), 0.0, None
            self._next(typing, RETRY_DELAY - REST_WINDOW)
            return
        self._end(typing, Step.FAILED, Ending(False, f"{why} after {typing.attempts} attempts"))

    @staticmethod
    def _slow_down(typing: Typing, poll: float) -> None:
        """The agent was found slow (starved, busy or stopped): from now on the
        step's looks back off from ``poll``."""
        typing.slow_poll = typing.slow_poll or poll

    @staticmethod
    def _poll(typing: Typing, waited: float, then: float) -> float:
        """The wait before the next look: quick while the answer usually
        comes, then the step's own poll, doubling while the agent is slow."""
        if typing.slow_poll:
            typing.slow_poll = min(2 * typing.slow_poll, SLOW_POLL_MAX)
            return typing.slow_poll
        return FAST_POLL if waited < FAST_FOR else then

    def _next(self, typing: Typing, delay: float) -> None:
        """The current step looks again after ``delay`` (and not at the time a
        look before this one asked for)."""
        if typing.timer is not None:
            typing.timer.cancel()
        typing.timer = self.timers.after(delay, self.me,
                                         m.InjectStep(self.s.gen, typing.injection.id,
                                                      typing.step))

    def _end(self, typing: Typing, step: Step, ending: Ending) -> None:
        if typing.timer is not None:
            typing.timer.cancel()  # no look after the end
        typing.move(step)
        self.s.typing = None
        self.on_end(typing, ending)
