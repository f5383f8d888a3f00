"""The session core: roster, task board, gate queue, delivery queues.

Every control-socket request arrives here as ``Dispatch`` (an ``ask`` from
the listener); everything the roles report arrives as ``tell``.  The core
never waits on a role: it sends one injection at a time per role and moves
on when the role reports the outcome.  State changes are published to
subscribers (the UI actor later) and written to the event log.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import singledispatchmethod
from pathlib import Path
from typing import Any

from choragos import __version__, authority, briefs, commands, news, statedir, wire
from choragos.actors import durable
from choragos.actors import messages as m
from choragos.actors.admission import Admission, MemoryCheck, RoleHeld
from choragos.actors.aftercare import AftercareFailed, MergeDone, WorkChecked
from choragos.actors.base import Actor
from choragos.actors.budgetflow import BudgetFlow
from choragos.actors.clocks import PauseClocks, ResumeClocks, StartClock, StopClock, TimedOut
from choragos.actors.durable import Heartbeat, Restore, SaveLayout
from choragos.actors.fresh import FreshContexts
from choragos.actors.gateway import FlushTokens, GatewayHealth, TokenTotals
from choragos.actors.guardrails import Guardrails, GuardState, IdleCheck
from choragos.actors.holds import Holds
from choragos.actors.isolationrestore import IsolationRestore
from choragos.actors.judging import JudgeLoop
from choragos.actors.limitflow import LimitFlow
from choragos.actors.mergeflow import MergeFlow
from choragos.actors.rollbackcmd import RollbackCommand
from choragos.actors.workcheck import WorkChecks
from choragos.board import SETTLED_STATES, Board, BoardError, Task, TaskState
from choragos.config import Config, ConfigError
from choragos.events import EventLog
from choragos.gateway import Totals, role_cost, role_estimated, role_tokens
from choragos.memfloor import HELD_MARK
from choragos.rolestatus import RoleStatus

log = logging.getLogger("choragos.core")
# A role in these states has no process that read what was being typed:
# a line cut off by the exit is for the next one.
LOST_WITH_PROCESS = (RoleStatus.EXITED, RoleStatus.FAILED, RoleStatus.BOOTING)
# More rounds for a report or notice a live agent did not show: each is typed
# (and retyped once) when the role is next ready, behind what came meanwhile.
LINE_ROUNDS = 1


@dataclass
class Seat:
    """The core's view of one role: its address, state and delivery queue."""

    name: str
    handle: Any
    view: m.RoleView
    queue: deque = field(default_factory=deque)
    in_flight: m.Injection | None = None


@dataclass
class CoreState:
    config: Config
    workdir: Path
    events: EventLog
    board: Board = field(default_factory=Board)
    seats: dict[str, Seat] = field(default_factory=dict)
    gates: OrderedDict = field(default_factory=OrderedDict)
    subscribers: list[Callable[[Any], None]] = field(default_factory=list)
    checkpointer: Any = None
    next_injection: int = 1
    on_shutdown: Callable[[], None] = lambda: None
    reloader: Any = None  # the Session, when the team came from a config file
    hooks: Any = None     # choragos.hooks.Hooks
    clocks: Any = None    # the timeout clocks actor
    gateway: str | None = None  # "on" | "down" | "off"; None when never configured
    tokens: Totals = field(default_factory=dict)   # latest scrape
    flushed: Totals = field(default_factory=dict)  # what the last "tokens" events said
    journal: Any = None   # choragos.journal.Journal, when the session is durable
    guard: GuardState = field(default_factory=GuardState)
    timers: Any = None  # actors.timers.Timers, for the idle alarm
    me: Any = None      # this core's own handle, the idle alarm's target
    heartbeat: Any = None  # the pending "alive" timer, while a timeout clock runs
    aftercare: Any = None  # actors.aftercare: changes and verify after a work-done
    held: dict = field(default_factory=dict)  # report lines waiting for their checks
    trees: dict = field(default_factory=dict)   # worktree roles: name -> their worktree
    merges: OrderedDict = field(default_factory=OrderedDict)  # merge gates, by task id
    holds: OrderedDict = field(default_factory=OrderedDict)   # work held for a person
    verdicts: dict = field(default_factory=dict)  # judge task id -> what it judges
    checked: dict = field(default_factory=dict)  # task id -> the branch commit its checks saw
    used: set = field(default_factory=set)  # fresh roles given a task since they started
    prints: dict = field(default_factory=dict)  # task id -> owned files when it went out
    rounds: dict = field(default_factory=dict)  # injection id -> rounds a live agent missed
    limits: Any = None  # choragos.limits.LimitWatch: the provider limits roles wait out
    limit_continue: set = field(default_factory=set)  # roles set going after a limit
    gateway_runner: Any = None  # the built-in gateway's actor, told the blocking budgets
    refused: dict = field(default_factory=dict)  # role -> why the gateway last refused it
    # role name -> the environment its agent process gets (verify runs with it)
    role_env: Callable[[str], dict[str, str] | None] = lambda name: None
    memory_gate: Any = None  # choragos.memfloor.MemoryGate, shared with the role actors
    memory_check: Any = None  # the pending memory reading, while a role is held

    @property
    def state_dir(self) -> Path:
        return self.workdir / ".choragos"

    @property
    def start_role(self) -> str:
        return self.config.start_role.name


class CoreActor(Admission, IsolationRestore, FreshContexts, JudgeLoop, Holds, MergeFlow,
                WorkChecks, Guardrails, LimitFlow, BudgetFlow, RollbackCommand, Actor):
    def __init__(self, state: CoreState, supervisor: Any = None) -> None:
        super().__init__("core", supervisor)
        self.s = state
        self._unsaved: list[str] = []
        if isinstance(state.board, durable.JournaledBoard):
            state.board.on_unsaved = self._note_unsaved

    @singledispatchmethod
    def handle(self, message: Any) -> Any:
        return super().handle(message)

    def on_receive(self, message: Any) -> Any:
        # What could not be journaled (a full disk) is logged and the ack says so;
        # the listener holds each ack until the journal is on disk (group commit).
        self._unsaved = []
        result = super().on_receive(message)
        return durable.settle(self, result, self._unsaved)

    # -- the journal (see actors/durable.py) -------------------------------------

    def journal(self, kind: str, **fields: Any) -> None:
        if self.s.journal is not None:
            try:
                self.s.journal.append(kind, **fields)
            except OSError as exc:
                self._note_unsaved(exc)
            if kind == "clock":
                durable.arm_heartbeat(self)

    def _note_unsaved(self, exc: OSError) -> None:
        self._unsaved.append(exc.strerror or str(exc))

    @handle.register
    def _restore(self, msg: Restore) -> None:
        durable.restore_into(self, msg.image)

    @handle.register
    def _heartbeat(self, msg: Heartbeat) -> None:
        durable.heartbeat(self)

    @handle.register
    def _save_layout(self, msg: SaveLayout) -> None:
        self.journal("layout", layout=msg.layout)

    # -- publishing --------------------------------------------------------

    def event(self, event: str, **fields: Any) -> None:
        record = self.s.events.write(event, **fields)
        self.publish(news.EventLogged(record))

    @handle.register
    def _announced(self, msg: m.Announce) -> None:
        """An event another actor wrote (the checkpointer's rollback)."""
        self.publish(news.EventLogged(msg.record))

    def publish(self, item: Any) -> None:
        for callback in list(self.s.subscribers):
            try:
                callback(item)
            except Exception:
                log.exception("subscriber failed")

    @handle.register
    def _subscribe(self, msg: m.Subscribe) -> None:
        self.s.subscribers.append(msg.callback)
        # A late subscriber (the deck) would otherwise wait for the next change.
        if self.s.gateway is not None:
            msg.callback(news.GatewayChanged(self.s.gateway))
        if self.s.tokens:
            msg.callback(news.TokensChanged(self._usages()))
        if self.s.guard.marks:
            msg.callback(news.MarksChanged(dict(self.s.guard.marks)))

    # -- control requests --------------------------------------------------

    @handle.register
    def _dispatch(self, msg: m.Dispatch) -> dict:
        request = msg.request
        if msg.expires is not None and time.monotonic() > msg.expires:
            return wire.error("the session core was too busy to take the request in time; "
                              "nothing was changed, try again", busy=True)
        # Each command names its handler in choragos/commands.py.
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
        return wire.ok()

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
                          "queued": len(seat.queue), **self._usage(seat.name),
                          "marks": list(self.s.guard.marks.get(seat.name, ()))})
        return wire.ok(roles=roles, gateway=self.s.gateway, budget=self._session_budget())

    def _usage(self, role: str) -> dict:
        models = self.s.tokens.get(role, {})
        return {"tokens": role_tokens(models), "cost": role_cost(self.s.config, models),
                "estimated": role_estimated(self.s.config, models),
                "budget": self._budget_of(role)}

    def _cmd_board(self, request: dict) -> dict:
        return wire.ok(tasks=self.s.board.snapshot(request.get("archived", False)),
                       archived=len(self.s.board.archive),
                       archived_by=self.s.board.archived_counts())

    def _cmd_reload(self, request: dict) -> dict:
        """Live reload: converge the roles on the re-read config (see choragos/reloadplan.py)."""
        reloader = self.s.reloader
        if reloader is None:
            return wire.error("this session runs the built-in team, so there is no config "
                              "to re-read; write a .choragos.toml and restart the session")
        try:
            plan = reloader.plan(self.s.config, self._busy_roles())
        except ConfigError as exc:
            self.event("reload refused", errors=exc.errors)
            return wire.error("the config has errors, nothing changed: " + "; ".join(exc.errors))
        before, self.s.config = self.s.config, plan.config
        for name in plan.remove:
            self._remove_seat(name)
        for spec in plan.add:
            self.s.seats[spec.name] = reloader.add_role(spec)
        for spec in plan.respawn:
            reloader.respawn_role(spec)
        for spec in plan.update:
            reloader.update_role(spec)
        reloader.stop_roles(plan.remove)
        self.event("reload", **plan.summary())
        self.journal("reload", **plan.summary())
        self._budgets_changed(before)
        self._limits_reconfigured()
        if plan.add or plan.remove:
            reloader.write_briefs(self.s.config)
            self.enqueue(self.s.start_role, briefs.team_changed_line(
                [r.name for r in plan.add], plan.remove,
                f".choragos/briefs/{self.s.start_role}.md"), "notice")
        return wire.ok(message=_reload_message(plan), **plan.summary())

    def _busy_roles(self) -> set[str]:
        busy = {task.role for task in self.s.board.tasks.values() if task.is_open}
        return busy | {name for name, seat in self.s.seats.items()
                       if seat.queue or seat.in_flight}

    def _remove_seat(self, name: str) -> None:
        seat = self.s.seats.pop(name, None)
        if seat is None:
            return
        self._limits().forget(name)
        self.journal("drop queue", role=name)
        for task_id in [t for t, task in self.s.gates.items() if task.role == name]:
            task = self.s.gates.pop(task_id)
            self.move(task_id, TaskState.REJECTED, note="role removed by reload")
        for task in self.s.board.open_for(name):
            self.fail_task(task, f"{name} was removed from the team by a reload")

    def _cmd_restart(self, request: dict) -> dict:
        return self._role_control(request["role"], "restart")

    def _cmd_pause(self, request: dict) -> dict:
        return self._role_control(request["role"], "pause")

    def _cmd_resume(self, request: dict) -> dict:
        return self._role_control(request["role"], "resume")

    def _cmd_input(self, request: dict) -> dict:
        """Operator keys into a role: how a headless user answers a dialog."""
        role = request["role"]
        seat = self.s.seats.get(role)
        if seat is None:
            return wire.error(self._unknown_roles([role]))
        if seat.view.status in (RoleStatus.EXITED, RoleStatus.FAILED):
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
            return wire.error(self._unknown_roles([role]))
        message = {"restart": m.Restart(), "pause": m.Pause(), "resume": m.Resume()}[action]
        seat.handle.tell(message)
        self.event(f"role {action}", role=role, by="operator")
        if action != "restart":
            self.journal("role", role=role, paused=action == "pause")
        return wire.ok(role=role, action=action)

    # -- delegate -------------------------------------------------

    def _unknown_roles(self, names: list[str]) -> str:
        known = ", ".join(self.s.seats)
        return f"unknown role {', '.join(names)}; this team has: {known}"

    def _cmd_delegate(self, request: dict) -> dict:
        targets = list(dict.fromkeys(request["to"]))
        unknown = [name for name in targets if name not in self.s.seats]
        if unknown:
            return wire.error(self._unknown_roles(unknown))
        down = self._down_roles(targets)
        if down and request.get("require_live"):
            return wire.error("; ".join(down.values()) + "; nothing was delegated")
        try:
            created = self.record_tasks(targets, request)
        except OSError as exc:
            return wire.error(not_recorded(exc, "delegation"))
        created = [self.route_task(task) for task in created]
        extra = {"warnings": [f"{why}; the task waits for it" for why in down.values()]}
        return wire.ok(tasks=[{"id": t.id, "role": t.role, "state": str(t.state)}
                              for t in created], **(extra if down else {}))

    def record_tasks(self, targets: list[str], request: dict) -> list[Task]:
        """Journal every task (in one write: all or none) with its file, then
        its event; on a failure the board forgets them all and their files go,
        so a refused delegation leaves nothing behind."""
        created: list[Task] = []
        try:
            with self._journal_batch():
                for role in targets:
                    created.append(self.s.board.create(role, request["task"],
                                                       request.get("brief")))
                    self.write_task_file(created[-1])
            records = [self.s.events.append("delegate", task=t.id, role=t.role, label=t.label,
                                            brief=t.brief, text=t.text) for t in created]
        except OSError:
            self._unrecord(created)
            raise
        for record in records:
            self.publish(news.EventLogged(record))
        return created

    def _journal_batch(self) -> contextlib.AbstractContextManager:
        journal = self.s.journal
        return journal.batch() if journal is not None else contextlib.nullcontext()

    def _unrecord(self, tasks: list[Task]) -> None:
        ids = [task.id for task in tasks]
        self.s.board.forget(ids)
        for task_id in ids:
            with contextlib.suppress(FileNotFoundError):
                (self.s.state_dir / "tasks" / f"{task_id}.md").unlink()

    def route_task(self, task: Task) -> Task:
        role = task.role
        if self.s.config.role(role).approve:
            task = self.move(task.id, TaskState.GATED)
            self.s.gates[task.id] = task
            self.event("delegate gated", task=task.id, role=role, label=task.label)
            self.publish(news.GateOpened(task.as_dict()))
            self.alert("on_gate", role, task)
        else:
            self._checkpoint_then_queue(task)
        return task

    def write_task_file(self, task: Task) -> Path:
        path = self.s.state_dir / "tasks" / f"{task.id}.md"
        template = self.s.config.role(task.role).prompt_template
        _write_text(path, briefs.task_document(task, template))
        return path

    def move(self, task_id: str, state: TaskState, **changes: Any) -> Task:
        task = self.s.board.move(task_id, state, **changes)
        if state in SETTLED_STATES:
            self.s.prints.pop(task_id, None)  # no report of it is checked again
        self.publish(news.TaskChanged(task.as_dict()))
        self._guard_tasks()
        return task

    def annotate(self, task_id: str, **changes: Any) -> Task:
        task = self.s.board.annotate(task_id, **changes)
        self.publish(news.TaskChanged(task.as_dict()))
        return task

    def settle(self, task: Task, state: TaskState, **changes: Any) -> Task:
        """Move (or annotate) the task; what it waited on is over unless said again."""
        changes.setdefault("waiting", None)
        if task.state is state:
            return self.annotate(task.id, **changes)
        return self.move(task.id, state, **changes)

    def later(self, seconds: float, message: Any) -> Any:
        if self.s.timers is None or self.s.me is None:
            return None
        return self.s.timers.after(seconds, self.s.me, message)

    def _checkpoint_then_queue(self, task: Task) -> None:
        if self.s.checkpointer is None:
            self.queue_task(task)
            return
        at_work = frozenset(t.id for t in self.s.board.tasks.values()
                            if t.state not in SETTLED_STATES)
        self.s.checkpointer.tell(m.Snapshot(task.id, task.role, task.label,
                                            tree=self.s.trees.get(task.role), at_work=at_work))

    @handle.register
    def _checkpoint_done(self, msg: m.CheckpointDone) -> None:
        task = self.s.board.get(msg.task_id)
        if msg.ref:
            task = self.s.board.annotate(task.id, checkpoint=msg.ref)
            self.publish(news.TaskChanged(task.as_dict()))
            self.event("checkpoint", task=task.id, ref=msg.ref, seconds=msg.seconds)
        else:
            # A failed snapshot is logged and never blocks the delegation.
            self.event("checkpoint failed", task=task.id, error=msg.error)
        self.queue_task(task)

    def queue_task(self, task: Task) -> None:
        task = self._around_limit(task)
        self._fingerprint_owned(task)
        line = briefs.task_line(task, f".choragos/tasks/{task.id}.md")
        self.enqueue(task.role, line, "task", task.id)

    # -- delivery queues -----------------------------------------------------

    def enqueue(self, role: str, text: str, kind: str, task_id: str | None = None,
                 front: bool = False) -> None:
        seat = self.s.seats[role]
        injection = m.Injection(self.s.next_injection, role, text, kind, task_id)
        self.s.next_injection += 1
        self.journal("enqueue", id=injection.id, role=role, text=text, what=kind,
                      task=task_id, front=front)
        if front:
            seat.queue.appendleft(injection)
        else:
            seat.queue.append(injection)
        self._pump(seat)

    def _pump(self, seat: Seat) -> None:
        if seat.in_flight is not None or not seat.queue or not seat.view.ready:
            return
        injection = seat.queue.popleft()
        if self._restart_first(seat, injection):
            return
        if injection.kind == "task":
            task = self.s.board.get(injection.task_id)
            self._write_worker_file(seat.name, task)
        seat.in_flight = injection
        self.journal("inflight", id=injection.id, role=seat.name)
        # Typed only once on disk: a restart must know it may have reached the agent.
        durable.when_synced(self, lambda: seat.handle.tell(m.Inject(injection)))

    def _write_worker_file(self, role: str, task: Task) -> None:
        """The role's latest task; the typed line names the per-task copy, so a
        failure here (a full disk) is logged and the delivery goes on."""
        worker_file = self.s.state_dir / f"worker-task-{role}.md"
        try:
            _write_text(worker_file, briefs.task_document(
                task, self.s.config.role(role).prompt_template))
        except OSError as exc:
            self.event("worker file failed", role=role, task=task.id,
                        error=exc.strerror or str(exc))

    @handle.register
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
        durable.journal_role(self, msg.view)
        self._after_limit(seat)  # first: its "continue" goes ahead of queued work
        self._pump(seat)
        self._guard_view(before, msg.view)

    def _status_changed(self, role: str, was: str, now: str) -> None:
        if now == RoleStatus.WAITING:
            open_tasks = self.s.board.open_for(role)
            self.alert("on_input", role, open_tasks[0] if open_tasks else None)
        # A task's clock does not run while its role is held (paused, or waiting out a limit).
        held = (RoleStatus.PAUSED, RoleStatus.LIMITED)
        if self.s.clocks is not None and (was in held) != (now in held):
            message = PauseClocks(role) if now in held else ResumeClocks(role)
            self.s.clocks.tell(message)

    def alert(self, hook: str, role: str, task: Task | None) -> None:
        """A human is needed: ring (if [ui] bell) and run the hook, if any."""
        self.ring(hook, role, task.text if task else "", task.id if task else "")

    def ring(self, hook: str, role: str, text: str, task_id: str = "",
             extra: dict[str, str] | None = None) -> None:
        if self.s.config.ui.bell:
            self.publish(news.Bell(role, hook))
        if self.s.hooks is not None:
            self.s.hooks.fire(hook, role=role, task=text, task_id=task_id, extra=extra)

    # -- the gateway ------------------------------------------------

    @handle.register
    def _gateway_health(self, msg: GatewayHealth) -> None:
        self.s.gateway = "on" if msg.up else "down"
        self.event("gateway up" if msg.up else "gateway down", reason=msg.reason)
        self.publish(news.GatewayChanged(self.s.gateway))

    @handle.register
    def _token_totals(self, msg: TokenTotals) -> None:
        changed = msg.totals != self.s.tokens
        self.s.tokens = msg.totals
        # Every reading, not only a changed one: a role over budget at the first
        # reading (resumed with its totals, or read before its seat existed) is
        # flagged now, not when its tokens next move.  Each alarm fires once.
        self._guard_budgets()
        if changed:
            self._guard_prices()
            self.publish(news.TokensChanged(self._usages()))

    def _usages(self) -> dict[str, dict]:
        return {role: self._usage(role) for role in self.s.tokens}

    @handle.register
    def _flush_tokens(self, msg: FlushTokens) -> None:
        # Not published: a snapshot every 30 s would only crowd the deck's event view.
        if self.s.tokens == self.s.flushed and not msg.force:
            return
        self.s.flushed = self.s.tokens
        self.journal("tokens", totals=self.s.tokens)
        for role, models in self.s.tokens.items():
            for model, counts in models.items():
                self.s.events.write("tokens", role=role, model=model, **counts)

    @handle.register
    def _checked(self, msg: WorkChecked) -> None:
        self._work_checked(msg)

    @handle.register
    def _merged(self, msg: MergeDone) -> None:
        self._merge_done(msg)

    @handle.register
    def _aftercare_failed(self, msg: AftercareFailed) -> None:
        self.event(msg.event, task=msg.task_id, error=msg.error)

    @handle.register
    def _idle_check(self, msg: IdleCheck) -> None:
        self._on_idle_check(msg)

    @handle.register
    def _limit_reported(self, msg: m.LimitReported) -> None:
        self._limit_seen(msg.role, msg.limit)

    @handle.register
    def _limit_screen(self, msg: m.LimitOnScreen) -> None:
        self._limit_on_screen(msg)

    @handle.register
    def _limit_due(self, msg: m.LimitWake) -> None:
        self._limit_wake(msg)

    @handle.register
    def _limit_over(self, msg: m.LimitLifted) -> None:
        self._limit_lifted(msg)

    @handle.register
    def _call_refused(self, msg: m.BudgetRefused) -> None:
        self._budget_refused(msg)

    @handle.register
    def _held_for_memory(self, msg: RoleHeld) -> None:
        self._role_held(msg)

    @handle.register
    def _read_memory(self, msg: MemoryCheck) -> None:
        self._memory_check(msg)

    # -- timeouts -------------------------------------------------------

    def _start_clock(self, task: Task) -> None:
        seconds = self.s.config.role(task.role).timeout
        if seconds and self.s.clocks is not None:
            self.s.clocks.tell(StartClock(task.id, task.role, seconds))
            self.journal("clock", action="start", task=task.id, role=task.role,
                          seconds=seconds, left=seconds)

    def _stop_clock(self, task_id: str) -> None:
        if self.s.clocks is not None:
            self.s.clocks.tell(StopClock(task_id))
            self.journal("clock", action="stop", task=task_id)

    @handle.register
    def _timed_out(self, msg: TimedOut) -> None:
        task = self.s.board.get(msg.task_id)
        if task.state is not TaskState.DELIVERED:
            return
        spec = self.s.config.role(task.role)
        action = spec.timeout_action if spec else "notify"
        task = self.move(task.id, TaskState.TIMED_OUT,
                          note=f"no work-done within {msg.seconds:g}s")
        self.journal("clock", action="stop", task=task.id)
        self.event("timeout", task=task.id, role=task.role, seconds=msg.seconds,
                    action=action)
        self.alert("on_timeout", task.role, task)
        if task.id in self.s.verdicts:
            self._judge_lost(task, f"timed out after {msg.seconds:g}s")
        if action == "restart" and task.role in self.s.seats:
            self.s.seats[task.role].handle.tell(m.Kill(f"{task.id} timed out"))

    @handle.register
    def _injection_outcome(self, msg: m.InjectionOutcome) -> None:
        injection = msg.injection
        fields = {"role": msg.role, "kind": injection.kind, "ok": msg.ok,
                  "detail": msg.detail, "task": injection.task_id}
        if injection.kind == "boot":
            self.event("boot injection" if msg.final else "boot injection retry", **fields)
            if msg.final and not msg.ok:
                # A role that never read its brief waits for work it cannot
                # take: the operator must hear of it.
                log.warning("%s did not take its brief (%s)", msg.role, msg.detail)
                self.alert("on_input", msg.role, None)
            return
        if not msg.final:
            self.event("injection retry", **fields)
            return
        if msg.untouched and (seat := self.s.seats.get(msg.role)) is not None:
            # The pane changed (a turn began, a dialog opened) after the role
            # last said it was ready: hold the line for the next ready view.
            self.event("injection held", **fields)
            seat.in_flight = None
            seat.queue.appendleft(injection)
            return
        self.event("injection", **fields)
        seat = self.s.seats.get(msg.role)
        if seat is None:
            return
        seat.in_flight = None
        if injection.kind == "task":
            self._task_injected(seat, injection, msg)
        elif (not msg.ok and seat.name == self.s.start_role
              and seat.view.status in LOST_WITH_PROCESS):
            self._line_again(seat, injection, msg)
        elif not msg.ok and seat.view.status not in LOST_WITH_PROCESS:
            self._line_not_taken(seat, injection, msg)
        else:
            self.s.rounds.pop(injection.id, None)
        self.journal("injected", id=injection.id, role=msg.role,
                      requeued=any(queued.id == injection.id for queued in seat.queue))
        self._pump(seat)
        self._guard_idle()

    def _task_injected(self, seat: Seat, injection: m.Injection,
                       msg: m.InjectionOutcome) -> None:
        task = self.s.board.get(injection.task_id)
        if task.state is not TaskState.QUEUED:
            return  # the worker already reported on it, so it was delivered
        if msg.ok:
            task = self.move(task.id, TaskState.DELIVERED)
            self.event("delivered", task=task.id, role=task.role)
            self._start_clock(task)
        elif msg.submitted:
            # The Enter went in before the agent died: it may have begun the
            # task, and typing it into the next process could do it twice.
            self.fail_task(task, f"{msg.detail} after the task was submitted, before it "
                                  f"was confirmed; not typed again")
        elif seat.view.status in LOST_WITH_PROCESS:
            seat.queue.appendleft(injection)  # never submitted: deliver after the role is back
        else:
            self.fail_task(task, f"could not be typed into {task.role}: {msg.detail}")

    def _line_again(self, seat: Seat, injection: m.Injection,
                    msg: m.InjectionOutcome) -> None:
        """A report or notice for the orchestrator cut off by its exit goes
        to the next process: it must hear of every task, or the crew waits on
        it for good.  One whose Enter went in is marked, in case the agent
        goes on with what it had read.  (A worker's notices are about the
        task its exit just failed.)"""
        if msg.submitted:
            text = briefs.repeated_line(injection.text, f"{seat.name} restarted while it "
                                                        f"was typed")
            injection = replace(injection, text=text)
        seat.queue.appendleft(injection)

    def _line_not_taken(self, seat: Seat, injection: m.Injection,
                        msg: m.InjectionOutcome) -> None:
        """A report or notice a live agent did not take.  One that never
        showed goes to the back of its queue for another round; one left in
        the agent's input (typing it again would double it), or out of
        rounds, is the operator's to see to: it is logged, the bell rings
        and ``on_input`` runs, since whoever waits on it would otherwise
        wait in silence."""
        missed = self.s.rounds.pop(injection.id, 0)
        if not msg.left_in_input and missed < LINE_ROUNDS:
            self.s.rounds[injection.id] = missed + 1
            seat.queue.append(injection)
            self.event("injection requeued", role=seat.name, kind=injection.kind,
                        task=injection.task_id, detail=msg.detail)
            return
        where = ("is left in its input: press Enter in its pane or clear it (nothing more "
                 "is typed into it until then)" if msg.left_in_input
                 else "was not typed: see the event log for its text")
        log.warning("%s did not take a %s (%s); it %s", seat.name, injection.kind,
                    msg.detail, where)
        self.event("line not taken", role=seat.name, kind=injection.kind,
                    task=injection.task_id, detail=msg.detail, text=injection.text)
        task = self.s.board.lookup(injection.task_id) if injection.task_id else None
        self.alert("on_input", seat.name, task)

    def fail_task(self, task: Task, reason: str) -> None:
        self._stop_clock(task.id)
        self.move(task.id, TaskState.FAILED, note=reason)
        self.event("task failed", task=task.id, role=task.role, reason=reason)
        self.enqueue(self.s.start_role, briefs.failure_line(task, reason), "notice", task.id)
        if task.id in self.s.verdicts:
            self._judge_lost(task, f"gave no verdict: {reason}")

    @handle.register
    def _role_exited(self, msg: m.RoleExited) -> None:
        self.event("role exited", role=msg.role, status=msg.status.describe(),
                    restarting=msg.restarting, reason=msg.reason)
        self._guard_exited(msg)
        seat = self.s.seats.get(msg.role)
        if seat is None:
            return
        if msg.role == self.s.start_role:
            return  # reports wait in its queue for the next orchestrator
        for task in self.s.board.open_for(msg.role):
            if task.state not in (TaskState.DELIVERED, TaskState.TIMED_OUT):
                continue
            if msg.redeliver and msg.restarting:
                self.event("task redelivered", task=task.id, role=msg.role,
                            reason=msg.status.describe())
                self.enqueue(task.role, briefs.task_line(task, f".choragos/tasks/{task.id}.md"),
                              "task", task.id, front=True)
            else:
                self.fail_task(task, f"{msg.role} exited ({msg.status.describe()}) "
                                      f"before reporting work-done")

    # -- work-done ------------------------------------------------------

    def _cmd_work_done(self, request: dict) -> dict:
        task_id, summary = request["id"], request["task"]
        report = request.get("report")
        before = self.s.board.lookup(task_id)
        caller = request.get(wire.CALLER)
        if caller and before is not None and caller not in (before.role, self.s.start_role):
            reason = (f"task {task_id} belongs to {before.role}, not to {caller}; "
                      "a role may only report its own tasks")
            self.event("request refused", cmd="work-done", caller=caller, reason=reason)
            return wire.error(reason)
        if request.get("report_text") and before is not None:
            report = self._keep_report(task_id, request["report_text"]) or report
        outcome = request.get("outcome", "done")
        note, role = self._resolve(task_id, summary, report, request.get("done", False),
                                   outcome)
        try:
            record = self.s.events.append("work-done", task=task_id, role=role,
                                          summary=summary, report=report,
                                          done=request.get("done", False), outcome=outcome,
                                          note=note or None, by=caller or "operator")
        except OSError as exc:
            if before is not None:  # write-behind rolled back: the board is as it was
                self.s.board.put_back(before)
                self.publish(news.TaskChanged(before.as_dict()))
            return wire.error(not_recorded(exc, "work-done"))
        self.publish(news.EventLogged(record))
        parts = (task_id, role, summary, report, note, outcome)
        if not self._hold_for_checks(task_id, parts, outcome, note):
            self.enqueue(self.s.start_role, briefs.report_line(*parts), "report", task_id)
        ack = {"id": task_id, "state": outcome if not note else "unmatched"}
        if role == "unknown":
            ack["unknown"] = True  # the verb exits non-zero: the id matched no task
        if note:
            ack["warning"] = f"{note}; the report was still passed to the orchestrator"
        return wire.ok(**ack)

    def _keep_report(self, task_id: str, text: str) -> str | None:
        """A report that came with its work-done (from a role on another
        machine), kept where local reports go; None if it cannot be written."""
        path = self.s.state_dir / "reports" / f"{task_id}.md"
        try:
            statedir.make_dir(path.parent)
            _write_text(path, text)
        except OSError as exc:
            self.event("report not kept", task=task_id, error=exc.strerror or str(exc))
            return None
        return str(path)

    def _resolve(self, task_id: str, summary: str, report: str | None,
                 done: bool, outcome: str = "done") -> tuple[str, str]:
        """Close the board entry; a note explains a report that matches none."""
        try:
            task = self.s.board.get(task_id)
        except BoardError:
            return f"unknown task id {task_id}", "unknown"
        if task.state in (TaskState.DONE, TaskState.REJECTED):
            return f"task {task_id} was already {task.state}", task.role
        if task.state is TaskState.GATED:
            return f"task {task_id} is still waiting at the gate", task.role
        if task.state is TaskState.QUEUED:
            # The worker acted on the task before our confirmation came back.
            self.move(task_id, TaskState.DELIVERED)
            self.event("delivered", task=task_id, role=task.role, by="work-done")
        self._stop_clock(task_id)
        changes = {"summary": summary, "report": report,
                   "note": "" if done or outcome != "done" else "reported without --done"}
        target = TaskState(outcome)
        if self._verifies(task, outcome):  # it counts as done once its verify passes
            changes["checks"] = "verifying"
            self.publish(news.TaskChanged(self.s.board.annotate(task_id, **changes).as_dict()))
            return "", task.role
        if task.state is target:  # e.g. "failed" said again after its worker died on it
            self.publish(news.TaskChanged(self.s.board.annotate(task_id, **changes).as_dict()))
        else:
            self.move(task_id, target, **changes)
        return "", task.role

    # -- gates ----------------------------------------------------------------

    def _cmd_gate(self, request: dict) -> dict:
        action = request["action"]
        if action == "list":
            now = self.s.board.clock()
            return wire.ok(gates=[{"id": t.id, "role": t.role, "label": t.label,
                                   "brief": t.brief, "age": round(now - t.created, 1),
                                   "file": str(self.s.state_dir / "tasks" / f"{t.id}.md")}
                                  for t in self.s.gates.values()] + self._merge_gate_list()
                           + self._hold_list())
        task_id = request["id"]
        if task_id in self.s.merges:
            return self._merge_gate_decision(request)
        if task_id in self.s.holds:
            return self._hold_decision(request)
        if task_id not in self.s.gates:
            return wire.error(f"no delegation {task_id} is waiting at a gate")
        task = self.s.gates.pop(task_id)
        if action == "approve":
            self.event("gate approved", task=task_id, role=task.role)
            task = self.move(task_id, TaskState.QUEUED)
            self._checkpoint_then_queue(task)
        else:
            reason = request.get("reason") or ""
            task = self.move(task_id, TaskState.REJECTED, note=reason)
            self.event("gate rejected", task=task_id, role=task.role, reason=reason)
            self.enqueue(self.s.start_role, briefs.rejection_line(task, reason), "notice",
                          task_id)
        return wire.ok(id=task_id, state=str(task.state))


def _reload_message(plan: Any) -> str:
    parts = [f"{label} {', '.join(names)}" for label, names in (
        ("added", [r.name for r in plan.add]), ("removed", plan.remove),
        ("respawned", [r.name for r in plan.respawn]),
        ("updated", [r.name for r in plan.update])) if names]
    text = "; ".join(parts) if parts else "no role changed"
    extra = plan.refused + plan.notes
    return text + (" (" + "; ".join(extra) + ")" if extra else "")


def not_recorded(exc: OSError, what: str) -> str:
    """The error a caller sees when a write failed: "no space left on device:
    the delegation was not recorded"."""
    reason = exc.strerror or str(exc)
    if not isinstance(exc, statedir.StateDirError):
        reason = reason[:1].lower() + reason[1:]
    return f"{reason}: the {what} was not recorded"


def _write_text(path: Path, text: str) -> None:
    statedir.write_text(path, text)


