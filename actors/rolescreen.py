"""What a role's screen and state say, read at a given time: its status,
whether it may be briefed, whether a line may be typed into it, and the
view it publishes.

Reads of a :class:`~choragos.actors.role.RoleState` (its emulated
terminal, its profile, when output last came) at ``now``: the role actor
passes its clock's time, a test any time it likes.  The one thing a read
keeps is since when the screen has matched nothing (``unmatched_since``):
such a screen may be a frame half drawn, so it does not end a dialog state
until it has stayed so for UNMATCHED_SETTLE; the rest checks (the boot's,
and the quiet-means-idle one after it) also keep the reading that opened
their rest window (``rest_mark``), when one last found the agent wanting the
CPU (``boot_busy_at``), and, until new output, that it rested
(``rested_at``) or since when it has not (``busy_since``, ``busy_held``).
"""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING

from choragos.actors import messages as m
from choragos.agents import screenstatus
from choragos.roles.rolestatus import NOT_BRIEFED, RoleStatus

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
# At rest: over the last REST_WINDOW seconds of its quiet wait, the agent's
# threads wanted a CPU (ran, or waited on a run queue for one) for less than
# AT_REST of the time.  Starved or at work, an agent wants it all the time
# (1.0 and more); the real CLIs at rest want 0.01-0.2 of it, beside CPU
# burners too (docs/agents.md has the figures).
REST_WINDOW = 0.6
AT_REST = 0.5
# A screen read idle on quiet alone whose agent has kept wanting the CPU this
# long past its quiet wait is said once (its card; the core, if lines wait).
BUSY_HOLD = 20.0
# The role's quiet check looks this long after the time it is due
# (actors/rolewatch.py): a window opened that much early ends on the look at
# the quiet wait's end, not one look later.
LOOK_LAG = 0.05
# Output the agent wrote that its screen does not show yet puts a write into
# it off (see :func:`behind`): looked at again every BEHIND_POLL (its feed's
# notice usually comes first), for up to BEHIND_WAIT, past which a pane that
# never stops printing is typed into as before.
BEHIND_POLL = 0.02
BEHIND_WAIT = 1.0
Mark = tuple[float, int]  # a rest window's opening: (when, the CPU its session had wanted)
BUSY_HELD = (f"quiet, but still busy {BUSY_HOLD:g}s on (at work, starved of CPU, or "
             "stopped): nothing is typed into it until it rests")

log = logging.getLogger(__name__)
_unmeasured_said = False


def drawn(lines: list[str]) -> bool:
    """The program has drawn something: a blank screen is never idle nor briefed."""
    return any(line.strip() for line in lines)


def screen_status(s: RoleState, now: float) -> RoleStatus:
    """Working, waiting or idle, as the screen shows it; a role waiting
    stays so on a screen nothing on it matches until UNMATCHED_SETTLE has
    passed since the first such read."""
    lines = s.terminal.display()
    if s.busy_since is not None and s.last_output > s.busy_since:
        _end_hold(s)  # it drew something: its quiet is over
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
    if status is RoleStatus.WORKING and _quiet_idle(s, lines, now):
        # An unknown TUI whose prompt we do not recognise: nothing drawn for a
        # while and nothing that says "busy" means it waits for its next input.
        return RoleStatus.IDLE
    return status


def _quiet_idle(s: RoleState, lines: list[str], now: float) -> bool:
    """Quiet for QUIET_IDLE with no busy marker drawn, and, once briefed,
    at rest over the last REST_WINDOW of that quiet: a program starved on
    its way from an idle-looking screen to a dialog is quiet too, and a
    line typed then would be read by the dialog.  The window is opened by
    a look just over REST_WINDOW before the quiet wait ends (see
    :func:`recheck_due`), so a resting agent is read idle when it always
    was.  (Before its brief the boot check measures, on its own window.)"""
    quiet = now - s.last_output
    if (quiet < QUIET_IDLE - (REST_WINDOW + LOOK_LAG if s.booted else 0.0)
            or not _idle_blank(s, lines)
            or screenstatus.has_marker(lines, s.profile.busy_markers)):
        return False
    if not s.booted:
        return quiet >= QUIET_IDLE
    if quiet < QUIET_IDLE:
        if not _window_open(s) and not _known_rested(s) and _open_window(s, now) is None:
            s.rested_at = now  # not measured here: the quiet screen decides alone
        return False
    return _rested(s, now)


def _idle_blank(s: RoleState, lines: list[str]) -> bool:
    """Whether the screen, quiet, may read idle: a drawn one, or a blank one
    that was never briefed.  Briefed, a blank screen is an agent between two
    drawings (idle, it would be typed into); unbriefed, it is a program that
    draws nothing (a plain ``cat``), shown idle once quiet, yet never
    briefed nor given a line, since it is not ready (see :func:`ready`)."""
    return drawn(lines) or not s.booted


def _known_rested(s: RoleState) -> bool:
    return s.rested_at is not None and s.rested_at >= s.last_output


def _rested(s: RoleState, now: float) -> bool:
    """At rest since its last output: measured once, the verdict holds until
    it draws again (the screen is read again on every look and every line
    offered, and a second reading so soon would have no window)."""
    if _known_rested(s):
        return True
    if at_rest(s, now):
        s.rested_at = now
        _end_hold(s)
        return True
    if s.busy_since is None:
        s.busy_since = now
    if not s.busy_held and now - s.busy_since >= BUSY_HOLD:
        s.busy_held, s.detail = True, BUSY_HELD  # said once: its card, the core's hook
    return False


def _end_hold(s: RoleState) -> None:
    """It drew something or rested: the hold is over, and so is its word."""
    if s.busy_held and s.detail == BUSY_HELD:
        s.detail = ""
    s.busy_since, s.busy_held = None, False


def recheck_due(s: RoleState) -> float | None:
    """When the screen must be read again with no new output, if ever: a
    role working on a drawn screen with no busy marker may count as idle
    after QUIET_IDLE (looked at REST_WINDOW before too, to open the window
    that tells it at rest, then at the end of each window until it rests),
    a waiting role held on a screen nothing matches leaves it after
    UNMATCHED_SETTLE."""
    if s.status is RoleStatus.WORKING:
        lines = s.terminal.display()
        if (not _idle_blank(s, lines)
                or screenstatus.has_marker(lines, s.profile.busy_markers)):
            return None  # nothing but new output changes what it reads (and that is read)
        due = s.last_output + QUIET_IDLE
        if not s.booted or _known_rested(s):
            return due
        if _window_open(s):
            return max(due, s.rest_mark[0] + REST_WINDOW)
        return max(due - REST_WINDOW - LOOK_LAG,
                   s.boot_busy_at + REST_WINDOW)  # (stopped: no window)
    if s.status is RoleStatus.WAITING and s.unmatched_since is not None:
        return s.unmatched_since + UNMATCHED_SETTLE
    return None


def boot_ready(s: RoleState, now: float) -> bool:
    """Ready to brief: output quiet for 1.2 s, no dialog on screen, and the
    agent at rest, not merely quiet (the role actor looks first 1 s after
    the spawn).

    Quiet output alone does not tell an idle agent from one the machine
    starves of CPU: Gemini CLI draws an idle-looking prompt a moment before
    its folder-trust dialog, and starved in between it would read the brief
    as that dialog's answer.  So the last REST_WINDOW of the quiet wait is
    measured (:func:`at_rest`), and an agent found wanting the CPU is
    measured again over the next window until it rests.

    An agent whose screen never looks idle (an unknown TUI) is briefed
    anyway after BOOT_MAX_WAIT, but only at rest; one showing a dialog is
    never typed into.
    """
    quiet = max(BOOT_QUIET, s.profile.boot_quiet)
    if now - s.last_output < quiet:
        if now - s.last_output >= quiet - REST_WINDOW and not _window_open(s):
            _open_window(s, now)
        return False
    lines = s.terminal.display()
    screen = screen_status(s, now)
    if screen is RoleStatus.WAITING or not drawn(lines):
        return False
    # Some CLIs draw an idle-looking prompt before their startup dialog.
    markers = s.profile.boot_markers
    if now - s.spawned < BOOT_MAX_WAIT and not (
            screen is RoleStatus.IDLE
            and (not markers or screenstatus.has_marker(lines, markers))):
        return False
    # Asked last: they read /proc and the PTY.  Output not fed yet is read
    # and the check armed again by its notice (see RoleWatch.output_seen).
    return at_rest(s, now) and not behind(s)


def at_rest(s: RoleState, now: float) -> bool:
    """The agent's session wanted a CPU for less than AT_REST of the rest
    window that ends now (see :mod:`choragos.terminal.runqueue`).  A resting
    agent wakes for its timers and, on a busy machine, waits a little on the
    run queue each time; a starved or working one wants the CPU throughout.
    A stopped one (SIGSTOP) wants nothing but reads nothing either, so it is
    not at rest.  No window open yet, or one shorter than REST_WINDOW: one
    is opened (or kept), and the answer is no for now.

    Not measured, so at rest (briefed on quiet alone, as the screen says):
    a remote seat (its agent runs on the other machine; the local process
    is the ssh client), and a system without per-thread scheduler
    statistics (macOS, a kernel built without them), said once in the log.
    """
    verdict, s.rest_mark = rest_window(s, now, s.rest_mark if _window_open(s) else None)
    if verdict is False:
        s.boot_busy_at = now
    return bool(verdict)


def rest_window(s: RoleState, now: float, mark: Mark | None) -> tuple[bool | None, Mark | None]:
    """The measure of :func:`at_rest` over a window its caller keeps
    (``mark``, None: none open): True at rest through it (or not measured),
    False wanting the CPU (or stopped), None no verdict yet (a window was
    opened now, or the one open is shorter than REST_WINDOW); and the
    window to keep, a new one from now once measured.  The typist keeps its
    own for a second Enter, so the quiet check's window (``rest_mark``) and
    its verdicts are never another's."""
    if s.seat is not None or s.child is None:
        return True, None
    if s.child.stopped():
        return False, None
    if mark is not None and now - mark[0] < REST_WINDOW - 1e-6:
        return None, mark
    wanted = _wanted(s)
    if wanted is None:
        return True, None
    if mark is None:
        return None, (now, wanted)
    return (wanted - mark[1]) / 1e9 < AT_REST * (now - mark[0]), (now, wanted)  # the share


def _window_open(s: RoleState) -> bool:
    return s.rest_mark is not None and s.rest_mark[0] >= s.last_output


def _open_window(s: RoleState, now: float) -> int | None:
    """Read what the agent's session has wanted of the CPU so far, and open
    a rest window there; None (and no window) when it cannot be measured."""
    wanted = _wanted(s)
    s.rest_mark = None if wanted is None else (now, wanted)
    return wanted


def _wanted(s: RoleState) -> int | None:
    """What the agent's session has wanted of the CPU so far (ns); None when
    it cannot be measured (a system without the figures said once)."""
    global _unmeasured_said
    wanted = None if s.seat is not None or s.child is None else s.child.wanted_ns()
    if wanted is None and s.seat is None and s.child is not None and not _unmeasured_said \
            and not _kept_here():
        _unmeasured_said = True
        log.info("no per-thread scheduler statistics here: a role is briefed, and given "
                 "lines, once its screen is quiet, without knowing that its agent is at rest")
    return wanted


def _kept_here() -> bool:
    """Whether the system keeps per-thread scheduler figures: an agent's
    session that exited between two readings leaves none to read either,
    and must not be taken for a system that keeps none."""
    from choragos.terminal import runqueue  # already loaded by the child's reading

    return runqueue.kept_here()


def boot_overdue(s: RoleState, now: float) -> bool:
    """BOOT_MAX_WAIT has passed since the spawn: a role still unbriefed is
    said so, and its status follows its screen from then on."""
    return now - s.spawned >= BOOT_MAX_WAIT


def unbriefed_why(s: RoleState, now: float) -> str | None:
    """Why a role past BOOT_MAX_WAIT is still not briefed, in words for its
    card; None while a dialog holds it (that is said as *waiting*)."""
    if s.status is RoleStatus.WAITING:
        return None
    quiet = max(BOOT_QUIET, s.profile.boot_quiet)
    if s.boot_busy_at == now:  # the boot check measured it just now
        return (f"still busy {BOOT_MAX_WAIT:g}s after its start (at work, starved of CPU, "
                "or stopped); briefed once it rests")
    if now - s.last_output < quiet:
        return (f"its output has not paused for {quiet:g}s in the {BOOT_MAX_WAIT:g}s since "
                "its start; briefed once it does")
    if not drawn(s.terminal.display()):
        return (f"it has drawn nothing in the {BOOT_MAX_WAIT:g}s since its start (a program "
                "with no prompt?); briefed once it draws something and rests")
    return None


def boot_injection(s: RoleState) -> m.Injection:
    """The role's brief as the typist takes it."""
    return m.Injection(id=0, role=s.spec.name, text=s.boot_text, kind="boot")


def boot_held(s: RoleState, now: float) -> m.InjectionOutcome | None:
    """Once, for a role past BOOT_MAX_WAIT and still never briefed: one that
    keeps wanting the CPU (it may be on its way to draw a dialog the brief
    would answer), whose output never pauses, or that has drawn nothing
    (a program with no prompt, or still fetching itself).  Its card's
    detail is set, and the outcome the core turns into an event, a warning
    and the input hook."""
    if s.boot_held_said or not boot_overdue(s, now):
        return None
    why = unbriefed_why(s, now)
    if why is None:
        return None
    s.boot_held_said = True
    s.detail = f"{NOT_BRIEFED}: {why}"
    return m.InjectionOutcome(s.spec.name, boot_injection(s), False, s.detail, untouched=True)


def new_limit_line(s: RoleState) -> str | None:
    """The limit notice the agent's own screen shows that the session has not
    been told of: once per notice (one still on the screen after the wait is
    not a new one); None otherwise."""
    if s.status is RoleStatus.WORKING:
        s.limit_line = None  # it went on: the next notice is a new one
    if s.status not in (RoleStatus.IDLE, RoleStatus.WAITING):
        return None
    tail = (screenstatus.LIMIT_DIALOG_TAIL if s.status is RoleStatus.WAITING
            else screenstatus.LIMIT_TAIL)
    line = screenstatus.limit_notice(s.terminal.display(), s.profile, tail)
    told, s.limit_line = s.limit_line, line
    return line if line is not None and line != told else None


def boot_recheck(s: RoleState, now: float) -> float | None:
    """When a role not ready to brief is looked at again, on the BOOT_POLL
    grid: the tick at which its output can have been quiet long enough to
    open a rest window (REST_WINDOW before the end of its quiet wait), then
    the tick at which the quiet wait and the window have both run.  Until
    then :func:`boot_ready` is False whatever the screen shows, so an agent
    that never stops printing is looked at about twice per quiet wait (and
    measured at most once), not ten times a second, and a quiet one is
    briefed on the first tick after its quiet wait, as before.

    A screen quiet past its wait that is blank, or shows a dialog, changes
    only with new output: a blank one is looked at once more, as
    BOOT_MAX_WAIT passes (to say it is not briefed), and then, as a dialog
    is, not until it draws again (None: the role actor looks after its
    next output).  Looked at every tick, a program that draws nothing, or
    a dialog left up overnight, woke the role ten times a second for good."""
    due = s.last_output + max(BOOT_QUIET, s.profile.boot_quiet)
    if now >= due and _still_screen(s):  # (a rest window it opened is never read)
        if s.status is RoleStatus.WAITING or boot_overdue(s, now):
            return None
        due = s.spawned + BOOT_MAX_WAIT
    elif _window_open(s):
        due = max(due, s.rest_mark[0] + REST_WINDOW)
    elif now < due - REST_WINDOW:
        due -= REST_WINDOW
    short = due - now
    return BOOT_POLL * max(1, math.ceil(short / BOOT_POLL - 1e-6))


def boot_look_late(s: RoleState, due: float, now: float) -> bool:
    """The boot check on its way, due at ``due``, looks later than new output
    can need: it waits out a still screen (see :func:`boot_recheck`), while
    any other wait ends within a quiet wait and a rest window of now."""
    return due - now > max(BOOT_QUIET, s.profile.boot_quiet) + REST_WINDOW + BOOT_POLL


def _still_screen(s: RoleState) -> bool:
    """A screen no time passing changes: a dialog its last read matched
    (one held on a screen that matches nothing leaves after a while), or a
    blank one."""
    if s.status is RoleStatus.WAITING:
        return s.unmatched_since is None
    return not drawn(s.terminal.display())


def behind(s: RoleState) -> bool:
    """The agent has written output its screen does not show yet (the PTY
    holds it, or the reader has it in hand): what the screen says may be
    stale by a dialog just drawn, so nothing is typed until it is fed.
    Asked only before a write into the agent (one ioctl, about 1 us)."""
    return s.child is not None and s.child.output_unseen()


def put_off(s: RoleState, msg: m.Inject, now: float) -> m.Inject | None:
    """The line to offer again BEHIND_POLL from now, when the screen that
    read ready may be stale (:func:`behind`: a dialog drawn, not fed yet),
    up to BEHIND_WAIT of a pane that never stops printing; None: type it now."""
    if not behind(s):
        return None
    since = now if msg.behind_since is None else msg.behind_since
    return m.Inject(msg.injection, since) if now - since < BEHIND_WAIT else None


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
        held=s.left_in_input is not None, limited_until=s.limited_until,
        busy_held=s.busy_since if s.busy_held else None)
