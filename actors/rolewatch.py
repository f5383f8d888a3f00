"""A role's timed looks at its screen: when to read it again, and a stall.

New output is classified CLASSIFY_DELAY after its notice (one
classification on its way at a time); a role working with no busy marker is
read again once output has been quiet for QUIET_IDLE (an unknown TUI then
counts as idle), and a waiting role held on a screen nothing matches once
that has lasted UNMATCHED_SETTLE; and a role whose screen has been still for its
``stall_after`` is marked stalled, unless it is held still on purpose
(paused or limited).  One timer of each kind at a time, each told through
the session's timers on the role actor's clock; what a look finds is the
actor's to publish.

While the operator types at the role, every classification found the line
being typed in its preview and published it (the core, the UI actor and
the deck woke for it), and every echo after one sent the actor a notice
(the actor and the timers woke beside the client's read of that echo).
Now a classification that finds keys typed since the last one holds a
view new only in its preview and arms the next classification itself, so
the reader sends no notice meanwhile; the first classification after a
pause in the keys publishes it.  A view with anything else new (status,
readiness, detail, a stall) goes at once, the preview with it; output is
still classified within CLASSIFY_DELAY of its coming, as before.

:class:`Boot` holds the boot's looks: the role actor looks first
BOOT_SETTLE after the spawn; the screen's reads (:mod:`actors.rolescreen`)
say whether the brief may go in now and when to look again.  A role still
unbriefed once the boot's longest wait has passed (a program that draws
nothing, one that never stops printing, one that never rests) is said so
once, and its status follows its screen from then on rather than showing
``booting`` for good; the brief still goes in if it comes to rest at a
prompt.  A screen only new output can change (blank, or a dialog) is not
looked at again until it draws: the next output arms the check.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from choragos.actors import messages as m
from choragos.actors import roleio, rolescreen
from choragos.roles import conversations
from choragos.roles.rolestatus import LIVE_STATES, NOT_BRIEFED, SCREEN_STATES, RoleStatus

if TYPE_CHECKING:
    from choragos.actors.role import RoleState
    from choragos.actors.typist import Ending, Typist

CLASSIFY_DELAY = 0.15
BOOT_SETTLE = 1.0
HELD_STILL = (RoleStatus.PAUSED, RoleStatus.LIMITED)  # quiet on purpose: never a stall


class Watch:
    def __init__(self, state: RoleState, now: Callable[[], float], timers: Any, me: Any,
                 refresh: Callable[[], None], publish: Callable[[], None]) -> None:
        self.s = state
        self.now = now
        self.timers = timers
        self.me = me
        self.refresh = refresh
        self.publish = publish
        self.keys_seen = state.keys.typed  # the operator's keys at the last classification
        self.keyed = False  # the classification under way came after keys: it may hold
        self.held = False  # it held a view for its preview

    def output_seen(self, msg: roleio.OutputSeen) -> None:
        """The reader fed new output: classify it soon, and it is not a stall."""
        self.s.output_noticed = False  # first: output fed from now on sends a new notice
        if msg.gen != self.s.gen:
            return
        self.s.stalled = False  # published with the next classification
        self.arm_stall_check(msg.gen)
        if not self.s.classify_pending:
            self.s.classify_pending = True
            self.timers.after(CLASSIFY_DELAY, self.me, m.Classify(msg.gen))

    def classify(self, msg: m.Classify) -> None:
        s = self.s
        s.classify_pending = False
        if msg.gen != s.gen:
            return
        typed = s.keys.typed
        self.keyed, self.keys_seen, self.held = typed != self.keys_seen, typed, False
        try:
            self.refresh()
        finally:
            self.keyed = False
        self.arm_quiet_check(msg.gen)
        if self.held and not s.classify_pending:
            # Keys still coming: look again then, in place of the notice the
            # reader sends none of while this is pending.
            s.classify_pending = True
            self.timers.after(CLASSIFY_DELAY, self.me, m.Classify(msg.gen))

    def holds_preview(self, view: m.RoleView) -> bool:
        """True when ``view`` (not the one last published) waits: the
        classification under way came after keys, and only its preview is
        new.  The classification then arms the next one."""
        last = self.s.last_view
        if not self.keyed or last is None or replace(last, preview=view.preview) != view:
            return False
        self.held = True
        return True

    def arm_quiet_check(self, gen: int) -> None:
        """Re-read the screen when a read with no new output may say more
        (see :func:`rolescreen.recheck_due`)."""
        s = self.s
        due = rolescreen.recheck_due(s)
        if due is not None and not s.quiet_check:
            s.quiet_check = True
            wait = max(0.05, due - self.now() + 0.05)
            self.timers.after(wait, self.me, m.QuietCheck(gen))

    def quiet_check(self, msg: m.QuietCheck) -> None:
        self.s.quiet_check = False
        if msg.gen == self.s.gen:
            self.refresh()
            self.arm_quiet_check(msg.gen)

    def arm_stall_check(self, gen: int) -> None:
        """One timer at a time, due when the screen would have been quiet long enough."""
        s = self.s
        if s.spec.stall_after and not s.stall_check:
            s.stall_check = True
            wait = s.last_output + s.spec.stall_after - self.now()
            self.timers.after(max(0.05, wait), self.me, m.StallCheck(gen))

    def stall_check(self, msg: m.StallCheck) -> None:
        s = self.s
        s.stall_check = False
        if not s.spec.stall_after or s.status in (RoleStatus.EXITED, RoleStatus.FAILED):
            return
        if msg.gen != s.gen:  # armed for a process since replaced: watch the new one
            self.arm_stall_check(s.gen)
            return
        quiet = self.now() - s.last_output
        if s.status in HELD_STILL or quiet < s.spec.stall_after:
            s.stall_check = True  # a paused or limited role is held, not stalled
            wait = s.spec.stall_after - quiet if quiet < s.spec.stall_after else 1.0
            self.timers.after(max(0.05, wait), self.me, m.StallCheck(msg.gen))
            return
        s.stalled = True
        self.publish()


class Boot:
    """A role's looks at its screen until its brief is typed (see the top)."""

    def __init__(self, state: RoleState, now: Callable[[], float], timers: Any, me: Any,
                 typist: Typist, tell_core: Callable[[Any], None],
                 set_status: Callable[[RoleStatus], None],
                 screen_status: Callable[[], RoleStatus],
                 publish: Callable[[], None]) -> None:
        self.s = state
        self.now = now
        self.timers = timers
        self.me = me
        self.typist = typist
        self.tell_core = tell_core
        self.set_status = set_status
        self.screen_status = screen_status
        self.publish = publish
        self._pending: Any = None  # the boot check on its way (a timer), if any
        self._due = 0.0  # when it looks

    def arm(self, delay: float = BOOT_SETTLE) -> None:
        """One boot check on its way: a parked one is unparked."""
        self.s.boot_parked = False
        self._look_in(delay, self.s.gen)

    def _look_in(self, delay: float, gen: int) -> None:
        """The boot check on its way, the only one: one still on the timer is cancelled."""
        if self._pending is not None:
            self._pending.cancel()
        self._due = self.now() + delay
        self._pending = self.timers.after(delay, self.me, m.BootCheck(gen))

    def output_seen(self) -> None:
        """The screen may have changed: a parked check looks again, and so
        does one waiting out a still screen (a blank one waits for the
        longest boot wait): an agent that was loading may now be drawn, and
        is briefed once it rests, not when that wait ends."""
        s = self.s
        if s.booted:
            return
        if s.boot_parked or rolescreen.boot_look_late(s, self._due, self.now()):
            self.arm(rolescreen.BOOT_POLL)

    def check(self, msg: m.BootCheck) -> None:
        """Brief the role if its screen allows, else say so once it is
        overdue, and look again when something can have changed."""
        s = self.s
        if msg.gen != s.gen or s.booted or s.typing is not None:
            return
        if s.status not in (RoleStatus.BOOTING, *SCREEN_STATES):
            return  # paused or gone; resume/respawn re-arms the check
        if rolescreen.boot_ready(s, self.now()):
            s.boot_attempts += 1
            self.typist.begin(rolescreen.boot_injection(s), boot=True)
            return
        held = rolescreen.boot_held(s, self.now())
        if held is not None:  # said once: its card, the core (event, hook)
            self.tell_core(held)
            if s.status is RoleStatus.BOOTING:
                # Not "booting" for good: from now on its status says what
                # its screen does, and the brief still waits to be typed.
                self.set_status(self.screen_status())
            self.publish()
        delay = rolescreen.boot_recheck(s, self.now())
        if delay is None:
            s.boot_parked = True  # only new output can change its screen
        else:
            self._look_in(delay, msg.gen)

    def ended(self, ending: Ending) -> None:
        """The brief's typing ended: the role is booted, whatever came of it."""
        s = self.s
        s.booted = True
        s.boot_held_said = False
        if s.detail.startswith(NOT_BRIEFED):
            s.detail = ""  # the word of a held brief goes with it
        if not ending.ok and not ending.left_in_input and s.status in LIVE_STATES:
            # Logged and alarmed by the core, and said on its card (and in
            # status) for as long as this process runs.  (A line left in its
            # input says so itself; an exit says why it ended.)
            s.detail = f"{NOT_BRIEFED}: {ending.detail}"
        if ending.ok and s.conversation:
            conversations.mark_used(s.workdir, s.spec.name, s.conversation)
        if s.status is RoleStatus.BOOTING:
            self.set_status(self.screen_status())
