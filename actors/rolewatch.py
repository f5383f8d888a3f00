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

While the operator types at the role, each classification finds the line
being typed in its preview, and publishing it wakes the core, the UI
actor and the deck beside the next key's echo.  A view that differs from
the one published only in its preview waits for a pause in the keys
(PREVIEW_PAUSE without one); anything else in it (status, readiness,
detail, a stall) goes at once and takes the preview with it.  What is
classified, and when, does not change: only the card's text waits.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from choragos.actors import messages as m
from choragos.actors import roleio, rolescreen
from choragos.roles.rolestatus import RoleStatus

if TYPE_CHECKING:
    from choragos.actors.role import RoleState

CLASSIFY_DELAY = 0.15
# Keys that stop for this long let a preview held for them out; a preview
# is held at most twice this after the last key.
PREVIEW_PAUSE = 0.25
HELD_STILL = (RoleStatus.PAUSED, RoleStatus.LIMITED)  # quiet on purpose: never a stall


@dataclass(frozen=True)
class PreviewCheck:
    """Publish the view if the keys that held its preview back have paused."""


class Watch:
    def __init__(self, state: RoleState, now: Callable[[], float], timers: Any, me: Any,
                 refresh: Callable[[], None], publish: Callable[[], None]) -> None:
        self.s = state
        self.now = now
        self.timers = timers
        self.me = me
        self.refresh = refresh
        self.publish = publish

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
        self.s.classify_pending = False
        if msg.gen == self.s.gen:
            self.refresh()
            self.arm_quiet_check(msg.gen)

    def holds_preview(self, view: m.RoleView) -> bool:
        """True when ``view`` (not the one last published) waits: only its
        preview is new, and keys were typed since the last publication (or
        a check is on its way).  The check publishes it once no key came
        for PREVIEW_PAUSE."""
        s = self.s
        last = s.last_view
        if last is None or replace(last, preview=view.preview) != view:
            s.keys_seen = s.keys.typed
            return False  # something besides the preview: at once, the preview with it
        if s.preview_held:
            return True  # the check on its way publishes it
        typed = s.keys.typed
        if typed == s.keys_seen:
            return False
        s.keys_seen, s.preview_held = typed, True
        self.timers.after(PREVIEW_PAUSE, self.me, PreviewCheck())
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

    def preview_check(self) -> None:
        """The view held for the keys' preview: published if they paused (else held again)."""
        self.s.preview_held = False
        self.publish()

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
