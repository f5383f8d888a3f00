"""Blocking budgets in the session core: the gateway's policy and the budget verb.

Mixed into the core like the guardrails.  The guardrails notice a budget
crossed (from the token counts the prober reads) and ring once; a budget
with ``budget_action = "block"`` is also enforced in the built-in gateway,
which refuses the role's next model calls by itself (see
:mod:`choragos.budgetgate`).  This keeps the gateway's policy in step with
the config (a reload, ``choragos budget``) and says why a call was refused:
an event, and a note on the role's open tasks on the board.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from choragos import budgetgate, news, wire
from choragos import configschema as cs
from choragos.actors import messages as m
from choragos.actors.gatewayserver import SetBudgets
from choragos.costs import cost_text

BLOCKED_NOTE = "model calls blocked: "


class BudgetFlow:
    """Mixed into CoreActor; ``self.s`` is its CoreState."""

    s: Any

    def _send_budgets(self) -> None:
        """The gateway's policy follows the config; a refusal after it is news again."""
        if self.s.gateway_runner is not None:
            self.s.gateway_runner.tell(SetBudgets(budgetgate.policy(self.s.config)))
        for role in list(self.s.refused):
            self._clear_blocked(role)

    def _clear_blocked(self, role: str) -> None:
        """The board's note about ``role``'s blocked calls goes with the block."""
        self.s.refused.pop(role, None)
        for task in self.s.board.open_for(role):
            if task.note.startswith(BLOCKED_NOTE):
                changed = self.s.board.annotate(task.id, note="")
                self.publish(news.TaskChanged(changed.as_dict()))

    def _cmd_budget(self, request: dict) -> dict:
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
            return wire.error(self._unknown_roles([role]))
        else:
            self.s.config = replace(before, roles=tuple(
                replace(r, budget=amount) if r.name == role else r for r in before.roles))
            who = role
        self.event("budget set", role=None if request.get("session") else role,
                    scope="session" if request.get("session") else "role", usd=amount,
                    by="operator")
        self._budgets_changed(before)
        return wire.ok(message=f"the budget of {who} is now {cost_text(amount)} (until a "
                               f"reload re-reads the config)")

    def _budget_refused(self, msg: m.BudgetRefused) -> None:
        """Said once per refusal reason: an agent retrying its call is not news."""
        if not msg.why:  # a call went through again: the block is over
            self._clear_blocked(msg.role)
            return
        if self.s.refused.get(msg.role) == msg.why:
            return
        self.s.refused[msg.role] = msg.why
        self.event("model call refused", role=msg.role, why=msg.why)
        note = BLOCKED_NOTE + msg.why.removeprefix("choragos: ").split(";")[0]
        for task in self.s.board.open_for(msg.role):
            if task.note != note:
                changed = self.s.board.annotate(task.id, note=note)
                self.publish(news.TaskChanged(changed.as_dict()))
