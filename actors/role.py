"""One actor per role: the agent's PTY, its emulated screen, its state.

The actor owns the process for the whole session: it spawns it, briefs it
at boot, types injections into it, restarts it under the role's policy and
stops it.  The PTY's output is fed to the terminal on the reader thread and
the operator's keys are written from the deck's thread, neither waiting for
the actor (see ``actors/roleio.py``); the actor gets a notice of new output.
All that must survive a crash of the actor itself lives in
:class:`RoleState`, which the supervisor hands to the replacement.
"""

from __future__ import annotations

import contextlib
import logging
import shlex
import signal
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import singledispatchmethod
from pathlib import Path
from typing import TYPE_CHECKING, Any

from choragos.actors import messages as m
from choragos.actors import roleio, rolescreen
from choragos.actors.admission import RoleHeld
from choragos.actors.base import Actor
from choragos.actors.handle import ActorGone
from choragos.actors.rolehost import MACHINE, Child, RoleHost
from choragos.actors.rolewatch import Boot, Watch
from choragos.actors.timers import Timers
from choragos.actors.typist import Ending, Typing, Typist
from choragos.agents.profiles import AgentProfile, profile_for
from choragos.config.memfloor import HELD_MARK, MemoryGate, Verdict
from choragos.config.model import RoleSpec
from choragos.roles import briefs, conversations
from choragos.roles.launch import Launch
from choragos.roles.rolestatus import SCREEN_STATES, RoleStatus, check
from choragos.session import hopstamps
from choragos.terminal.echowait import EchoWait
from choragos.terminal.ptyproc import SpawnError
from choragos.terminal.restartpolicy import ExitStatus, decide

if TYPE_CHECKING:
    from choragos.remote.seat import RemoteRole
    from choragos.terminal.emulator import Terminal
    from choragos.terminal.transcript import Transcript

# Remote seats' modules (ssh links, checkouts: some 5 ms of the start) are
# loaded with the first remote role (actors/crew.py), not by every session.

log = logging.getLogger("choragos.role")

# The operator's text and its keys (and keys held over a pause) go out this
# far apart: nothing watches their echo, and text+Enter read together is a
# paste that never submits.
KEYS_APART = 0.2




@dataclass
class RoleState:
    """A role actor's state: its spec and environment, its agent's process, screen and status."""

    spec: RoleSpec
    workdir: Path
    env: dict[str, str]
    profile: AgentProfile
    brief_file: str
    boot_text: str
    size: tuple[int, int] = (120, 40)  # the PTY's columns and rows, and so its terminal's
    status: RoleStatus = RoleStatus.STARTING  # until its first spawn
    child: Child | None = None
    reader: Any = None  # the thread that reads the child's PTY
    gen: int = 0
    spawned: float = 0.0
    last_output: float = 0.0
    booted: bool = False
    boot_attempts: int = 0
    rest_mark: tuple[float, int] | None = None  # (monotonic, ns its session wanted the CPU)
    boot_busy_at: float = 0.0  # (monotonic) the boot check last found it wanting the CPU
    boot_held_said: bool = False  # the operator was told its brief is held back
    boot_parked: bool = False  # no boot check is armed: the next output arms one
    rested_at: float | None = None  # (monotonic) a window ending here found it at rest
    busy_since: float | None = None  # (monotonic) quiet, but found wanting the CPU since
    busy_held: bool = False  # ... for BUSY_HOLD: said on its card, lines wait
    restarts_used: int = 0
    restarts_total: int = 0
    stopping: bool = False
    typing: Typing | None = None
    classify_pending: bool = False
    detail: str = ""
    exit: ExitStatus | None = None
    pending_restart: Any = None
    last_view: m.RoleView | None = None
    # What the actor keeps between its messages (typed; once a string-keyed dict):
    stalled: bool = False  # no new output for the role's stall_after
    quiet_check: bool = False  # a QuietCheck is on its way
    stall_check: bool = False  # a StallCheck is on its way
    left_in_input: str | None = None  # a line its input still shows that it did not take
    settle_until: float = 0.0  # (monotonic) no classification as idle before this
    unmatched_since: float | None = None  # (monotonic) the screen has matched nothing since
    limited_until: float | None = None  # (wall clock) a provider's limit is waited out
    limit_line: str | None = None  # the limit notice last reported from its screen
    before_pause: RoleStatus | None = None  # the status a resume returns to
    resume_args: tuple[str, ...] | None = None  # a resumed role's next spawn continues
    new_conversation: bool = False  # ... unless a handoff asked for new conversations
    conversation: str | None = None  # the conversation its process runs, once marked
    cwd: Path | None = None  # where the process runs, when not the workspace (its worktree)
    keys: roleio.KeyQueue = field(default_factory=roleio.KeyQueue)  # operator keys in wait
    feed_lock: threading.Lock = field(default_factory=threading.Lock)  # gen vs. the reader's feed
    output_noticed: bool = False  # an OutputSeen is on its way to the actor
    echo_wait: EchoWait | None = None  # the session's: output held while a key's echo is awaited
    seat: RemoteRole | None = None  # a role on another machine: the hooks of its seat
    host_held: Any = None  # its host does not answer: the hold (actors/hostwait.py)
    typed: deque[int] = field(default_factory=lambda: deque(maxlen=64))  # injections typed
    enter_floor: float = 0.0  # the text-to-Enter floor learned from lines that took two
    tile: tuple[int, int] | None = None  # the size the deck last asked for (None: never)
    memory_gate: MemoryGate | None = None  # the session's: no start while memory is short
    # The emulated screen and the transcript it scrolls into: see :attr:`terminal`.
    screen_made: tuple[Terminal, Transcript] | None = None
    screen_lock: threading.Lock = field(default_factory=threading.Lock)

    # The emulator (pyte, wcwidth and the session's own parser: some 15 ms
    # of imports) is not needed until there is output to feed it.  The role
    # actor makes the screen right after its first spawn and before its
    # reader starts, so the imports run beside the agents' start rather than
    # before it, and every byte the agent writes reaches the screen.  Anyone
    # who asks earlier (the deck, the view of a role held back or whose
    # spawn failed) gets a blank screen of the role's size, made then.
    @property
    def terminal(self) -> Terminal:
        made = self.screen_made
        return (made or make_screen(self))[0]

    @property
    def transcript(self) -> Transcript:
        made = self.screen_made
        return (made or make_screen(self))[1]

    def resize_screen(self, cols: int, rows: int) -> None:
        """The PTY's new size; the screen follows it, made or not yet."""
        with self.screen_lock:
            self.size = (cols, rows)
            made = self.screen_made
        if made is not None:
            made[0].resize(cols, rows)


def make_screen(s: RoleState) -> tuple[Terminal, Transcript]:
    """The role's terminal and transcript, made once (on whichever thread asks
    first), wired as its actor wants them: the terminal's replies go to the
    agent, the rows it scrolls off to the transcript."""
    with s.screen_lock:
        if s.screen_made is None:
            from choragos.terminal.emulator import Terminal
            from choragos.terminal.transcript import Transcript

            transcript = Transcript(s.workdir / ".choragos" / "logs" / f"{s.spec.name}.log")
            term = Terminal(*s.size, hold=roleio.FLOOD_HOLD)
            term.reply = lambda data: _reply(s, data)
            term.on_scrolled = lambda lines: transcript.append_lines(lines, term.cols)
            s.screen_made = (term, transcript)
        return s.screen_made


def _reply(s: RoleState, data: bytes) -> None:
    """What the terminal answers the agent (a cursor report...)."""
    child = s.child
    if child is not None:
        child.write(data)


def _task_sent_first(s: RoleState, msg: m.Inject, tell_core: Callable[[Any], None],
                     tell_me: Callable[[Any], None]) -> bool:
    """A remote seat's task: its file is sent first (True: not typed now).
    The send takes seconds, and the actor reads nothing meanwhile, so the line
    is then offered again, behind what the agent drew since (a dialog, say)."""
    if s.seat is None or msg.injection.kind != "task" or not msg.injection.task_id or msg.sent:
        return False
    from choragos.remote.seat import SeatError  # loaded with the seat: see the top

    try:
        s.seat.before_task(msg.injection.task_id)
    except SeatError as exc:
        tell_core(m.InjectionOutcome(s.spec.name, msg.injection, False, str(exc),
                                     untouched=True))
        return True
    tell_me(replace(msg, sent=True))
    return True


def new_state(launched: Launch, workdir: Path, cols: int = 120, rows: int = 40) -> RoleState:
    spec = launched.spec
    brief_file = f".choragos/briefs/{spec.name}.md"
    cols, rows = max(cols, spec.terminal_floor[0]), max(rows, spec.terminal_floor[1])
    state = RoleState(
        spec=spec, workdir=workdir, env=launched.env, profile=launched.profile,
        brief_file=brief_file, size=(cols, rows),
        boot_text=briefs.boot_line(spec.name, spec.prompt_template, brief_file),
        cwd=launched.cwd if launched.cwd != workdir else None)
    return state


def spec_profile(spec: RoleSpec) -> AgentProfile:
    """The role's ``agent`` key, else the agent its command runs (wrappers seen through)."""
    return profile_for(spec.command, spec.args, spec.agent)


class RoleActor(Actor):
    def __init__(self, state: RoleState, core: Any, timers: Timers, supervisor: Any,
                 self_handle: Any, host: RoleHost = MACHINE) -> None:
        super().__init__(f"role:{state.spec.name}", supervisor)
        self.s = state
        self.core = core
        self.timers = timers
        self.me = self_handle
        self.host = host
        self.now = host.now
        self.typist = Typist(state, host.now, timers, self_handle, core.tell, self._typed)
        self.watch = Watch(state, host.now, timers, self_handle, self._refresh_status,
                           self._publish)
        self.boot = Boot(state, host.now, timers, self_handle, self.typist, core.tell,
                         self._set_status, self._screen_status, self._publish)
        if state.seat is not None:  # held through its host's outages (actors/hostwait.py)
            from choragos.actors.hostwait import HostWait
            self.host_wait = HostWait(state, timers, self_handle, core.tell, self._publish)

    # -- lifecycle ---------------------------------------------------------

    def on_start(self) -> None:
        if self.s.typing is not None:  # we replaced a crashed instance mid-injection
            self.typist.abandon("choragos restarted the role's actor during the injection")
        # A notice or classification the crashed instance never read must
        # not silence the reader.
        self.s.output_noticed = self.s.classify_pending = False
        if self.s.child is not None and self.s.status not in roleio.GONE:
            self._output_seen(roleio.OutputSeen(self.s.gen))
        for _ in range(len(self.s.keys.waiting)):  # their flushes may have died with it
            self.me.tell(roleio.FlushKeys())

    def on_shutdown(self) -> None:
        self._terminate(3.0)
        made = self.s.screen_made
        if made is not None:  # its last screen is written: let go of the file now
            made[1].close()

    @singledispatchmethod
    def handle(self, message: Any) -> Any:
        return super().handle(message)

    @handle.register(m.Spawn)
    def _spawn(self, msg: m.Spawn) -> None:
        if msg.manual:
            self.s.restarts_used = 0
        self.s.pending_restart = None
        if self.s.child is not None and self.s.child.poll() is None:
            return
        if not msg.admitted and self._held():
            return
        self._start_process()

    def _held(self) -> bool:
        """Ask the memory gate; a role told to wait says why and the core
        lets it in (with an admitted Spawn) once memory is back."""
        gate = self.s.memory_gate
        verdict = gate.ask(self.s.spec.name, self._say_held) if gate is not None else None
        return verdict is not None and not verdict.admitted

    def _say_held(self, verdict: Verdict) -> None:
        """Inside the gate: the core hears the holds in the queue's order."""
        self.s.detail = f"{HELD_MARK}: {verdict.reason}"
        self._publish()
        self.core.tell(RoleHeld(self.s.spec.name, verdict.reason, verdict.new))

    def _start_process(self) -> None:
        s = self.s
        with s.feed_lock:  # a late chunk of the old process is never fed after the reset
            s.gen += 1
            if s.screen_made is not None:  # (a first spawn's is made below)
                s.terminal.reset()
        s.stopping = False
        s.booted = False
        s.boot_attempts, s.boot_held_said, s.rest_mark = 0, False, None
        s.exit = None
        if s.seat is not None and not self._seat_ready():
            return
        argv = self._argv()
        try:
            s.child = self.host.spawn(argv, s.cwd or s.workdir, s.env, *s.size)
        except SpawnError as exc:
            s.child = None
            self._set_status(RoleStatus.FAILED, str(exc))
            self.core.tell(m.RoleExited(s.spec.name, ExitStatus(code=127), False, str(exc)))
            return
        s.spawned = s.last_output = self.now()
        make_screen(s)  # before the reader feeds it: see RoleState.terminal
        s.transcript.start_session(argv, s.cwd or s.workdir, s.child.pid)
        gen = s.gen
        feed = roleio.OutputFeed(s, self.me, gen, self.now)
        s.reader = self.host.reader(s.child, feed.data,
                                    lambda status: self._from_reader(m.Exited(gen, status)),
                                    name=f"pty-{s.spec.name}", on_lull=feed.lull)
        s.reader.start()
        s.detail = ""
        s.stalled = False
        s.left_in_input = None  # that process's input went with it
        s.limited_until = None  # the session says again if the limit holds
        self._set_status(RoleStatus.BOOTING)
        if s.host_held is not None:
            self.host_wait.over()
        self.boot.arm()
        self.watch.arm_stall_check(gen)

    def _seat_ready(self) -> bool:
        """A remote seat connected and up to date; its failure is an exit like any."""
        from choragos.remote.seat import SeatError  # loaded with the seat: see the top

        try:
            self.s.seat.prepare()
        except SeatError as exc:
            self._exited(m.Exited(self.s.gen, ExitStatus(code=255, cause=str(exc)), exc.kind))
            return False
        return True

    def _from_reader(self, message: Any) -> None:
        """The reader thread's way in.  Once this role's actor is given up the
        session stops the process itself; the reader keeps draining the PTY
        (so the agent never blocks on a full one) and drops what it reads,
        rather than dying on a refusal per chunk."""
        if self.me.closed:
            return
        with contextlib.suppress(ActorGone):  # given up between the check and the tell
            self.me.tell(message)

    def _argv(self) -> list[str]:
        """The command line; a resumed session's first spawn may continue the
        agent's conversation, and a Claude Code role gets one of its own."""
        s = self.s
        resumed = s.resume_args is not None and not s.new_conversation
        argv = s.spec.argv() + list(s.resume_args or ())
        s.resume_args, s.new_conversation = None, False
        s.conversation = None
        if s.profile.name == "claude" and not conversations.chooses_its_own(argv):
            flags = conversations.start_args(s.workdir, s.spec.name, resumed)
            s.conversation = flags[1]
            argv += flags
        if s.seat is not None:  # the launcher adds the words after the role's own
            return s.seat.argv + [shlex.quote(word) for word in argv[len(s.spec.argv()):]]
        return argv

    # -- output and status -------------------------------------------------

    @handle.register(roleio.OutputSeen)
    def _output_seen(self, msg: roleio.OutputSeen) -> None:
        self.watch.output_seen(msg)
        if msg.gen == self.s.gen:
            self.typist.output_seen()
            self.boot.output_seen()

    @handle.register(m.Classify)
    def _classify(self, msg: m.Classify) -> None:
        self.watch.classify(msg)

    @handle.register(m.QuietCheck)
    def _quiet_check(self, msg: m.QuietCheck) -> None:
        self.watch.quiet_check(msg)

    @handle.register(m.StallCheck)
    def _stall_check(self, msg: m.StallCheck) -> None:
        self.watch.stall_check(msg)

    def _screen_status(self) -> RoleStatus:
        return rolescreen.screen_status(self.s, self.now())

    def _refresh_status(self) -> None:
        s = self.s
        self.typist.release_cleared_input()
        if s.status in SCREEN_STATES:
            self._set_status(self._screen_status())
            self._notice_limit()
        elif s.status is RoleStatus.BOOTING and self._screen_status() is RoleStatus.WAITING:
            self._set_status(RoleStatus.WAITING)  # a dialog at startup needs a human
        else:
            self._publish()

    def _set_status(self, status: RoleStatus, detail: str | None = None) -> None:
        check(self.s.status, status)
        if detail is not None:
            self.s.detail = detail
        self.s.status = status
        self._publish()

    def _publish(self) -> None:
        view = self.view()
        if view != self.s.last_view and not self.watch.holds_preview(view):
            self.s.last_view = view
            self.core.tell(m.RoleReported(view))

    def view(self) -> m.RoleView:
        return rolescreen.view(self.s, self.now())

    def _ready(self) -> bool:
        return rolescreen.ready(self.s, self.now())

    # -- provider limits ------------------------------------------------

    def _notice_limit(self) -> None:
        """Tell the session when the agent's own screen shows a limit."""
        line = rolescreen.new_limit_line(self.s)
        if line is not None:
            self.core.tell(m.LimitOnScreen(self.s.spec.name, line))

    @handle.register(m.Limited)
    def _limited(self, msg: m.Limited) -> None:
        s = self.s
        if s.status in (RoleStatus.EXITED, RoleStatus.FAILED):
            return
        if msg.until is None:
            s.limited_until = None
            if s.before_pause is RoleStatus.LIMITED:
                s.before_pause = RoleStatus.IDLE  # the resume reads the screen
            elif s.status is RoleStatus.LIMITED:
                s.detail = ""
                self._set_status(self._screen_status())
                if not s.booted:  # limited before its brief: the boot check stopped
                    self.boot.arm()
            self._publish()
            return
        s.limited_until = msg.until
        if s.status is RoleStatus.PAUSED:
            s.before_pause = RoleStatus.LIMITED
            self._publish()
        else:
            self._set_status(RoleStatus.LIMITED, msg.detail)

    # -- boot ---------------------------------------------------------

    @handle.register(m.BootCheck)
    def _boot_check(self, msg: m.BootCheck) -> None:
        self.boot.check(msg)

    # -- injection ----------------------------------------------------

    @handle.register(m.Inject)
    def _inject(self, msg: m.Inject) -> None:
        s = self.s
        if hopstamps.ON:
            hopstamps.mark("inject-in", s.spec.name)
        self.typist.release_cleared_input()
        if self._ready() and self._screen_status() is not RoleStatus.IDLE:
            self._refresh_status()  # the screen moved on (a dialog opened) since last read
        if not self._ready():
            self.core.tell(m.InjectionOutcome(s.spec.name, msg.injection, False,
                                              f"{s.spec.name} is {s.status}, not ready",
                                              untouched=True))
            return
        if (later := rolescreen.put_off(s, msg, self.now())) is not None:
            self.timers.after(rolescreen.BEHIND_POLL, self.me, later)  # its screen read afresh
            return
        if not _task_sent_first(s, msg, self.core.tell, self.me.tell):
            self.typist.begin(msg.injection)

    @handle.register(m.InjectStep)
    def _inject_step(self, msg: m.InjectStep) -> None:
        self.typist.step(msg)

    def _typed(self, typing: Typing, ending: Ending) -> None:
        """The typist ended ``typing``: the role may be ready again, or booted."""
        s = self.s
        if ending.ok and s.profile.submit_settle:
            # The input clears before the busy state shows: a line typed in
            # between can be wiped with the old input.  Ready again after this.
            s.settle_until = self.now() + s.profile.submit_settle
            self.timers.after(s.profile.submit_settle + 0.05, self.me, m.Classify(s.gen))
        if typing.boot:
            self.boot.ended(ending)
        self.core.tell(m.InjectionOutcome(s.spec.name, typing.injection, ending.ok,
                                          ending.detail, submitted=ending.submitted,
                                          left_in_input=ending.left_in_input))
        self._refresh_status()
        # The reply may have been classified already (while booting, when no
        # quiet check is armed): without one, an unmarked screen stays "working".
        self.watch.arm_quiet_check(s.gen)
        self._publish()

    # -- process exit and restarts -------------------------------

    @handle.register(m.Exited)
    def _exited(self, msg: m.Exited) -> None:
        s = self.s
        if msg.gen != s.gen:
            return
        lost = s.seat is not None and s.seat.lost(msg.status)
        kind = self.host_wait.fault(msg) if s.seat is not None else ""
        if s.seat is not None:
            msg = m.Exited(msg.gen, s.seat.explain(msg.status))
            s.seat.after_exit()
        s.exit = msg.status
        s.transcript.flush_screen(s.terminal.whole_display(), s.terminal.cols)
        if s.child is not None:
            s.child.close()
        if s.status is not RoleStatus.FAILED:  # a failed role's restart that failed to start
            self._set_status(RoleStatus.EXITED, msg.status.describe())
        if s.typing is not None:  # after EXITED: the core then requeues it, unless submitted
            # A lost connection took the agent that read it: the next one types it afresh.
            self.typist.abandon(f"{s.spec.name} exited ({msg.status.describe()})",
                                submitted=s.typing.enters > 0 and not lost)
        if kind:
            self.host_wait.hold(msg.status, kind)
            return
        decision = decide(s.spec.restart, s.spec.restart_retries, s.restarts_used,
                          msg.status, stopping=s.stopping)
        if decision.restart:
            s.restarts_used += 1
            s.restarts_total += 1
            s.detail = f"{msg.status.describe()}; {decision.reason} in {decision.delay:g}s"
            s.pending_restart = self.timers.after(decision.delay, self.me, m.Spawn())
        elif s.spec.restart and not s.stopping and "budget" in decision.reason:
            self._set_status(RoleStatus.FAILED, f"{msg.status.describe()}; {decision.reason}")
        self._publish()
        self.core.tell(m.RoleExited(s.spec.name, msg.status, decision.restart,
                                    decision.reason, redeliver=lost))

    @handle.register(m.ProbeDue | m.Probed)
    def _host_probe(self, msg: m.ProbeDue | m.Probed) -> None:
        self.host_wait.heard(msg)

    @handle.register(m.Restart)
    def _restart(self, msg: m.Restart) -> None:
        s = self.s
        if s.pending_restart is not None:
            s.pending_restart.cancel()
        running = s.child is not None and s.status not in (RoleStatus.EXITED, RoleStatus.FAILED)
        self._terminate(3.0)
        if running:
            # The new process starts a fresh conversation: the core must fail
            # what the old one was working on, or those tasks wait forever.
            self.core.tell(m.RoleExited(s.spec.name, s.exit or ExitStatus(code=None), True,
                                        "restarted on request"))
        s.restarts_used = 0
        s.restarts_total += 1
        s.before_pause = None  # the new process is not paused
        if not self._held():
            self._start_process()

    @handle.register(m.Kill)
    def _kill(self, msg: m.Kill) -> None:
        """Unlike a stop, the exit that follows goes through the restart policy."""
        s = self.s
        if s.child is None or s.status in (RoleStatus.EXITED, RoleStatus.FAILED):
            return
        s.detail = msg.reason
        s.child.signal_group(signal.SIGCONT)
        s.child.signal_group(signal.SIGTERM)
        self.timers.after(msg.grace, self.me, m.KillHard(s.gen))

    @handle.register(m.KillHard)
    def _kill_hard(self, msg: m.KillHard) -> None:
        if msg.gen == self.s.gen and self.s.child is not None and self.s.child.poll() is None:
            self.s.child.signal_group(signal.SIGKILL)

    @handle.register(m.StopProcess)
    def _stop_process(self, msg: m.StopProcess) -> str:
        self._terminate(msg.grace)
        return self.s.exit.describe() if self.s.exit else "not running"

    def _terminate(self, grace: float) -> None:
        s = self.s
        s.stopping = True
        if s.pending_restart is not None:
            s.pending_restart.cancel()
        if s.memory_gate is not None:  # a stopped role waits for nothing
            s.memory_gate.drop(s.spec.name)
        child, reader = s.child, s.reader
        if child is None:
            return
        status = child.terminate(grace)
        if reader is not None:
            reader.halt()
            if reader is not threading.current_thread():
                reader.join(timeout=1.0)
        if s.status not in (RoleStatus.EXITED, RoleStatus.FAILED):
            s.exit = status
            s.transcript.flush_screen(s.terminal.whole_display(), s.terminal.cols)
            self._set_status(RoleStatus.EXITED, status.describe() if status else "stopped")
        if s.typing is not None:  # the core holds the injection in flight until told
            self.typist.abandon(f"{s.spec.name} was stopped mid-injection")
        child.close()
        s.gen += 1  # anything still in flight from the old process is stale
        if s.seat is not None:
            s.seat.after_exit()

    # -- pause and direct input ---------------------------------------

    @handle.register(m.Pause)
    def _pause(self, msg: m.Pause) -> str:
        s = self.s
        if s.child is None or s.status in (RoleStatus.EXITED, RoleStatus.FAILED):
            return f"{s.spec.name} is not running"
        if s.status is RoleStatus.PAUSED:  # (a resume returns to what it was before the first)
            return f"{s.spec.name} is already paused"
        s.child.signal_group(signal.SIGSTOP)
        s.before_pause = s.status
        with s.keys.lock:  # keys typed from now on wait for the resume
            self._set_status(RoleStatus.PAUSED)
        return "paused"

    @handle.register(m.Resume)
    def _resume(self, msg: m.Resume) -> str:
        s = self.s
        if s.status is not RoleStatus.PAUSED:
            return f"{s.spec.name} is not paused"
        s.child.signal_group(signal.SIGCONT)
        with s.keys.lock:  # held keys stay ahead of any typed after the resume
            held = len(s.keys.waiting)
            self._set_status(s.before_pause or RoleStatus.IDLE)
            s.before_pause = None
        # Held keys go out one write at a time, KEYS_APART apart, so a
        # text-then-Enter pair is still typed rather than pasted.
        for n in range(held):
            self.timers.after(n * KEYS_APART, self.me, roleio.FlushKeys())
        s.rest_mark = None  # a window across the pause measured a stopped agent
        if not s.booted:
            self.boot.arm()
        self._refresh_status()
        return "resumed"

    @handle.register(m.UpdateSpec)
    def _update_spec(self, msg: m.UpdateSpec) -> None:
        s = self.s
        s.spec, s.env = msg.spec, msg.env
        s.profile = spec_profile(msg.spec)
        self.watch.arm_stall_check(s.gen)
        s.boot_text = briefs.boot_line(msg.spec.name, msg.spec.prompt_template, s.brief_file)
        self._fit_terminal()  # a reload may have moved the floor
        self._publish()

    @handle.register(m.Resize)
    def _resize(self, msg: m.Resize) -> None:
        """The pane's tile changed size: the agent's PTY follows it, never
        below the role's floor (a smaller tile shows part of it)."""
        self.s.tile = (msg.cols, msg.rows)
        self._fit_terminal()

    def _fit_terminal(self) -> None:
        s = self.s
        if s.tile is None:
            return
        floor_cols, floor_rows = s.spec.terminal_floor
        cols, rows = max(s.tile[0], floor_cols), max(s.tile[1], floor_rows)
        if (cols, rows) == s.size:
            return
        s.resize_screen(cols, rows)
        if s.child is not None:
            s.child.resize(cols, rows)

    @handle.register(m.TypeKeys)
    def _type_keys(self, msg: m.TypeKeys) -> None:
        keys = roleio.key_bytes(msg.keys, self.s.terminal.application_cursor)
        text = briefs.one_line(msg.text).encode()
        if text and keys:  # as in typing: keys after text in a write of their own
            self._send_input(text)
            self.timers.after(KEYS_APART, self.me, m.WriteInput(keys))
        else:
            self._send_input(text or keys)

    @handle.register(m.WriteInput)
    def _write_input(self, msg: m.WriteInput) -> None:
        self._send_input(msg.data)

    @handle.register(roleio.FlushKeys)
    def _flush_keys(self, msg: roleio.FlushKeys) -> None:
        roleio.flush_one(self.s)

    def _send_input(self, data: bytes) -> None:
        roleio.send_input(self.s, data, self.me.tell)
