"""The session core: the roster, the task board, and the executor of its policies.

Every control-socket request arrives here as ``Dispatch`` (an ``ask`` from
the listener); everything the roles report arrives as ``tell``.  The core
never waits on a role.  It routes each message and command to the policy
that owns the concern (delegation, delivery queues, work checks, judging,
holds, merges, guardrails, limits, budgets, admission, ...), and carries
out the effects the policies ask for through their port
(:mod:`choragos.actors.coreport`): state changes published to subscribers
(the deck, the web view), written to the event log and the journal, lines
queued for the roles.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import singledispatchmethod
from pathlib import Path
from typing import TYPE_CHECKING, Any

from choragos import __version__
from choragos.actors import corepolicies
from choragos.actors import messages as m
from choragos.actors.admission import AdmissionState, MemoryCheck, RoleHeld
from choragos.actors.base import Actor
from choragos.actors.coreport import unknown_roles
from choragos.actors.durable import Heartbeat, JournaledBoard, Restore, SaveLayout
from choragos.actors.guardrails import Guardrails, GuardState, IdleCheck
from choragos.actors.handle import ActorGone, Handle
from choragos.actors.latemessages import (
    AftercareFailed,
    FlushTokens,
    GatewayHealth,
    MergeDone,
    PauseClocks,
    ResumeClocks,
    TimedOut,
    TokenTotals,
    WorkChecked,
)
from choragos.actors.policystate import BudgetState, CheckState, LimitState, MergeState
from choragos.actors.timers import Timer, Timers
from choragos.board.events import EventLog
from choragos.board.journal import Journal
from choragos.board.tasks import Board, Task, TaskState
from choragos.config.memfloor import HELD_MARK, MemoryGate
from choragos.config.model import Config
from choragos.control import authority, commands, wire
from choragos.gateway.client import Totals
from choragos.roles import briefs
from choragos.roles.rolestatus import NO_PROCESS, RoleStatus
from choragos.session import news, resume
from choragos.session.hooks import Hooks

if TYPE_CHECKING:
    from choragos.actors.admission import Admission
    from choragos.actors.budgetflow import BudgetFlow
    from choragos.actors.corejournal import CoreJournal
    from choragos.actors.delegation import Delegation
    from choragos.actors.delivery import Delivery
    from choragos.actors.fresh import FreshContexts
    from choragos.actors.holds import Hold, Holds
    from choragos.actors.isolationrestore import IsolationRestore
    from choragos.actors.judging import JudgeLoop, Judging
    from choragos.actors.limitflow import LimitFlow
    from choragos.actors.mergeflow import MergeFlow
    from choragos.actors.reloadcmd import ReloadCommand
    from choragos.actors.resume import Resume
    from choragos.actors.roleexits import RoleExits
    from choragos.actors.rollbackcmd import RollbackCommand
    from choragos.actors.timeouts import Timeouts
    from choragos.actors.tokenusage import TokenUsage
    from choragos.actors.workcheck import WorkChecks
    from choragos.actors.workdone import WorkDone

log = logging.getLogger("choragos.core")
NO_BUILTIN_GATEWAY = ("this session has no built-in gateway ([gateway] builtin is not set): "
                      "nothing to restart")


@dataclass
class Seat:
    """The core's view of one role: its address, state and delivery queue."""

    name: str
    handle: Handle
    view: m.RoleView
    queue: deque[m.Injection] = field(default_factory=deque)
    in_flight: m.Injection | None = None


@dataclass
class CoreState:
    """What the core keeps, on an object a restarted core takes over."""

    config: Config
    workdir: Path
    events: EventLog
    board: Board = field(default_factory=Board)
    seats: dict[str, Seat] = field(default_factory=dict)
    subscribers: list[Callable[[Any], None]] = field(default_factory=list)
    on_shutdown: Callable[[], None] = lambda: None
    gateway: str | None = None  # "on" | "down" | "off"; None when never configured
    # The start's notices: the session's own list, so what its start says
    # after the core is made (checkpoints, the web view, the gateway) is in it.
    notices: list[str] = field(default_factory=list)
    tokens: Totals = field(default_factory=dict)   # latest scrape
    flushed: Totals = field(default_factory=dict)  # what the last "tokens" events said
    trees: dict[str, Path] = field(default_factory=dict)  # worktree roles: their worktree
    # role name -> the environment its agent process gets (verify runs with it)
    role_env: Callable[[str], dict[str, str] | None] = lambda name: None
    # Whom the core tells (the session wires them in after the core starts):
    checkpointer: Handle | None = None
    clocks: Handle | None = None    # the timeout clocks actor
    aftercare: Handle | None = None  # changes and verify after a work-done
    gateway_runner: Handle | None = None  # the built-in gateway's actor: the blocking budgets
    # ``restart --gateway``: the built-in gateway's revival answers (gatewayrevival.py).
    restart_gateway: Callable[[], dict] = lambda: wire.error(NO_BUILTIN_GATEWAY)
    me: Handle | None = None      # this core's own handle, for what the timers send back
    timers: Timers | None = None
    hooks: Hooks | None = None
    journal: Journal | None = None  # when the session is durable
    memory_gate: MemoryGate | None = None  # shared with the role actors
    reloader: Handle | None = None  # the reload actor, when the team came from a file
    # Each policy's own state:
    gates: OrderedDict[str, Task] = field(default_factory=OrderedDict)  # delegation's
    next_injection: int = 1  # delivery's numbering of the lines it queues
    rounds: dict[int, int] = field(default_factory=dict)  # delivery's: rounds missed
    # delivery's: role -> the task checkpointed for its turn; task -> that checkpoint
    snapping: dict[str, str] = field(default_factory=dict)
    snapped: dict[str, str] = field(default_factory=dict)
    heartbeat: Timer | None = None  # the journal's pending "alive" record
    guard: GuardState = field(default_factory=GuardState)
    checks: CheckState = field(default_factory=CheckState)
    merging: MergeState = field(default_factory=MergeState)
    holds: OrderedDict[str, Hold] = field(default_factory=OrderedDict)
    verdicts: dict[str, Judging] = field(default_factory=dict)  # judge task id -> its work
    used: set[str] = field(default_factory=set)  # fresh roles given a task since they started
    limit: LimitState = field(default_factory=LimitState)
    budget: BudgetState = field(default_factory=BudgetState)
    admission: AdmissionState = field(default_factory=AdmissionState)

    @property
    def state_dir(self) -> Path:
        return self.workdir / ".choragos"

    @property
    def start_role(self) -> str:
        return self.config.start_role.name

    def tell_clocks(self, message: Any) -> None:
        """Tell the clocks, if any.  They stop before the core as the session
        ends, and what the core handles after (a held role's exit, a task
        settled in flight) still has its other steps to take: the handle has
        logged the refusal, and the journal keeps the clock's record."""
        if self.clocks is not None:
            with contextlib.suppress(ActorGone):
                self.clocks.tell(message)


class CoreActor(Actor):
    """Routes messages to its policies and carries out their effects (it is
    their :class:`~choragos.actors.coreport.CorePort`)."""

    def __init__(self, state: CoreState, supervisor: Any = None) -> None:
        super().__init__("core", supervisor)
        self.s = state
        self.guard = Guardrails(self, state)
        self.board_moved = False  # a task moved (or its waiting changed) in this message
        if isinstance(state.board, JournaledBoard):
            state.board.on_unsaved = lambda error: self.journaling.note_unsaved(error)

    # The policies: each is made (and its module loaded) when the core first
    # uses it (see actors/corepolicies.py); their state is on CoreState.
    if TYPE_CHECKING:
        journaling: CoreJournal
        budgets: BudgetFlow
        limits: LimitFlow
        admission: Admission
        exits: RoleExits
        fresh: FreshContexts
        merges: MergeFlow
        holds: Holds
        judge: JudgeLoop
        checks: WorkChecks
        isolation: IsolationRestore
        rollback: RollbackCommand
        reloading: ReloadCommand
        resume: Resume
        delegation: Delegation
        timeouts: Timeouts
        delivery: Delivery
        usage: TokenUsage
        workdone: WorkDone

    def __getattr__(self, name: str) -> Any:
        policy = corepolicies.make(self, name)  # AttributeError if no policy
        setattr(self, name, policy)  # found on the instance from now on
        return policy

    @singledispatchmethod
    def handle(self, message: Any) -> Any:
        return super().handle(message)

    def on_receive(self, message: Any) -> Any:
        # What could not be journaled (a full disk) is logged and the ack says so;
        # the listener holds each ack until the journal is on disk (group commit).
        self.journaling.begin()
        try:
            answer = super().on_receive(message)
        finally:
            # Once the message is handled, not at each move inside it: work
            # that moves to done and then to its merge gate (or a merge) in
            # one turn never reads as "every task settled" in between.
            if self.board_moved:
                self.board_moved = False
                self.guard.tasks_changed()
        return self.journaling.settle(answer)

    # -- the journal (see actors/corejournal.py) ---------------------------------

    def journal(self, kind: str, **fields: Any) -> None:
        self.journaling.append(kind, **fields)

    @handle.register(Restore)
    def _restore(self, msg: Restore) -> None:
        self.resume.restore(msg.image)

    @handle.register(Heartbeat)
    def _heartbeat(self, msg: Heartbeat) -> None:
        self.journaling.heartbeat()

    @handle.register(SaveLayout)
    def _save_layout(self, msg: SaveLayout) -> None:
        self.journal("layout", layout=msg.layout)

    # -- publishing --------------------------------------------------------

    def event(self, event: str, **fields: Any) -> None:
        record = self.s.events.write(event, **fields)
        self.publish(news.EventLogged.of(record))

    @handle.register(m.Announce)
    def _announced(self, msg: m.Announce) -> None:
        """An event another actor wrote (the checkpointer's rollback)."""
        self.publish(news.EventLogged.of(msg.record))

    def publish(self, item: Any) -> None:
        for callback in list(self.s.subscribers):
            try:
                callback(item)
            except ActorGone:
                # Its actor stopped for good (the deck as the session ends):
                # told no more, rather than a traceback for every item after.
                self.s.subscribers.remove(callback)
                log.info("a subscriber has stopped; no more news is sent to it")
            except Exception:
                log.exception("subscriber failed")

    @handle.register(m.Subscribe)
    def _subscribe(self, msg: m.Subscribe) -> None:
        self.s.subscribers.append(msg.callback)
        # A late subscriber (the deck) would otherwise wait for the next change.
        if self.s.gateway is not None:
            msg.callback(news.GatewayChanged(self.s.gateway))
        if self.s.tokens:
            msg.callback(news.TokensChanged(news.role_usages(self.usage.usages())))
        if self.s.guard.marks:
            msg.callback(news.MarksChanged.of(self.s.guard.marks))

    # -- control requests --------------------------------------------------

    @handle.register(m.Dispatch)
    def _dispatch(self, msg: m.Dispatch) -> dict:
        request = msg.request
        if msg.expires is not None and time.monotonic() > msg.expires:
            return wire.error("the session core was too busy to take the request in time; "
                              "nothing was changed, try again", busy=True)
        # Each command names its handler in choragos/control/commands.py.
        command = commands.COMMANDS.get(request["cmd"])
        handler = getattr(self, command.handler, None) if command is not None else None
        if handler is None:
            return wire.error(f"command {request['cmd']!r} is not supported by this session")
        refused = self._refusal(request)
        if refused:
            return wire.error(refused)
        return handler(request)

    def _refusal(self, request: dict) -> str | None:
        """Operator verbs and delegation, by the caller's process ancestry."""
        caller = request.get(wire.CALLER)
        spec = self.s.config.role(caller) if caller else None
        refused = authority.refusal(request, caller, spec is not None and spec.may_delegate)
        if refused:
            self.event("request refused", cmd=request["cmd"], caller=caller, reason=refused)
        return refused

    def _cmd_whoami(self, request: dict) -> dict:
        return wire.ok(role=request.get(wire.CALLER))

    def _cmd_ping(self, request: dict) -> dict:
        return wire.ok(pid=os.getpid(), version=__version__, dir=str(self.s.workdir),
                       roles=list(self.s.seats))

    def _cmd_shutdown(self, request: dict) -> dict:
        self.event("shutdown requested")
        self.s.on_shutdown()
        return wire.ok(**resume.left_open(self.s.board.tasks.unsettled_tasks()))

    def _cmd_handoff(self, request: dict) -> dict:
        """End the session on purpose: first the orchestrator writes down what it knows."""
        self.journal("handoff", config=request["config"], wait=request["wait"])
        self.event("handoff requested", config=request["config"], wait=request["wait"])
        self.enqueue(self.s.start_role, briefs.handoff_line(request["wait"]), "notice")
        return wire.ok(file=str(self.s.state_dir / "handoff.md"), wait=request["wait"])

    def _cmd_status(self, request: dict) -> dict:
        roles = []
        for seat in self.s.seats.values():
            spec = self.s.config.role(seat.name)
            open_tasks = self.s.board.open_for(seat.name)
            roles.append({**seat.view.as_dict(), "model": spec.model, "command": spec.command,
                          "host": spec.host, "task": open_tasks[0].id if open_tasks else None,
                          "queued": len(seat.queue), **self.usage.of(seat.name),
                          "marks": list(self.s.guard.marks.get(seat.name, ()))})
        # The start's notices too: a detached session's, or one whose deck's
        # dialog was closed, are said wherever its state is looked at.
        return wire.ok(roles=roles, gateway=self.s.gateway, budget=self.guard.session_budget(),
                       notices=list(self.s.notices))

    def _cmd_board(self, request: dict) -> dict:
        return wire.ok(tasks=self.s.board.snapshot(request.get("archived", False)),
                       archived=len(self.s.board.archive),
                       archived_by=self.s.board.archived_counts())

    def _cmd_reload(self, request: dict) -> dict:
        """Live reload (``actors/reloadcmd.py``); the reload actor starts and
        stops the roles, this core never waits on it."""
        return self.reloading.command(request)

    @handle.register(m.TeamChanged)
    def _team_changed(self, message: m.TeamChanged) -> None:
        """The reload actor wrote the new team's briefs: the start role reads them."""
        self.enqueue(self.s.start_role, briefs.team_changed_line(
            list(message.added), list(message.removed),
            f".choragos/briefs/{self.s.start_role}.md"), "notice")

    def _cmd_budget(self, request: dict) -> dict:
        return self.budgets.command(request)

    def _cmd_rollback(self, request: dict) -> dict | m.Deferred:
        return self.rollback.command(request)

    def _cmd_restart(self, request: dict) -> dict:
        if request.get("gateway"):  # the given-up built-in gateway, at once
            return self.s.restart_gateway()
        return self._role_control(request["role"], "restart")

    def _cmd_pause(self, request: dict) -> dict:
        return self._role_control(request["role"], "pause")

    def _cmd_resume(self, request: dict) -> dict:
        # A role held by a provider's limit (not paused) is resumed by lifting
        # the hold: the operator's word that the limit is over.
        seat, watch = self.s.seats.get(request["role"]), self.s.limit.watch
        if (seat is not None and seat.view.status is not RoleStatus.PAUSED
                and watch is not None and watch.limited(seat.name)):
            return self.limits.lift(seat.name)
        return self._role_control(request["role"], "resume")

    def _cmd_input(self, request: dict) -> dict:
        """Operator keys into a role: how a headless user answers a dialog."""
        role = request["role"]
        seat = self.s.seats.get(role)
        if seat is None:
            return wire.error(unknown_roles([role], self.s.seats))
        if seat.view.status in NO_PROCESS:
            return wire.error(f"{role} is {seat.view.status}; nothing can be typed into it")
        if seat.in_flight is not None:
            return wire.error(f"choragos is typing a delivery into {role} right now; "
                              f"try again in a moment")
        seat.handle.tell(m.TypeKeys(request["text"], tuple(request["keys"])))
        self.event("operator input", role=role, keys=request["keys"],
                   text=request["text"])
        return wire.ok(role=role, held=seat.view.status == RoleStatus.PAUSED)

    def _role_control(self, role: str, action: str) -> dict:
        seat = self.s.seats.get(role)
        if seat is None:
            return wire.error(unknown_roles([role], self.s.seats))
        status = seat.view.status
        if action != "restart" and status in NO_PROCESS:
            # The role would refuse too, but only after this answer: a dead role
            # journaled as paused would come back paused at its next start.
            return wire.error(_nothing_to(role, status, action))
        if action == "pause" and status == RoleStatus.PAUSED:
            return wire.error(f"{role} is already paused; `choragos resume {role}` lets it go on")
        if action == "resume" and not self._paused(seat):
            return wire.error(f"{role} is not paused (it is {status}), nor held by a provider's "
                              f"limit: nothing to resume")
        message = {"restart": m.Restart(), "pause": m.Pause(), "resume": m.Resume()}[action]
        seat.handle.tell(message)
        self.event(f"role {action}", role=role, by="operator")
        # A restart ends a pause too: its new process runs, and a session
        # resumed after a kill must not pause it again.
        self.journal("role", role=role, paused=action == "pause")
        return wire.ok(role=role, action=action)

    def _paused(self, seat: Seat) -> bool:
        """Paused as the role last said, or as the operator's last pause, journaled
        before the role's own word may have come (a resume typed right after)."""
        journal = self.s.journal
        return seat.view.status == RoleStatus.PAUSED or (
            journal is not None and journal.image.roles.get(seat.name, {}).get("paused", False))

    # -- delegation (actors/delegation.py) ------------------------------------------

    def _cmd_delegate(self, request: dict) -> dict:
        return self.delegation.command(request)

    def _cmd_gate(self, request: dict) -> dict:
        if request["action"] == "list" and not (self.s.gates or self.s.merging.gates
                                                or self.s.holds):
            # Nothing waits at any gate (the deck asks at every start): the
            # gate policies are not made for an empty list.
            return wire.ok(gates=[])
        return self.delegation.gate_command(request)

    def _cmd_cancel(self, request: dict) -> dict:
        return self.delegation.cancel_command(request)

    @handle.register(m.CheckpointDone)
    def _checkpoint_done(self, msg: m.CheckpointDone) -> None:
        self.delivery.checkpointed(msg)

    def record_tasks(self, targets: list[str], request: dict) -> list[Task]:
        return self.delegation.record_tasks(targets, request)

    def route_task(self, task: Task) -> Task:
        return self.delegation.route_task(task)

    def write_task_file(self, task: Task) -> None:
        self.delegation.write_task_file(task)

    def queue_task(self, task: Task) -> None:
        self.delegation.queue_task(task)

    # -- the board ------------------------------------------------------------------

    def move(self, task_id: str, state: TaskState, **changes: Any) -> Task:
        task = self.s.board.move(task_id, state, **changes)
        self.publish(news.TaskChanged(task))
        self.board_moved = True
        self.guard.task_moved()
        return task

    def annotate(self, task_id: str, **changes: Any) -> Task:
        task = self.s.board.annotate(task_id, **changes)
        self.publish(news.TaskChanged(task))
        if "waiting" in changes or "checks" in changes:  # its checks, its gate: open or over
            self.board_moved = True
        return task

    def settle(self, task: Task, state: TaskState, **changes: Any) -> Task:
        """Move (or annotate) the task; what it waited on is over unless said again."""
        changes.setdefault("waiting", None)
        if task.state is state:
            return self.annotate(task.id, **changes)
        return self.move(task.id, state, **changes)

    def later(self, seconds: float, message: Any) -> Timer | None:
        if self.s.timers is None or self.s.me is None:
            return None
        return self.s.timers.after(seconds, self.s.me, message)

    @handle.register(m.RoleReported)
    def _role_changed(self, msg: m.RoleReported) -> None:
        seat = self.s.seats.get(msg.view.name)
        if seat is None:
            return
        before = seat.view
        seat.view = msg.view
        if before.status != msg.view.status:
            self.event("role state", role=seat.name, state=msg.view.status,
                       was=before.status, detail=msg.view.detail)
            self._status_changed(seat.name, before.status, msg.view.status)
            if msg.view.status is RoleStatus.BOOTING:  # started: whatever held it is over
                self.mark(seat.name, HELD_MARK, False)
        self.publish(news.RoleChanged(msg.view))
        self.journaling.role_seen(msg.view)
        # The limits' and the delivery's turn only when they have one (a limit
        # waited out, a line queued), so a start that reports every role
        # booting makes neither.  The limits first: a "continue" goes ahead.
        if seat.name in self.s.limit.going:
            self.limits.after_limit(seat)
        if msg.view.ready and not before.ready and self.s.limit.rerouting(self.s.config):
            self.limits.freed(seat)  # come to rest: it may take a limited role's work
        if seat.queue:
            self.delivery.pump(seat)
        self.guard.view_changed(before, msg.view)

    def _status_changed(self, role: str, was: str, now: str) -> None:
        if now == RoleStatus.WAITING:
            open_tasks = self.s.board.open_for(role)
            self.alert("on_input", role, open_tasks[0] if open_tasks else None)
        # A task's clock does not run while its role is held (paused, or waiting out a limit).
        held = (RoleStatus.PAUSED, RoleStatus.LIMITED)
        if (was in held) != (now in held):
            self.s.tell_clocks(PauseClocks(role) if now in held else ResumeClocks(role))

    def on_shutdown(self) -> None:
        if self.s.hooks is not None:  # the session's end: none left running unwatched
            self.s.hooks.close()

    def alert(self, hook: str, role: str, task: Task | None) -> None:
        """A human is needed: ring (if [ui] bell) and run the hook, if any."""
        self.ring(hook, role, task.text if task else "", task.id if task else "")

    def mark(self, role: str, mark: str, on: bool) -> None:
        self.guard.mark(role, mark, on)

    def ring(self, hook: str, role: str, text: str, task_id: str = "",
             extra: dict[str, str] | None = None) -> None:
        if self.s.config.ui.bell:
            self.publish(news.Bell(role, hook))
        if self.s.hooks is not None:
            self.s.hooks.fire(hook, role=role, task=text, task_id=task_id, extra=extra)

    # -- the gateway ------------------------------------------------

    @handle.register(GatewayHealth)
    def _gateway_health(self, msg: GatewayHealth) -> None:
        self.usage.gateway_health(msg)

    @handle.register(TokenTotals)
    def _token_totals(self, msg: TokenTotals) -> None:
        self.usage.totals(msg)

    @handle.register(FlushTokens)
    def _flush_tokens(self, msg: FlushTokens) -> None:
        self.usage.flush(msg)

    @handle.register(WorkChecked)
    def _checked(self, msg: WorkChecked) -> None:
        # The turn's records in one write: a kill amid it (a merge gate's diff
        # runs git here) once left the task done with neither its report nor
        # its gate; now the journal keeps its checks' mark, and a resume
        # checks it again.
        try:
            with self.journaling.batch():
                self.checks.work_checked(msg)
        except OSError as exc:  # live, not durable: said like any failed write
            self.journaling.note_unsaved(exc)

    @handle.register(MergeDone)
    def _merged(self, msg: MergeDone) -> None:
        self.merges.done(msg)

    @handle.register(AftercareFailed)
    def _aftercare_failed(self, msg: AftercareFailed) -> None:
        self.event(msg.event, task=msg.task_id, error=msg.error)

    @handle.register(IdleCheck)
    def _idle_check(self, msg: IdleCheck) -> None:
        self.guard.idle_check(msg)

    @handle.register(m.LimitReported)
    def _limit_reported(self, msg: m.LimitReported) -> None:
        self.limits.seen(msg.role, msg.limit)

    @handle.register(m.LimitOnScreen)
    def _limit_screen(self, msg: m.LimitOnScreen) -> None:
        self.limits.on_screen(msg)

    @handle.register(m.LimitWake)
    def _limit_due(self, msg: m.LimitWake) -> None:
        self.limits.wake(msg)

    @handle.register(m.LimitLifted)
    def _limit_over(self, msg: m.LimitLifted) -> None:
        self.limits.lifted(msg)

    @handle.register(m.BudgetRefused)
    def _call_refused(self, msg: m.BudgetRefused) -> None:
        self.budgets.refused(msg)

    @handle.register(RoleHeld)
    def _held_for_memory(self, msg: RoleHeld) -> None:
        self.admission.role_held(msg)

    @handle.register(MemoryCheck)
    def _read_memory(self, msg: MemoryCheck) -> None:
        self.admission.memory_check(msg)

    @handle.register(m.HostHeld | m.HostBack)
    def _host_outage(self, msg: m.HostHeld | m.HostBack) -> None:
        self.exits.outage(msg)

    def fail_task(self, task: Task, reason: str) -> None:
        self.timeouts.stop(task.id)
        self.move(task.id, TaskState.FAILED, note=reason)
        self.event("task failed", task=task.id, role=task.role, reason=reason)
        self.enqueue(self.s.start_role, briefs.failure_line(task, reason), "notice", task.id)
        self.judge.lost(task, f"gave no verdict: {reason}")

    def enqueue(self, role: str, text: str, kind: str, task_id: str | None = None,
                front: bool = False) -> None:
        self.delivery.enqueue(role, text, kind, task_id, front)

    def tell_when_synced(self, target: Any, message: Any) -> None:
        self.journaling.when_synced(lambda: target.tell(message))

    @handle.register(m.InjectionOutcome)
    def _injection_outcome(self, msg: m.InjectionOutcome) -> None:
        self.delivery.outcome(msg)

    @handle.register(TimedOut)
    def _timed_out(self, msg: TimedOut) -> None:
        self.timeouts.timed_out(msg)

    @handle.register(m.RoleExited)
    def _role_exited(self, msg: m.RoleExited) -> None:
        self.event("role exited", role=msg.role, status=msg.status.describe(),
                   restarting=msg.restarting, reason=msg.reason)
        self.guard.exited(msg)
        self.exits.work_of(msg)

    def _cmd_work_done(self, request: dict) -> dict:
        return self.workdone.command(request)


def _nothing_to(role: str, status: RoleStatus, action: str) -> str:
    """Why a pause or resume of a role with no process is refused, and what to do."""
    if status == RoleStatus.STARTING:
        return f"{role} is starting: nothing to {action} yet; try again once it is booting"
    return f"{role} is {status}: nothing to {action}; `choragos restart {role}` starts it again"
