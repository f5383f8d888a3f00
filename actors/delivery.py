"""Delivery queues: one line at a time into each role, when it is ready.

A policy of the session core.  Every line for a role (a task, a report, a
notice) waits in its seat's queue and is typed only when the role says it
is ready, one at a time; the role's outcome decides what happens next: the
task is delivered (its clock starts), held for the next ready view, typed
again into the next process, given another round, or made the operator's
to see to.  Each line is typed only once its journal record is on disk,
so a restart knows it may have reached the agent.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING

from choragos import statedir
from choragos.actors import messages as m
from choragos.actors.coreport import CorePort
from choragos.actors.fresh import FreshContexts
from choragos.actors.guardrails import Guardrails
from choragos.actors.timeouts import Timeouts
from choragos.actors.workcheck import fingerprint_owned
from choragos.board.tasks import Task, TaskState
from choragos.plural import counted
from choragos.roles import briefs
from choragos.roles.rolestatus import RoleStatus
from choragos.session import hopstamps

if TYPE_CHECKING:
    from choragos.actors.core import CoreState, Seat

log = logging.getLogger("choragos.core")
# A role in these states has no process that read what was being typed:
# a line cut off by the exit is for the next one.
LOST_WITH_PROCESS = (RoleStatus.STARTING, RoleStatus.EXITED, RoleStatus.FAILED,
                     RoleStatus.BOOTING)
# More rounds for a report or notice a live agent did not show: each is typed
# (and retyped once) when the role is next ready, behind what came meanwhile.
LINE_ROUNDS = 1
SKIPPED_LISTED = 20  # unreadable paths a checkpoint event names (and counts them all)


class Delivery:
    """A policy of the core: owns the delivery queues' numbering and the
    rounds each line a live agent missed (the queues sit in the seats)."""

    def __init__(self, port: CorePort, s: CoreState, fresh: FreshContexts, guard: Guardrails,
                 timeouts: Timeouts) -> None:
        self.port, self.s = port, s
        self.fresh, self.guard, self.timeouts = fresh, guard, timeouts
        # Tasks whose checkpoint failed: each goes out unprotected, and a turn
        # it misses does not try (and fail loudly) again.
        self.unprotected: set[str] = set()
        self.held_said: dict[str, float] = {}  # role: the busy hold last said (its start)

    def enqueue(self, role: str, text: str, kind: str, task_id: str | None = None,
                front: bool = False) -> None:
        seat = self.s.seats[role]
        injection = m.Injection(self.s.next_injection, role, text, kind, task_id)
        self.s.next_injection += 1
        self.port.journal("enqueue", id=injection.id, role=role, text=text, what=kind,
                     task=task_id, front=front)
        if front:
            seat.queue.appendleft(injection)
        else:
            seat.queue.append(injection)
        self.pump(seat)

    def pump(self, seat: Seat) -> None:
        if seat.in_flight is not None or not seat.queue or seat.name in self.s.snapping:
            return
        if not seat.view.ready:
            self._busy_held(seat)
            return
        if seat.name in self.s.budget.refused:
            return  # its model calls are refused (said so once): typed when that is over
        if self._checkpoint_first(seat):
            return
        injection = seat.queue.popleft()
        if self.fresh.restart_first(seat, injection):
            return
        if injection.kind == "task":
            task = self.s.board.get(injection.task_id)
            # Taken for this turn: on the board before the line goes, in one
            # record.  A failed checkpoint ("") leaves the board's none: the
            # task goes out unprotected.  Fingerprints kept from a turn before
            # a kill stay: the line may have reached the agent then.
            changes = ({"checkpoint": ref} if (ref := self.s.snapped.pop(task.id, None))
                       else {})
            if task.state is TaskState.QUEUED and task.owned is None:
                changes.update(fingerprint_owned(self.s, task))
            if changes:
                task = self.port.annotate(task.id, **changes)
            self._write_worker_file(seat.name, task)
        seat.in_flight = injection
        self.port.journal("inflight", id=injection.id, role=seat.name)
        if hopstamps.ON:
            hopstamps.mark("inject-queued", seat.name)
        # Typed only once on disk: a restart must know it may have reached the agent.
        self.port.tell_when_synced(seat.handle, m.Inject(injection))

    def _checkpoint_first(self, seat: Seat) -> bool:
        """True when the task next in line is first checkpointed: the workspace
        as it is at its turn, not when it was queued (behind other tasks whose
        work would then count as its own).  Nothing is typed into the role
        until the checkpointer answers (:meth:`checkpointed`)."""
        head = seat.queue[0]
        if (head.kind != "task" or self.s.checkpointer is None or head.task_id in self.s.snapped
                or head.task_id in self.unprotected):
            return False
        task = self.s.board.get(head.task_id)
        if task.checkpoint is not None or task.state is not TaskState.QUEUED:
            return False
        self.s.snapping[seat.name] = task.id
        at_work = frozenset(self.s.board.tasks.at_work)  # indexed: no walk of the board
        self.s.checkpointer.tell(m.Snapshot(task.id, task.role, task.label,
                                            tree=self.s.trees.get(task.role), at_work=at_work))
        return True

    def checkpointed(self, msg: m.CheckpointDone) -> None:
        """The checkpointer's answer, logged; the task's line is typed now, with
        the checkpoint on the board.  One the role cannot take now (it turned
        busy meanwhile, its view was older than the line typed before) is for
        this turn only: the tree may change before the next, so it is taken
        again then."""
        role = next((name for name, task_id in self.s.snapping.items()
                     if task_id == msg.task_id), None)
        if role is not None:
            del self.s.snapping[role]
        task = self.s.board.get(msg.task_id)
        if msg.ref:
            # What it could not read is not in it: a rollback would not
            # bring it back, so the log names it.
            unread = ({"skipped": list(msg.skipped[:SKIPPED_LISTED]),
                       "skipped_count": len(msg.skipped)} if msg.skipped else {})
            self.port.event("checkpoint", task=task.id, ref=msg.ref, seconds=msg.seconds,
                            **unread)
        else:
            # A failed snapshot is logged and never blocks the delivery.
            self.port.event("checkpoint failed", task=task.id, error=msg.error)
            self.unprotected.add(task.id)
        if role not in self.s.seats:
            return
        if role == task.role:  # (one moved to another role meanwhile takes its own there)
            self.s.snapped[task.id] = msg.ref or ""
        self.pump(self.s.seats[role])
        self.s.snapped.pop(task.id, None)  # not typed now: stale by its turn

    def _turn_missed(self, injection: m.Injection) -> None:
        """A task line put back untyped: its checkpoint and owned files'
        fingerprints are taken again at its turn."""
        task = self.s.board.lookup(injection.task_id) if injection.task_id else None
        if task is None or task.state is not TaskState.QUEUED:
            return
        changes = ({"checkpoint": None} if task.checkpoint and self.s.checkpointer is not None
                   else {})
        if task.owned is not None:
            changes["owned"] = None  # fingerprinted again at its turn, as it is checkpointed
        if changes:
            self.port.annotate(task.id, **changes)

    def _busy_held(self, seat: Seat) -> None:
        """Lines wait on a role whose screen went quiet but whose agent has
        kept wanting the CPU since (at work, starved, stopped, or hung in a
        loop): said once per such hold, as a brief held back is."""
        since = seat.view.busy_held
        if since is None or self.held_said.get(seat.name) == since:
            return
        self.held_said[seat.name] = since
        head = seat.queue[0]
        task = self.s.board.lookup(head.task_id) if head.task_id else None
        self._say_held("lines held", f"{counted(len(seat.queue), 'line')} for {seat.name} waiting",
                       {"role": seat.name, "kind": head.kind, "task": head.task_id,
                        "waiting": len(seat.queue), "detail": seat.view.detail}, task)

    def _say_held(self, event: str, what: str, fields: dict, task: Task | None) -> None:
        """Nothing was typed into a role that has been busy too long: the
        event, a warning, and the input hook (its card says why)."""
        self.port.event(event, **fields)
        log.warning("%s (%s)", what, fields["detail"])
        self.port.alert("on_input", fields["role"], task)

    def _write_worker_file(self, role: str, task: Task) -> None:
        """The role's latest task; the typed line names the per-task copy, so a
        failure here (a full disk) is logged and the delivery goes on."""
        worker_file = self.s.state_dir / f"worker-task-{role}.md"
        try:
            statedir.write_text(worker_file, briefs.document_for(task, self.s.config.role(role)))
        except OSError as exc:
            self.port.event("worker file failed", role=role, task=task.id,
                       error=exc.strerror or str(exc))

    def outcome(self, msg: m.InjectionOutcome) -> None:
        injection = msg.injection
        fields = {"role": msg.role, "kind": injection.kind, "ok": msg.ok,
                  "detail": msg.detail, "task": injection.task_id}
        if injection.kind == "boot" and msg.untouched:
            # Not typed: the agent kept wanting the CPU past the boot's longest wait.
            self._say_held("boot held", f"{msg.role} is not briefed yet", fields, None)
            return
        if injection.kind == "boot":
            self.port.event("boot injection" if msg.final else "boot injection retry", **fields)
            seat = self.s.seats.get(msg.role)
            gone = seat is not None and seat.view.status in (RoleStatus.EXITED,
                                                             RoleStatus.FAILED)
            if msg.final and not msg.ok and not gone:
                # A role that never read its brief waits for work it cannot
                # take: the operator must hear of it.  (One cut off by its
                # exit or a stop is not waiting: its exit is said as such.)
                log.warning("%s did not take its brief (%s)", msg.role, msg.detail)
                self.port.alert("on_input", msg.role, None)
            return
        if not msg.final:
            self.port.event("injection retry", **fields)
            return
        if msg.untouched and (seat := self.s.seats.get(msg.role)) is not None:
            # The pane changed (a turn began, a dialog opened) after the role
            # last said it was ready: hold the line for the next ready view.
            self.port.event("injection held", **fields)
            seat.in_flight = None
            seat.queue.appendleft(injection)
            if injection.kind == "task":
                self._turn_missed(injection)
            return
        self.port.event("injection", **fields)
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
        self.port.journal("injected", id=injection.id, role=msg.role,
                     requeued=any(queued.id == injection.id for queued in seat.queue))
        self.pump(seat)
        self.guard.check_idle()

    def _task_injected(self, seat: Seat, injection: m.Injection,
                       msg: m.InjectionOutcome) -> None:
        task = self.s.board.get(injection.task_id)
        if task.state is not TaskState.QUEUED:
            return  # the worker already reported on it, so it was delivered
        if msg.ok:
            task = self.port.move(task.id, TaskState.DELIVERED)
            self.port.event("delivered", task=task.id, role=task.role)
            if hopstamps.ON:
                hopstamps.mark("delivered", task.role)
            self.timeouts.start(task)
        elif msg.submitted:
            # The Enter went in before the agent died: it may have begun the
            # task, and typing it into the next process could do it twice.
            self.port.fail_task(task, f"{msg.detail} after the task was submitted, before it "
                                 f"was confirmed; not typed again")
        elif seat.view.status in LOST_WITH_PROCESS:
            seat.queue.appendleft(injection)  # never submitted: deliver after the role is back
            self._turn_missed(injection)
        else:
            self.port.fail_task(task, f"could not be typed into {task.role}: {msg.detail}")

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
            self.port.event("injection requeued", role=seat.name, kind=injection.kind,
                       task=injection.task_id, detail=msg.detail)
            return
        where = ("is left in its input: press Enter in its pane or clear it (nothing more "
                 "is typed into it until then)" if msg.left_in_input
                 else "was not typed: see the event log for its text")
        log.warning("%s did not take a %s (%s); it %s", seat.name, injection.kind,
                    msg.detail, where)
        self.port.event("line not taken", role=seat.name, kind=injection.kind,
                   task=injection.task_id, detail=msg.detail, text=injection.text)
        task = self.s.board.lookup(injection.task_id) if injection.task_id else None
        self.port.alert("on_input", seat.name, task)
