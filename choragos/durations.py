"""Durations written the way people (and Go tools) write them: ``45m``, ``1h30m``.

Configs copied from the Go tool carry Go duration strings, so the grammar is
Go's ``time.ParseDuration``: one or more ``<number><unit>`` pairs, decimals
allowed, units ``ns us µs ms s m h``.  Negative durations are refused: nothing
in choragos can wait a negative amount of time.
"""

from __future__ import annotations

import json
import math
import re

from choragos.inert import inert
from choragos.onuse import pattern

__all__ = ["format_duration", "parse_duration"]

_UNITS = {
    "ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3,
    "s": 1.0, "m": 60.0, "h": 3600.0,
}
# Longer units first so "ms" is not read as "m" followed by garbage.
_UNIT_RE = "|".join(sorted((re.escape(u) for u in _UNITS), key=len, reverse=True))
_PART = pattern(rf"(\d+(?:\.\d*)?|\.\d+)({_UNIT_RE})")
_EXAMPLES = "(use 45m, 1h30m, 90s)"


def parse_duration(text: str) -> float:
    """Return the number of seconds ``text`` stands for; ValueError if it is not a duration."""
    if not isinstance(text, str):
        raise ValueError(f"{text!r} is not a duration {_EXAMPLES}")
    if text == "":
        raise ValueError(f"an empty string is not a duration {_EXAMPLES}")
    if text.startswith("-"):
        raise ValueError(f"{_quote(text)} is negative; a duration must be 0 or more")
    body = text[1:] if text.startswith("+") else text
    if body == "0":
        return 0.0  # Go's one unitless spelling
    return _sum_parts(text, body)


def _sum_parts(text: str, body: str) -> float:
    total, pos = 0.0, 0
    while pos < len(body):
        match = _PART().match(body, pos)
        if match is None:
            raise ValueError(_complaint(text, body))
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if not body or not math.isfinite(total):
        raise ValueError(_complaint(text, body))
    return total


def _complaint(text: str, body: str) -> str:
    if re.fullmatch(r"\d+(\.\d*)?", body):
        return f"{_quote(text)} has no unit {_EXAMPLES}"
    return f"{_quote(text)} is not a duration {_EXAMPLES}"


def _quote(text: str) -> str:
    # Escaped, because config values end up on the operator's terminal: json
    # for the C0 controls, inert for the C1 ones and bidi.
    return inert(json.dumps(text, ensure_ascii=False))


def format_duration(seconds: float) -> str:
    """Render seconds compactly for reports: ``1h12m``, ``8m43s``, ``52s``, ``250ms``.

    Hours drop the seconds and minutes drop nothing; zero parts are left out
    (``2h``, ``5m``).  Sub-second values keep milliseconds so a quick task does
    not read as ``0s``.  The output parses back with :func:`parse_duration`.
    """
    if not math.isfinite(seconds):
        raise ValueError(f"{seconds!r} seconds cannot be shown as a duration")
    if seconds < 0:
        # Clock steps can make an end precede its start; show it, do not crash a report.
        return "-" + format_duration(-seconds)
    if 0 < seconds < 0.9995:
        return f"{round(seconds * 1000)}ms"
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m" if minutes else f"{hours}h"
    if minutes:
        return f"{minutes}m{secs}s" if secs else f"{minutes}m"
    return f"{secs}s"
