"""The gateway's health and the token counts, as the core keeps them.

A policy of the session core.  The prober tells the core whether the
gateway is up and what each role's models used; the counts are published
(with each role's cost and budget), checked against the budgets by the
guardrails on every reading, and journaled and logged as ``tokens``
events every 30 s, when they moved.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from choragos.actors.coreport import CorePort
from choragos.actors.guardrails import Guardrails
from choragos.actors.latemessages import FlushTokens, GatewayHealth, TokenTotals
from choragos.gateway.client import role_cost, role_estimated, role_tokens
from choragos.session import news

if TYPE_CHECKING:
    from choragos.actors.core import CoreState


class TokenUsage:
    """Keeps the gateway's state and the token totals in the core's state
    (``gateway``, ``tokens``, ``flushed``), which a resume restores."""

    def __init__(self, port: CorePort, s: CoreState, guard: Guardrails) -> None:
        self.port, self.s, self.guard = port, s, guard

    def of(self, role: str) -> dict:
        models = self.s.tokens.get(role, {})
        return {"tokens": role_tokens(models), "cost": role_cost(self.s.config, models),
                "estimated": role_estimated(self.s.config, models),
                "budget": self.guard.budget_of(role)}

    def gateway_health(self, msg: GatewayHealth) -> None:
        self.s.gateway = "on" if msg.up else "down"
        self.port.event("gateway up" if msg.up else "gateway down", reason=msg.reason)
        self.port.publish(news.GatewayChanged(self.s.gateway))

    def totals(self, msg: TokenTotals) -> None:
        changed = msg.totals != self.s.tokens
        self.s.tokens = msg.totals
        # Every reading, not only a changed one: a role over budget at the first
        # reading (resumed with its totals, or read before its seat existed) is
        # flagged now, not when its tokens next move.  Each alarm fires once.
        self.guard.check_budgets()
        if changed:
            self.guard.check_prices()
            self.port.publish(news.TokensChanged(news.role_usages(self.usages())))

    def usages(self) -> dict[str, dict]:
        return {role: self.of(role) for role in self.s.tokens}

    def flush(self, msg: FlushTokens) -> None:
        # Not published: a snapshot every 30 s would only crowd the deck's event view.
        if self.s.tokens == self.s.flushed and not msg.force:
            return
        self.s.flushed = self.s.tokens
        self.port.journal("tokens", totals=self.s.tokens)
        for role, models in self.s.tokens.items():
            for model, counts in models.items():
                self.s.events.write("tokens", role=role, model=model, **counts)
