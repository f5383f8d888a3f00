"""What tokens cost: counts per model priced with ``[pricing]`` (USD per million).

Standard library only, so ``choragos report`` can price a log without the
session's dependencies.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

DIRECTIONS = ("input", "output", "cache_read", "cache_creation")


class _Price(Protocol):
    input: float
    output: float
    cache_read: float
    cache_creation: float


def priced(models: Mapping[str, Mapping[str, int]],
           price_for: Callable[[str], _Price | None]) -> float | None:
    """USD for a role's tokens over its models; None without counts, or when
    a model has no price (a partial sum would read as the whole cost)."""
    if not models:
        return None
    total = 0.0
    for model, counts in models.items():
        price = price_for(model)
        if price is None:
            return None
        total += sum(counts.get(d, 0) * getattr(price, d) for d in DIRECTIONS) / 1e6
    return total


def estimated(models: Mapping[str, Mapping[str, int]],
              price_for: Callable[[str], _Price | None]) -> list[str]:
    """The models among ``models`` priced by estimate (``[pricing]`` has no entry)."""
    return sorted(m for m in models if getattr(price_for(m), "estimated", False))


def cost_text(cost: float, estimate: bool = False) -> str:
    """Dollars; sub-cent costs keep four decimals so early spending is visible.
    An estimate reads ``~$1.20``."""
    text = f"${cost:.4f}" if cost < 0.01 else f"${cost:.2f}"
    return "~" + text if estimate else text
