"""Provider limits: each vendor's answer read, and the waiting policy as a table."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from choragos.gateway.limits import (
    BACKOFF_CAP,
    REPEAT_WINDOW,
    Limit,
    LimitWatch,
    read_answer,
    read_screen,
)

NOW = 1_800_000_000.0


def _iso(when: float) -> str:
    return datetime.fromtimestamp(when, UTC).isoformat().replace("+00:00", "Z")


def _body(**error: object) -> bytes:
    return json.dumps({"type": "error", "error": error}).encode()


@pytest.mark.parametrize(("api", "status", "headers", "body", "kind", "wait"), [
    # retry-after alone, in seconds or in milliseconds
    ("anthropic", 429, {"retry-after": "30"}, _body(type="rate_limit_error", message="x"),
     "rate limit", 30.0),
    ("openai", 429, {"retry-after-ms": "1500", "retry-after": "2"}, b"", "rate limit", 1.5),
    # Anthropic: the spent limit's reset wins; a limit with room left does not hold the role
    ("anthropic", 429, {"anthropic-ratelimit-tokens-remaining": "0",
                        "anthropic-ratelimit-tokens-reset": _iso(NOW + 42),
                        "anthropic-ratelimit-requests-remaining": "7",
                        "anthropic-ratelimit-requests-reset": _iso(NOW + 3600)},
     b"", "rate limit", 42.0),
    # A subscription's unified limit: Unix seconds, spent when "rejected"
    ("anthropic", 429, {"anthropic-ratelimit-unified-status": "rejected",
                        "anthropic-ratelimit-unified-reset": str(int(NOW + 7200)),
                        "anthropic-ratelimit-unified-7d-status": "allowed",
                        "anthropic-ratelimit-unified-7d-reset": str(int(NOW + 86400))},
     _body(type="rate_limit_error", message="x"), "rate limit", 7200.0),
    # OpenAI's Go-style durations
    ("openai", 429, {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "6m0s",
                     "x-ratelimit-remaining-tokens": "10", "x-ratelimit-reset-tokens": "20ms"},
     b"", "rate limit", 360.0),
    # none spent: every named reset counts
    ("openai", 429, {"x-ratelimit-reset-tokens": "1m30s"}, b"", "rate limit", 90.0),
    # Anthropic overloaded
    ("anthropic", 529, {}, _body(type="overloaded_error", message="Overloaded"),
     "overloaded", None),
    # OpenAI out of quota: no reset said
    ("openai", 429, {}, json.dumps({"error": {"code": "insufficient_quota",
                                              "message": "You exceeded your quota"}}).encode(),
     "quota", None),
    # Gemini's RetryInfo, plain and in the streaming endpoint's list
    ("gemini", 429, {}, json.dumps({"error": {"code": 429, "status": "RESOURCE_EXHAUSTED",
                                              "message": "Quota exceeded", "details": [
                                                  {"@type": "type.googleapis.com/google.rpc."
                                                            "RetryInfo",
                                                   "retryDelay": "37.5s"}]}}).encode(),
     "rate limit", 37.5),
    ("gemini", 429, {}, json.dumps([{"error": {"status": "RESOURCE_EXHAUSTED", "details": [
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "4s"}]}}]).encode(),
     "rate limit", 4.0),
])
def test_each_vendors_limit_answer(api, status, headers, body, kind, wait) -> None:
    limit = read_answer(api, status, headers, body, NOW)
    assert limit is not None and limit.kind == kind and limit.source == api
    assert (limit.until - NOW if limit.until is not None else None) == pytest.approx(wait)


@pytest.mark.parametrize(("status", "body"), [
    (200, b""), (400, _body(type="invalid_request_error", message="bad")), (500, b""),
    (503, _body(type="api_error", message="x")),
])
def test_other_answers_are_no_limit(status, body) -> None:
    assert read_answer("anthropic", status, {"retry-after": "5"}, body, NOW) is None


def test_an_http_date_retry_after_and_a_broken_header() -> None:
    limit = read_answer("openai", 429, {"retry-after": "Fri, 15 Jan 2027 08:00:30 GMT"}, b"",
                        NOW)
    assert limit.until == datetime(2027, 1, 15, 8, 0, 30, tzinfo=UTC).timestamp()
    assert read_answer("openai", 429, {"retry-after": "soon"}, b"{", NOW).until is None
    for odd in ("inf", "nan", "-3"):
        assert read_answer("openai", 429, {"retry-after": odd}, b"", NOW).until is None


def test_the_message_is_kept_short() -> None:
    limit = read_answer("anthropic", 429, {}, _body(message="line one\nline two " + "x" * 500),
                        NOW)
    assert limit.detail == "line one"


@pytest.mark.parametrize(("line", "kind", "wait"), [
    ("You've hit your usage limit. Upgrade to Pro, or try again in 2 hours 5 minutes.",
     "usage limit", 7500.0),
    ("Quota exceeded for quota metric; please retry in 37.5s", "usage limit", 37.5),
    ("⎿  API Error: 429 rate limited", "rate limit", None),
])
def test_a_cli_notice_read_for_its_wait(line, kind, wait) -> None:
    limit = read_screen(line, NOW)
    assert limit.kind == kind and limit.source == "screen"
    assert (limit.until - NOW if limit.until is not None else None) == pytest.approx(wait)


@pytest.mark.parametrize("line", ["Claude usage limit reached. Your limit will reset at 3am",
                                  "5-hour limit reached ∙ resets 3am"])
def test_a_clock_time_is_the_next_one_in_local_time(line) -> None:
    until = read_screen(line, NOW).until
    then = datetime.fromtimestamp(until)
    assert (then.hour, then.minute) == (3, 0)
    assert 0 < until - NOW <= 24 * 3600


@pytest.mark.parametrize(("line", "month", "day", "clock", "year"), [
    # Claude Code 2.1 past a day ahead, and in another year (its Vee())
    ("⎿  You've hit your weekly limit · resets Dec 9, 3am (UTC)", 12, 9, (3, 0), None),
    ("You've hit your limit · resets Jan 5, 2028, 3:30pm (UTC)", 1, 5, (15, 30), 2028),
    # Codex's format_retry_timestamp() past today
    ("■ You’ve hit your usage limit. Upgrade to Plus, or try again at Mar 3rd, 2028 "
     "3:05 PM.", 3, 3, (15, 5), 2028),
])
def test_a_reset_on_another_day_is_read_with_its_date(line, month, day, clock, year) -> None:
    limit = read_screen(line, NOW)
    then = datetime.fromtimestamp(limit.until)
    assert limit.kind == "usage limit"
    assert (then.month, then.day, (then.hour, then.minute)) == (month, day, clock)
    assert limit.until > NOW
    if year is None:  # the next such date
        assert limit.until - NOW < 366 * 86400
    else:
        assert then.year == year


def test_a_reset_in_the_minute_just_begun_is_now_not_tomorrow() -> None:
    """The CLI shows minutes; read 20 s past 3:00 a "resets 3am" is over, not 24 h away."""
    three = datetime.fromtimestamp(NOW).replace(hour=3, minute=0, second=0).timestamp()
    until = read_screen("You've hit your session limit · resets 3am (UTC)", three + 20).until
    assert until == three


# ---- waiting out ----------------------------------------------------------------------


def _limit(wait: float | None, now: float = NOW) -> Limit:
    return Limit("rate limit", "anthropic", None if wait is None else now + wait)


def test_one_episode_per_limit_and_retries_before_the_reset_add_nothing() -> None:
    watch = LimitWatch(default_wait=60, rng=lambda: 0.0)
    first = watch.seen("coder", _limit(30), NOW)
    assert first.new and first.episode.wake == NOW + 30
    assert watch.seen("coder", _limit(29, NOW + 1), NOW + 1) is None  # same reset: nothing
    later = watch.seen("coder", _limit(300, NOW + 2), NOW + 2)
    assert not later.new and later.episode.wake == NOW + 302  # a later reset moves the wake


def test_a_retry_hitting_the_same_reset_is_no_news_whatever_the_jitter() -> None:
    draws = iter([0.0, 1.0, 1.0])
    watch = LimitWatch(rng=lambda: next(draws))
    first = watch.seen("coder", _limit(600), NOW).episode
    assert first.wake == NOW + 600
    assert watch.seen("coder", _limit(599, NOW + 1), NOW + 1) is None  # 30 s more jitter
    later = watch.seen("coder", _limit(900, NOW + 2), NOW + 2)
    assert not later.new and later.episode.wake == NOW + 902 + 30


def test_the_wake_is_the_reset_plus_a_capped_jitter() -> None:
    watch = LimitWatch(rng=lambda: 1.0)
    assert watch.seen("a", _limit(100), NOW).episode.wake == NOW + 100 + 5  # 5 % of the wait
    assert watch.seen("b", _limit(3600), NOW).episode.wake == NOW + 3600 + 30  # at most 30 s
    assert watch.seen("c", _limit(None), NOW).episode.wake == NOW + 60 + 3  # the default wait


def test_a_limit_coming_straight_back_backs_off_up_to_the_cap() -> None:
    watch = LimitWatch(default_wait=10, rng=lambda: 0.0)
    now, waits = NOW, []
    for _ in range(10):
        episode = watch.seen("coder", _limit(1, now), now).episode
        waits.append(episode.wake - now)
        now = episode.wake
        assert watch.wake("coder", episode.token, now).give_up is False
        now += 5  # it comes back soon after the role is set going
    assert waits[:4] == [1, 20, 40, 80]
    assert max(waits) == BACKOFF_CAP


def test_a_limit_back_a_thousand_times_still_waits_the_cap() -> None:
    watch = LimitWatch(default_wait=10.0, give_up=float("inf"), rng=lambda: 0.0)
    now = NOW
    for _ in range(1100):  # past 1024 repeats, where 2 ** n overflows a float
        episode = watch.seen("coder", _limit(1, now), now).episode
        waited = episode.wake - now
        now = episode.wake
        watch.wake("coder", episode.token, now)
        now += 5
    assert episode.repeats >= 1099 and waited == BACKOFF_CAP


def test_a_limit_after_a_quiet_while_starts_over() -> None:
    watch = LimitWatch(default_wait=10, rng=lambda: 0.0)
    episode = watch.seen("coder", _limit(1), NOW).episode
    watch.wake("coder", episode.token, episode.wake)
    again = watch.seen("coder", _limit(1, NOW + REPEAT_WINDOW + 10), NOW + REPEAT_WINDOW + 10)
    assert again.new and again.episode.repeats == 0


def test_the_give_up_fails_a_limit_that_lasts() -> None:
    watch = LimitWatch(default_wait=10, give_up=100, rng=lambda: 0.0)
    episode = watch.seen("coder", _limit(1000), NOW).episode
    assert episode.wake == NOW + 100  # never waits past the give-up
    woke = watch.wake("coder", episode.token, episode.wake)
    assert woke.give_up and woke.lasted == 100
    assert watch.limited("coder") is None


def test_stale_timers_and_an_answer_before_the_reset() -> None:
    watch = LimitWatch(rng=lambda: 0.0)
    first = watch.seen("coder", _limit(30), NOW).episode.token
    token = watch.seen("coder", _limit(90, NOW), NOW).episode.token
    assert watch.wake("coder", first, NOW + 30) is None  # replaced by the later reset
    assert watch.lifted("coder") is not None
    assert watch.limited("coder") is None and watch.lifted("coder") is None
    assert watch.wake("coder", token, NOW + 90) is None  # lifted: its timer is stale
