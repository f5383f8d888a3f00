"""Budgets that block, enforced where the money is spent: in the gateway.

A role (or the whole session) with ``budget_action = "block"`` gets no
model call through the built-in gateway once its budget is spent: the
request is answered by the gateway itself, in the error shape every
agent's SDK reads (see :func:`choragos.gateway.proxy.error_body`), with a message
naming the budget and how to raise it, and nothing is counted.  The call
that crosses the budget is finished and counted: the next one is refused.

The session sends the gateway its policy (:func:`policy`) as one JSON line
on the gateway's stdin, at start and whenever a budget changes (a reload,
``choragos budget``); :class:`BudgetGate` keeps the latest one and is
asked before each request is forwarded.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from choragos.gateway.client import DIRECTIONS
from choragos.gateway.costs import cost_text, priced

BLOCKING = ("block", "cut")
STATUS = 402  # not retried by the agents' SDKs, unlike 429 or 5xx
KIND = "budget_exceeded"


def policy(config: Any) -> dict:
    """What the gateway must know to block: the blocking budgets and the prices."""
    roles = {r.name: {"usd": r.budget, "tokens": r.budget_tokens, "action": r.budget_action}
             for r in config.roles if r.budget_action in BLOCKING
             and (r.budget is not None or r.budget_tokens is not None)}
    session = config.budget.session if config.budget.action in BLOCKING else None
    pricing = {prefix: {d: getattr(price, d) for d in DIRECTIONS}
               for prefix, price in config.pricing.items()}
    return {"roles": roles, "session": session, "pricing": pricing}


class _Price:
    def __init__(self, values: Mapping[str, float]) -> None:
        for direction in DIRECTIONS:
            setattr(self, direction, float(values.get(direction, 0.0) or 0.0))


class BudgetGate:
    """The latest policy, and the refusal a spent budget gives a request."""

    def __init__(self, tokens: Callable[[], Mapping[tuple[str, str, str], int]]) -> None:
        self._tokens = tokens  # (agent, model, direction) -> count, the gateway's own
        self._policy: dict = {"roles": {}, "session": None, "pricing": {}}
        self._lock = threading.Lock()
        self._blocked: set[str] = set()  # roles refused since their last call let through

    def verdict(self, role: str) -> tuple[str | None, bool]:
        """Why ``role``'s call is refused (or None), and whether it is the first
        let through since a refusal: the session then knows the block is over."""
        why = self.refusal(role)
        with self._lock:
            was = role in self._blocked
            if why is None:
                self._blocked.discard(role)
            else:
                self._blocked.add(role)
        return why, why is None and was

    def update(self, news: dict) -> bool:
        """Take a ``{"budgets": ...}`` line; False for anything else."""
        body = news.get("budgets")
        if not isinstance(body, dict):
            return False
        with self._lock:
            self._policy = {"roles": dict(body.get("roles") or {}),
                            "session": body.get("session"),
                            "pricing": dict(body.get("pricing") or {})}
        return True

    def cuts(self, role: str) -> bool:
        """``role``'s budget ends an answer that crosses it (``budget_action = "cut"``)."""
        with self._lock:
            own = self._policy["roles"].get(role)
        return isinstance(own, dict) and own.get("action") == "cut"

    def refusal(self, role: str, running: tuple[str, Mapping[str, int]] | None = None
                ) -> str | None:
        """Why ``role``'s next call may not go out, or None.  ``running``: the
        model and the usage an answer still streaming has reported so far,
        counted as spent too."""
        with self._lock:
            rules = self._policy
        by_role = _by_role(self._tokens())
        if running is not None:
            model, counts = running
            mine = by_role.setdefault(role, {}).setdefault(model, {})
            for direction, value in counts.items():
                mine[direction] = mine.get(direction, 0) + value
        own = rules["roles"].get(role)
        if isinstance(own, dict):
            spent = self._over(by_role.get(role, {}), own.get("usd"), own.get("tokens"),
                               rules["pricing"])
            if spent and " tokens of " in spent:  # only the config sets a token budget
                return (f"choragos: the token budget of role {role} is spent ({spent}); no "
                        f"more model calls go out for it. The operator can raise its "
                        f"budget_tokens in .choragos.toml and run `choragos reload --loosen`.")
            if spent:
                return (f"choragos: the budget of role {role} is spent ({spent}); no more "
                        f"model calls go out for it. The operator can raise it with "
                        f"`choragos budget {role} AMOUNT`, or in .choragos.toml and "
                        f"`choragos reload --loosen`.")
        cap = rules["session"]
        if isinstance(cap, int | float):
            cost = sum(c for c in (priced(models, _pricer(rules["pricing"]))
                                   for models in by_role.values()) if c is not None)
            if cost >= cap:
                return (f"choragos: the session's budget is spent ({cost_text(cost)} of "
                        f"{cost_text(cap)}); no more model calls go out for any role. The "
                        f"operator can raise it with `choragos budget --session AMOUNT`, or "
                        f"in .choragos.toml ([budget] session) and `choragos reload --loosen`.")
        return None

    @staticmethod
    def _over(models: dict, usd: Any, tokens: Any, pricing: dict) -> str | None:
        if isinstance(usd, int | float):
            cost = priced(models, _pricer(pricing))
            if cost is not None and cost >= usd:
                return f"{cost_text(cost)} of {cost_text(usd)}"
        if isinstance(tokens, int):
            used = sum(sum(counts.values()) for counts in models.values())
            if used >= tokens:
                return f"{used} tokens of {tokens}"
        return None


def _by_role(tokens: Mapping[tuple[str, str, str], int]) -> dict[str, dict[str, dict[str, int]]]:
    out: dict[str, dict[str, dict[str, int]]] = {}
    for (agent, model, direction), value in tokens.items():
        out.setdefault(agent, {}).setdefault(model, {})[direction] = value
    return out


def _pricer(pricing: dict) -> Callable[[str], _Price | None]:
    """As the session prices (``Config.price_for``): the longest prefix, else the
    table's highest price in each direction, so an unpriced model still
    reaches a USD budget, never later than it should."""
    def price_for(model: str) -> _Price | None:
        hits = [prefix for prefix in pricing if model.startswith(prefix)]
        if hits:
            return _Price(pricing[max(hits, key=len)])
        if not pricing:
            return None
        return _Price({d: max(float(p.get(d) or 0.0) for p in pricing.values())
                       for d in DIRECTIONS})
    return price_for
