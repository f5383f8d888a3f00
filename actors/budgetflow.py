"""Blocking budgets in the session core: the gateway's policy and the budget verb.

A policy of the core, beside the guardrails.  The guardrails notice a budget
crossed (from the token counts the prober reads) and ring once; a budget
with ``budget_action = "block"`` is also enforced in the built-in gateway,
which refuses the role's next model calls by itself (see
:mod:`choragos.gateway.budgetgate`).  This keeps the gateway's policy in step with
the config (a reload, ``choragos budget``) and says why a call was refused:
an event, and a note on the role's open tasks on the board.  A role refused
is held: nothing queued for it is typed (each line would only be refused
again) until the block is over.  When the operator's raise ends it, the
held lines go on, and the agent holding the task the refusal stopped is
told to continue it once it rests idle at its prompt: its CLI gave up the
turn and would otherwise sit there all night.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from choragos.actors import messages as m
from choragos.actors.coreport import CorePort, unknown_roles
from choragos.actors.guardrails import Guardrails, budget_summary
from choragos.actors.policystate import BudgetState
from choragos.actors.proxyrunner import SetBudgets
from choragos.config import schema as cs
from choragos.config.model import Config
from choragos.control import wire
from choragos.gateway import budgetgate
from choragos.gateway.costs import cost_text
from choragos.roles import briefs

if TYPE_CHECKING:
    from choragos.actors.core import CoreState
    from choragos.actors.delivery import Delivery

BLOCKED_NOTE = "model calls blocked: "
CONTINUE = briefs.budget_continue_line("")[:40]  # how the continue line starts


class BudgetFlow:
    """A policy of the core: owns what the gateway last refused, per role;
    the guardrails it is given ring when a budget is crossed."""

    def __init__(self, port: CorePort, s: CoreState, guard: Guardrails,
                 delivery: Delivery) -> None:
        self.port, self.s, self.guard, self.delivery = port, s, guard, delivery
        self.state: BudgetState = s.budget

    def changed(self, before: Config) -> dict[str, str]:
        """The config's budgets changed (a reload, the budget verb): said, sent
        to the gateway, and checked again (a changed cap re-arms, or fires at once).
        Returns the roles still refused, with why."""
        summary = budget_summary(self.s.config)
        if summary != budget_summary(before):
            self.port.event("budgets", **(summary or {"roles": {}, "session": None}))
        held = self._send_budgets()
        self.guard.check_budgets()
        return held

    def _send_budgets(self) -> dict[str, str]:
        """The gateway's policy follows the config; a role it no longer refuses
        (as the session counts) goes on, one still over stays held, and its
        next refusal is news again."""
        policy = budgetgate.policy(self.s.config)
        if self.s.gateway_runner is not None:
            self.s.gateway_runner.tell(SetBudgets(policy))
        gate = budgetgate.BudgetGate(lambda: _flat(self.s.tokens))
        gate.update({"budgets": policy})
        held = {}
        for role in list(self.state.refused):
            why = gate.refusal(role)
            if why is None:
                self._clear_blocked(role, raised=True)
            else:
                self.state.refused[role] = ""  # still held; said again when next refused
                self._note(role, why)
                held[role] = why
        return held

    def _clear_blocked(self, role: str, raised: bool = False) -> None:
        """The block is over: the board's note goes, the lines held go on, and
        (when the operator's raise ended it) an agent idle with its task stopped
        by the refusal is told to continue."""
        self.state.refused.pop(role, None)
        for task in self.s.board.open_for(role):
            if task.note.startswith(BLOCKED_NOTE):
                self.port.annotate(task.id, note="")
        seat = self.s.seats.get(role)
        if seat is None:
            return
        task = self.guard.held_task(role)
        if raised and task is not None:
            # Queued, not typed: the delivery types it once the agent rests
            # idle at its prompt (it may still be drawing the refusal).
            self.port.event("budget continue", role=role, task=task.id)
            self.port.enqueue(role, briefs.budget_continue_line(task.id), "notice", task.id,
                              front=True)
        else:
            self.delivery.pump(seat)

    def _went_on(self, role: str) -> None:
        """A call of ``role`` went through before its continue line was typed:
        the agent went on by itself, so the line is not typed after all."""
        seat = self.s.seats.get(role)
        for line in [i for i in (seat.queue if seat else ()) if i.kind == "notice"
                     and i.text.startswith(CONTINUE)]:
            seat.queue.remove(line)
            self.port.journal("injected", id=line.id, role=role, requeued=False)

    def command(self, request: dict) -> dict:
        try:
            amount = cs.money(request["amount"])
        except ValueError as exc:
            return wire.error(f"{exc}; no budget was changed")
        before = self.s.config
        role = request.get("role")
        if request.get("session"):
            self.s.config = replace(before, budget=replace(before.budget, session=amount))
            who = "the session"
        elif role not in self.s.seats:
            return wire.error(unknown_roles([role], self.s.seats))
        else:
            self.s.config = replace(before, roles=tuple(
                replace(r, budget=amount) if r.name == role else r for r in before.roles))
            who = role
        self.port.event("budget set", role=None if request.get("session") else role,
                        scope="session" if request.get("session") else "role", usd=amount,
                        by="operator")
        held = self.changed(before)
        still = "".join(f"; {name}'s model calls are still refused: "
                        f"{why.removeprefix('choragos: ')}" for name, why in held.items())
        return wire.ok(message=f"the budget of {who} is now {cost_text(amount)} (until a "
                               f"reload re-reads the config){still}")

    def refused(self, msg: m.BudgetRefused) -> None:
        """Said once per refusal reason: an agent retrying its call is not news."""
        if not msg.why:  # a call went through again: the block is over
            self._went_on(msg.role)
            self._clear_blocked(msg.role)
            return
        if self.state.refused.get(msg.role) == msg.why:
            return
        self.state.refused[msg.role] = msg.why
        self.port.event("model call refused", role=msg.role, why=msg.why)
        self._note(msg.role, msg.why)

    def _note(self, role: str, why: str) -> None:
        note = BLOCKED_NOTE + why.removeprefix("choragos: ").split(";")[0]
        for task in self.s.board.open_for(role):
            if task.note != note:
                self.port.annotate(task.id, note=note)


def _flat(tokens: dict) -> dict[tuple[str, str, str], int]:
    """The session's totals (role -> model -> direction -> count) as the gateway keeps its own."""
    return {(role, model, direction): count for role, models in tokens.items()
            for model, counts in models.items() for direction, count in counts.items()}
