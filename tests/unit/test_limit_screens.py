"""Each agent CLI's own limit screens, captured from the real CLIs against the fakes.

claude_idle_limit_429: Claude Code 2.1.197 told 429 with ``x-should-retry:
false`` (it stops at once); claude_working_retry_429: the same CLI still
retrying a 429 by itself; codex_idle_limit_429 and codex_idle_usage_limit:
Codex 0.171.0 after its retries of a 429, and told ``usage_limit_reached``;
gemini_waiting_usage_limit: Gemini CLI 0.61.0 told RESOURCE_EXHAUSTED with a
per-day QuotaFailure, which it shows as a dialog.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from choragos.agents.profiles import profile_named
from choragos.agents.screenstatus import (
    IDLE,
    LIMIT_DIALOG_TAIL,
    LIMIT_TAIL,
    WAITING,
    WORKING,
    classify,
    limit_notice,
)
from choragos.gateway.limits import read_screen

SCREENS = Path(__file__).resolve().parents[1] / "fixtures" / "screens"
NOW = 1_800_000_000.0

LIMIT_SCREENS = {
    "claude_idle_limit_429": (IDLE, "rate limit",
                              "● API Error: Request rejected (429) · Number of request tokens"),
    "codex_idle_limit_429": (IDLE, "rate limit",
                             "■ exceeded retry limit, last status: 429 Too Many Requests"),
    "codex_idle_usage_limit": (IDLE, "usage limit", "■ You’ve hit your usage limit."),
    "gemini_waiting_usage_limit": (WAITING, "usage limit",
                                   "Usage limit reached for all Pro models."),
}


def _screen(name: str) -> list[str]:
    return (SCREENS / f"{name}.txt").read_text().split("\n")


def _tail(state: str) -> int:
    return LIMIT_DIALOG_TAIL if state == WAITING else LIMIT_TAIL


@pytest.mark.parametrize("name", sorted(LIMIT_SCREENS))
def test_each_clis_limit_screen_is_seen(name: str) -> None:
    state, kind, start = LIMIT_SCREENS[name]
    profile = profile_named(name.split("_")[0])
    lines = _screen(name)
    assert classify(lines, profile) == state
    notice = limit_notice(lines, profile, _tail(state))
    assert notice is not None and notice.startswith(start)
    limit = read_screen(notice, NOW)
    assert (limit.kind, limit.source, limit.until) == (kind, "screen", None)


def test_a_cli_still_retrying_by_itself_is_at_work_not_limited() -> None:
    lines = _screen("claude_working_retry_429")
    assert classify(lines, profile_named("claude")) == WORKING
    assert limit_notice(lines, profile_named("claude")) is None


@pytest.mark.parametrize("path", sorted(p for p in SCREENS.glob("*.txt")
                                        if p.stem not in LIMIT_SCREENS),
                         ids=lambda p: p.stem)
def test_no_other_capture_shows_a_limit(path: Path) -> None:
    profile = profile_named(path.stem.split("_")[0])
    lines = path.read_text().split("\n")
    assert limit_notice(lines, profile, LIMIT_DIALOG_TAIL) is None


def test_an_old_notice_the_agent_went_on_from_is_not_seen() -> None:
    lines = _screen("claude_idle_limit_429")
    at = next(i for i, line in enumerate(lines) if "API Error" in line)
    later = [*lines[:at + 1], "", "❯ Continue", "", "● Done: wrote hello.txt", "",
             "✻ Baked for 2s", "", *lines[at + 1:]]
    assert classify(later, profile_named("claude")) == IDLE
    assert limit_notice(later, profile_named("claude")) is None
    assert limit_notice(lines, profile_named("claude")) is not None


@pytest.mark.parametrize(("line", "seen"), [
    # Claude Code 2.1's subscription notices (hJ() in its code), and its warnings
    ("⎿  You've hit your session limit · resets 3am (UTC)", True),
    ("  You've hit your weekly limit · resets Dec 9, 3am (UTC)", True),
    ("  You've used 90% of your session limit · resets 3am (UTC)", False),
    ("  Approaching usage limit · resets 3am (UTC)", False),
])
def test_claude_codes_subscription_limit_notice_is_seen(line: str, seen: bool) -> None:
    screen = ["● Working on it.", line, "", "╭────╮", "│ >  │", "╰────╯"]
    notice = limit_notice(screen, profile_named("claude"))
    assert (notice is not None) is seen


def test_claude_code_giving_up_on_an_overload_is_seen_as_one():
    """Claude Code 2.1.197's words once its own retries of an overload (a
    mid-stream overloaded_error, then 529s) are spent, as the real CLI drew
    them (tests/e2e/test_limit_seats.py), in the 429 capture's place."""
    lines = ["● API Error: Repeated 529 Overloaded errors. The API is at capacity — this is "
             "usually temporary. Try again in a",
             "moment. If it persists, check your inference gateway (127.0.0.1:35805)."]
    screen = _screen("claude_idle_limit_429")
    at = next(n for n, line in enumerate(screen) if line.startswith("● API Error"))
    screen[at:at + 1] = lines
    profile = profile_named("claude")
    assert classify(screen, profile) == IDLE
    notice = limit_notice(screen, profile)
    assert notice == lines[0]
    limit = read_screen(notice, NOW)
    assert (limit.kind, limit.source, limit.until) == ("overloaded", "screen", None)
