"""What a role's screen and state say, read at a given time: its status,
whether it may be briefed, whether a line may be typed into it, and the
view it publishes.

Reads of a :class:`~choragos.actors.role.RoleState` (its emulated
terminal, its profile, when output last came) at ``now``: the role actor
passes its clock's time, a test any time it likes.  The one thing a read
keeps is since when the screen has matched nothing (``unmatched_since``):
such a screen may be a frame half drawn, so it does not end a dialog state
until it has stayed so for UNMATCHED_SETTLE.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from choragos.actors import messages as m
from choragos.agents import screenstatus
from choragos.roles.rolestatus import RoleStatus

if TYPE_CHECKING:
    from choragos.actors.role import RoleState

QUIET_IDLE = 3.0  # seconds without output after which an unmarked screen counts as idle
# Seconds a screen nothing on it matches must stay so before it ends a
# dialog state.  A PTY read can end mid-frame: Gemini CLI redraws its trust
# dialog as it starts, and on a loaded machine a read ended right after it
# erased the last drawing, a blank screen for 67 ms, which its profile reads
# as working.  A dialog really gone leaves at most this much later.
UNMATCHED_SETTLE = 1.0
# Boot timings: floors, a profile may ask for more (``boot_quiet``).
BOOT_QUIET = 1.2
BOOT_MAX_WAIT = 20.0
BOOT_POLL = 0.1  # the boot check looks again this often (or a multiple of it)


def drawn(lines: list[str]) -> bool:
    """The program has drawn something: a blank screen is never idle nor briefed."""
    return any(line.strip() for line in lines)


def screen_status(s: RoleState, now: float) -> RoleStatus:
    """Working, waiting or idle, as the screen shows it; a role waiting
    stays so on a screen nothing on it matches until UNMATCHED_SETTLE has
    passed since the first such read."""
    lines = s.terminal.display()
    said = screenstatus.matched_status(lines, s.profile, s.spec.input_prompts,
                                       cursor=s.terminal.cursor)
    if said is not None:
        s.unmatched_since = None
        status = RoleStatus(said)
    else:
        if s.unmatched_since is None:
            s.unmatched_since = now
        if s.status is RoleStatus.WAITING and now - s.unmatched_since < UNMATCHED_SETTLE:
            return RoleStatus.WAITING  # maybe the dialog half redrawn: never typed into
        status = RoleStatus(screenstatus.unmatched_reading(lines, s.profile))
    if status is RoleStatus.WORKING and _quiet_without_busy_marker(s, lines, now):
        # An unknown TUI whose prompt we do not recognise: nothing drawn for a
        # while and nothing that says "busy" means it waits for its next input.
        return RoleStatus.IDLE
    return status


def _quiet_without_busy_marker(s: RoleState, lines: list[str], now: float) -> bool:
    if now - s.last_output < QUIET_IDLE or not drawn(lines):
        return False
    return not screenstatus.has_marker(lines, s.profile.busy_markers)


def recheck_due(s: RoleState) -> float | None:
    """When the screen must be read again with no new output, if ever: a
    role working with no busy marker may count as idle after QUIET_IDLE, a
    waiting role held on a screen nothing matches leaves it after
    UNMATCHED_SETTLE."""
    if s.status is RoleStatus.WORKING:
        return s.last_output + QUIET_IDLE
    if s.status is RoleStatus.WAITING and s.unmatched_since is not None:
        return s.unmatched_since + UNMATCHED_SETTLE
    return None


def boot_ready(s: RoleState, now: float) -> bool:
    """Ready to brief: output quiet for 1.2 s, and no dialog on screen (the
    role actor looks first 1 s after the spawn).

    An agent whose screen never looks idle (an unknown TUI) is briefed
    anyway after BOOT_MAX_WAIT; one showing a dialog is never typed into.
    """
    if now - s.last_output < max(BOOT_QUIET, s.profile.boot_quiet):
        return False
    lines = s.terminal.display()
    screen = screen_status(s, now)
    if screen is RoleStatus.WAITING or not drawn(lines):
        return False
    if now - s.spawned >= BOOT_MAX_WAIT:
        return True
    # Some CLIs draw an idle-looking prompt before their startup dialog.
    markers = s.profile.boot_markers
    return screen is RoleStatus.IDLE and (not markers
                                          or screenstatus.has_marker(lines, markers))


def boot_recheck(s: RoleState, now: float) -> float:
    """When a role not ready to brief is looked at again: the first BOOT_POLL
    tick at which its output can have been quiet long enough.  Until then
    :func:`boot_ready` is False whatever the screen shows, so an agent that
    never stops printing is looked at once per quiet wait, not ten times a
    second, and a quiet one is briefed on the same tick as before."""
    short = s.last_output + max(BOOT_QUIET, s.profile.boot_quiet) - now
    return BOOT_POLL * max(1, math.ceil(short / BOOT_POLL - 1e-6))


def ready(s: RoleState, now: float) -> bool:
    """Only an idle agent is typed into: keys typed into a dialog answer it,
    and a line typed after one it did not take would join it.  (A pure
    question: whoever reads the screen first releases a cleared input.)"""
    return (s.booted and s.typing is None and s.status is RoleStatus.IDLE
            and now >= s.settle_until
            and s.left_in_input is None)


def view(s: RoleState, now: float) -> m.RoleView:
    """What the role publishes: its status, readiness, preview and facts."""
    lines = s.terminal.display()
    preview = screenstatus.activity_preview(lines, s.profile, s.spec.chrome_markers)
    return m.RoleView(
        name=s.spec.name, status=s.status,
        pid=s.child.pid if s.child and s.status not in
        (RoleStatus.EXITED, RoleStatus.FAILED) else None,
        restarts=s.restarts_total, budget_used=s.restarts_used, ready=ready(s, now),
        detail=s.detail,
        preview=tuple(preview), exit=s.exit.describe() if s.exit else "",
        stalled=s.stalled, profile=s.profile.name,
        held=s.left_in_input is not None, limited_until=s.limited_until)
