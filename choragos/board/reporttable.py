"""The report's table, one row per role, and its header line: what
``choragos report`` prints in a terminal and what the session page
(``reportpage.py``) shows, from one place.  Standard library only."""

from __future__ import annotations

import time
from collections.abc import Callable

from choragos.board import report
from choragos.durations import format_duration
from choragos.gateway import costs
from choragos.inert import inert

COLUMNS = [("role", "ROLE"), ("tasks", "TASKS"), ("done", "DONE"), ("failed", "FAILED"),
           ("blocked", "BLOCKED"), ("budget", "BUDGET"), ("busy", "BUSY"),
           ("avg", "AVG"), ("first", "FIRST"), ("last", "LAST"), ("tokens", "TOKENS"),
           ("cost", "COST")]

PriceFor = Callable[[str], object]


def header(summary: report.Report) -> str:
    """``run <start> · wall <duration> · <directories>``."""
    runs = "run" if summary.runs == 1 else f"{summary.runs} runs from"
    where = ", ".join(inert(d) for d in summary.dirs) or "directory unknown"
    return f"{runs} {local_time(summary.start)} · wall {format_duration(summary.wall)} · {where}"


def row(stats: report.RoleStats, price_for: PriceFor) -> dict[str, object]:
    """One role's cells, keyed as :data:`COLUMNS`."""
    # A role that was never handed work (the orchestrator) has no task numbers.
    idle = stats.tasks == 0 and stats.done + stats.failed + stats.blocked == 0
    avg = stats.avg
    cost, guess = role_cost(stats, price_for), costs.estimated(stats.models, price_for)
    return {"role": stats.name,
            "tasks": "-" if idle else stats.tasks,
            "done": "-" if idle else stats.done,
            "failed": "-" if idle else stats.failed,
            "blocked": "-" if idle else stats.blocked,
            "budget": budget_text(stats.budget, stats.over_budget),
            "busy": "-" if idle else format_duration(stats.busy),
            "avg": "-" if avg is None else format_duration(avg),
            "first": clock(stats.first), "last": clock(stats.last),
            "tokens": tokens_text(stats.tokens),
            "cost": "n/a" if cost is None else costs.cost_text(cost, bool(guess))}


def role_cost(stats: report.RoleStats, price_for: PriceFor) -> float | None:
    return costs.priced(stats.models, price_for)


def budget_text(budget: dict | None, over: bool) -> str:
    """``$1.00``, ``$1.00 over`` (crossed during the run), or ``-`` without a budget."""
    if not budget:
        return "-"
    caps = [f"${budget['usd']:.2f}" if _is_number(budget.get("usd")) else "",
            f"{tokens_text({'input': budget['tokens']})} tok"
            if _is_number(budget.get("tokens")) else ""]
    return "/".join(c for c in caps if c) + (" over" if over else "")


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def tokens_text(tokens: dict[str, int] | None) -> str:
    """All tokens a role's models handled, compactly: ``950``, ``184.2k``, ``1.4M``."""
    if tokens is None:
        return "n/a"
    total = sum(tokens.values())
    if total < 1000:
        return str(total)
    if total < 1_000_000:
        return f"{total / 1000:.1f}k"
    return f"{total / 1_000_000:.1f}M"


def local_time(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


def clock(t: float | None) -> str:
    return "-" if t is None else time.strftime("%H:%M:%S", time.localtime(t))
