"""Provider limits: reading them from an API's answer, and waiting them out.

Every vendor says "not now" its own way.  Anthropic answers 429 (a rate
limit) or 529 (overloaded) with ``retry-after`` and an
``anthropic-ratelimit-<kind>-reset`` timestamp per limit it keeps; OpenAI
answers 429 with ``retry-after``/``retry-after-ms`` and
``x-ratelimit-reset-<kind>`` durations (Go-style, ``6m0s``); Gemini answers
429 ``RESOURCE_EXHAUSTED`` with a ``google.rpc.RetryInfo`` detail whose
``retryDelay`` says how long.  :func:`read_answer` turns any of them into
one :class:`Limit` with the wall-clock time it lifts, when the answer says.

:class:`LimitWatch` is the policy the session follows once a role hit a
limit: one episode per limit (so one event and one hook), the time to set
the role going again (the reset plus a little jitter, or a capped back-off
when the limit comes straight back), and whether it has lasted past the
give-up.  It owns only its own state and is handed ``now``, so it is tested
with a table, no clock.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from choragos.durations import parse_duration

LIMIT_STATUSES = frozenset({429, 529})
BODY_KEEP = 64 * 1024  # an error answer is read for its retry delay up to this
BACKOFF_CAP = 1800.0   # a limit that keeps coming back is retried at least this often
JITTER_SHARE = 0.05    # of the wait, added at random so a crew does not wake as one
JITTER_MAX = 30.0
# A limit seen again this soon after the role was set going counts as the same
# one coming back: the wait doubles.
REPEAT_WINDOW = 600.0


@dataclass(frozen=True)
class Limit:
    """A provider said "not now" to a role."""

    kind: str           # "rate limit" | "overloaded" | "quota" | "usage limit"
    source: str         # the API ("anthropic", "openai", "gemini") or "screen"
    until: float | None  # wall-clock seconds when it lifts; None: not said
    detail: str = ""    # what the provider said, shortened

    def describe(self) -> str:
        return f"{self.kind} ({self.source})" + (f": {self.detail}" if self.detail else "")


def read_answer(api: str, status: int, headers: Mapping[str, str], body: bytes,
                now: float) -> Limit | None:
    """The limit an upstream answer reports, or None for any other answer.

    ``headers`` keys must be lower case; ``body`` may be cut short (only
    the start of an error answer is kept).
    """
    error = _error_object(body)
    exhausted = str(error.get("status", "")).upper() == "RESOURCE_EXHAUSTED"
    if status not in LIMIT_STATUSES and not exhausted:
        return None
    code = str(error.get("code") or error.get("type") or "")
    if status == 529 or "overloaded" in code:
        kind = "overloaded"
    elif "quota" in code or "billing" in code:
        kind = "quota"
    else:
        kind = "rate limit"
    said = [w for w in (_retry_after(headers, now), _gemini_delay(error, now)) if w]
    spent, every = _vendor_resets(headers, now)
    waits = said + spent or every  # a limit not spent does not hold the role
    until = max(waits) if waits else None
    message = str(error.get("message") or "").strip().splitlines()
    return Limit(kind, api, until, message[0][:200] if message else f"HTTP {status}")


_SPAN = re.compile(r"(\d+(?:\.\d+)?)\s*(days?|d|hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)\b",
                   re.IGNORECASE)
_UNIT_SECONDS = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0}
_IN = re.compile(r"\b(?:in|after)\s+((?:\d+(?:\.\d+)?\s*[a-z]+[\s,]*(?:and\s+)?)+)",
                 re.IGNORECASE)
_WHEN = r"\b(?:resets?|reset at|try again at|retry at)\s+(?:at\s+)?"
_CLOCK = r"(\d{1,2})(?::(\d{2}))?\s*(am|pm)?\b"
_AT = re.compile(_WHEN + _CLOCK, re.IGNORECASE)
# A reset on another day, as Claude Code ("resets Dec 9, 3am", "resets Jan 5,
# 2027, 3:30pm") and Codex ("try again at Dec 9th, 2026 3:05 PM") say it.
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_ON = re.compile(_WHEN + r"(" + "|".join(_MONTHS) + r")[a-z]*\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?"
                 r"\s+(?:(\d{4}),?\s+)?(?:at\s+)?" + _CLOCK, re.IGNORECASE)


def read_screen(line: str, now: float) -> Limit:
    """The limit an agent CLI's own notice describes: "resets 3am", "try
    again in 2 hours 5 minutes", "retry in 37.5s"; the time is the machine's
    local time, as the CLI shows it."""
    if re.search(r"usage|quota|you[’']ve hit your", line, re.IGNORECASE):
        kind = "usage limit"
    elif re.search(r"\boverloaded\b", line, re.IGNORECASE):
        kind = "overloaded"
    else:
        kind = "rate limit"
    return Limit(kind, "screen", _screen_until(line, now), line[:200])


def _screen_until(line: str, now: float) -> float | None:
    span = _IN.search(line)
    if span:
        parts = _SPAN.findall(span.group(1))
        if parts:
            return now + sum(float(n) * _UNIT_SECONDS[unit[0].lower()] for n, unit in parts)
    dated = _ON.search(line)
    if dated is not None:
        return _on_day(dated, now)
    clock = _AT.search(line)
    if clock is None:
        return None
    time_of_day = _time_of_day(*clock.groups())
    if time_of_day is None:
        return None
    today = datetime.fromtimestamp(now).replace(hour=time_of_day[0], minute=time_of_day[1],
                                                 second=0, microsecond=0)
    when = today.timestamp()
    # The CLI shows the minute, not the second: a reset in the minute just
    # begun is today's (at once), not tomorrow's.
    return when if when > now - 60 else (today + timedelta(days=1)).timestamp()


def _time_of_day(hour: str, minute: str | None, half: str | None) -> tuple[int, int] | None:
    """(hour, minute) on a 24-hour clock, or None for a time no clock shows."""
    hours, minutes, half = int(hour), int(minute or 0), (half or "").lower()
    if (half and not 1 <= hours <= 12) or hours > 23 or minutes > 59:
        return None
    return (hours % 12 + (12 if half == "pm" else 0) if half else hours), minutes


def _on_day(found: re.Match, now: float) -> float | None:
    """A month, day, maybe a year, and a time of day, in local time; without
    a year, the next such day (a reset is never long past)."""
    month, day, year = _MONTHS.index(found.group(1)[:3].lower()) + 1, int(found.group(2)), \
        found.group(3)
    time_of_day = _time_of_day(*found.groups()[3:])
    today = datetime.fromtimestamp(now)
    if time_of_day is None:
        return None
    try:
        when = datetime(int(year) if year else today.year, month, day, *time_of_day)
        if not year and when.timestamp() < now - 86400:
            when = when.replace(year=today.year + 1)
    except ValueError:  # no such day (Feb 30)
        return None
    return when.timestamp()


def _error_object(body: bytes) -> dict:
    try:
        data = json.loads(body.decode("utf-8", "replace"))
    except ValueError:
        return {}
    if isinstance(data, list) and data:  # Gemini's streaming endpoint wraps it in a list
        data = data[0]
    error = data.get("error") if isinstance(data, dict) else None
    return error if isinstance(error, dict) else {}


def _retry_after(headers: Mapping[str, str], now: float) -> float | None:
    millis = _number(headers.get("retry-after-ms", ""))
    if millis is not None:
        return now + millis / 1000
    raw = headers.get("retry-after", "").strip()
    seconds = _number(raw)
    if seconds is not None:
        return now + seconds
    # Loaded here: the email package is a megabyte the server would hold for
    # the rare limit that gives a date.
    import email.utils

    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    return when.timestamp() if when is not None else None


def _vendor_resets(headers: Mapping[str, str], now: float) -> tuple[list[float], list[float]]:
    """The resets of the limits that are spent, and of every limit named."""
    resets: dict[str, float] = {}  # the header saying what is left -> when it resets
    for name, value in headers.items():
        if name.startswith("anthropic-ratelimit-") and name.endswith("-reset"):
            when, left = _timestamp(value), name[:-len("reset")]
        elif name.startswith("x-ratelimit-reset-"):
            when = _after(value, now)
            left = "x-ratelimit-remaining-" + name[len("x-ratelimit-reset-"):]
        else:
            continue
        if when is not None:
            resets[left] = when
    spent = [when for left, when in resets.items() if _spent(headers, left)]
    return spent, list(resets.values())


def _spent(headers: Mapping[str, str], left: str) -> bool:
    """The limit the header ``left`` names is spent: its remaining count is 0,
    or (a subscription's ``anthropic-ratelimit-unified-...``) its status is
    ``rejected``."""
    if left.startswith("anthropic-ratelimit-"):
        return (headers.get(left + "remaining", "").strip() == "0"
                or headers.get(left + "status", "").strip().lower() == "rejected")
    return headers.get(left, "").strip() == "0"


def _gemini_delay(error: dict, now: float) -> float | None:
    for detail in error.get("details") or ():
        if isinstance(detail, dict) and str(detail.get("@type", "")).endswith("RetryInfo"):
            wait = _after(str(detail.get("retryDelay", "")), now)
            if wait is not None:
                return wait
    return None


def _after(text: str, now: float) -> float | None:
    try:
        return now + parse_duration(text.strip())
    except ValueError:
        return None


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


def _timestamp(text: str) -> float | None:
    """An RFC 3339 time, or (a subscription's unified limits) Unix seconds."""
    seconds = _number(text.strip())
    if seconds is not None:
        return seconds
    try:
        return datetime.fromisoformat(text.strip().replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


# ---- waiting a limit out ------------------------------------------------------------


@dataclass
class Episode:
    """One role's limit, from the first "not now" until it is over; its times
    on the clock the watch is handed (the session's is monotonic)."""

    limit: Limit
    first: float          # when it was first seen
    wake: float           # when the role is set going again
    repeats: int = 0      # how often it came straight back
    token: int = 0        # names the wake-up timer that is current
    woke: float | None = None  # when the role was last set going
    due: float = 0.0      # the wake before its jitter: what a report again is compared with


@dataclass(frozen=True)
class Seen:
    """What the session does with a limit just reported."""

    episode: Episode
    new: bool  # first report of this limit: the event, the hook, the card


@dataclass(frozen=True)
class Wake:
    """What the session does at an episode's wake-up time."""

    give_up: bool  # the limit lasted past the give-up: a failure, not a wait
    lasted: float


def _random() -> float:
    """A uniform draw in [0, 1); random is imported at the first (0.24 MB a
    server at rest need not hold)."""
    import random

    return random.random()


@dataclass
class LimitWatch:
    """The limits the crew's roles are under, one episode per role."""

    default_wait: float = 60.0   # when the provider does not say for how long
    give_up: float = 8 * 3600.0
    rng: Callable[[], float] = field(default=_random)
    episodes: dict[str, Episode] = field(default_factory=dict)
    _tokens: int = 0

    def seen(self, role: str, limit: Limit, now: float) -> Seen | None:
        """A limit reported for ``role``; None when it adds nothing (a retry
        hitting the same limit before its reset)."""
        episode = self.episodes.get(role)
        if episode is not None and episode.woke is None:
            # Compared without the jitter: a retry hitting the same reset is no
            # news, whatever jitter a new draw would give it.
            due, later = self._wake(limit, now, episode.repeats, episode.first)
            if due <= episode.due + 1.0:
                return None
            episode.due, episode.wake, episode.limit = due, later, limit
            episode.token = self._token()
            return Seen(episode, new=False)
        repeats = 0
        first = now
        if episode is not None and episode.woke is not None and now - episode.woke < REPEAT_WINDOW:
            repeats, first = episode.repeats + 1, episode.first
        due, wake = self._wake(limit, now, repeats, first)
        episode = Episode(limit, first, wake, repeats, self._token(), due=due)
        self.episodes[role] = episode
        return Seen(episode, new=True)

    def wake(self, role: str, token: int, now: float) -> Wake | None:
        """The wake-up timer ``token`` is due; None when it is stale."""
        episode = self.episodes.get(role)
        if episode is None or episode.token != token or episode.woke is not None:
            return None
        episode.woke = now
        lasted = now - episode.first
        if lasted >= self.give_up:
            del self.episodes[role]
            return Wake(give_up=True, lasted=lasted)
        return Wake(give_up=False, lasted=lasted)

    def lifted(self, role: str) -> Episode | None:
        """The provider answered the role again before the wake-up: it is over."""
        episode = self.episodes.get(role)
        if episode is None or episode.woke is not None:
            return None
        episode.woke = episode.wake
        episode.token = self._token()
        return episode

    def forget(self, role: str) -> None:
        self.episodes.pop(role, None)

    def limited(self, role: str) -> Episode | None:
        episode = self.episodes.get(role)
        return episode if episode is not None and episode.woke is None else None

    def _wake(self, limit: Limit, now: float, repeats: int, first: float
              ) -> tuple[float, float]:
        """When the limit is due to lift as said (or backed off), and the wake:
        that plus the jitter."""
        wait = limit.until - now if limit.until is not None else self.default_wait
        if repeats:
            # The exponent is bounded: past the cap it changes nothing, and an
            # unbounded one overflows a float after about a thousand repeats.
            wait = max(wait, min(self.default_wait * 2 ** min(repeats, 64), BACKOFF_CAP))
        wait = max(wait, 0.0)
        # Never past the give-up by more than the jitter: a limit that will
        # outlast it is reported when the give-up comes, not hours later.
        wait = min(wait, max(self.give_up - (now - first), 0.0))
        return now + wait, now + wait + min(wait * JITTER_SHARE, JITTER_MAX) * self.rng()

    def _token(self) -> int:
        self._tokens += 1
        return self._tokens
