"""Provider limits waited out, through a real session and its built-in gateway.

The upstream is scripted: it answers a role's model calls with each
vendor's limit answer, then with a normal one.  The worker is the fixture
agent in ``--model`` mode: it asks the model before each task, and on an
error answer prints it and waits at its prompt with the task, as a CLI
that gave up does; a "Continue" line makes it ask again.  Reset times are
a few seconds, so the real wake-up timers run.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime

import pytest

from tests.e2e.scenario import holds_for
from tests.integration.gatewayfakes import free_port
from tests.integration.harness import role_toml, scrape
from tests.loopback import FakeHandler, Loopback

pytestmark = pytest.mark.timeout(120)

OK = (200, {}, {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test-1",
                "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
                "usage": {"input_tokens": 10, "output_tokens": 2}})
RATE = {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}


class Upstream(Loopback):
    """Answers each request with the next scripted (status, headers, body); the
    last answer repeats.  ``seen`` holds the wall time of every request."""

    def __init__(self, script: list) -> None:
        self.script, self.seen = list(script), []
        upstream = self

        class Handler(FakeHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                self.read_body()
                upstream.seen.append(time.time())
                status, headers, body = upstream.next()
                data = json.dumps(body).encode()
                self.send_head(status, len(data), headers=headers)
                self.wfile.write(data)

        super().__init__(Handler)

    def next(self) -> tuple:
        """The next answer; a callable is asked for it when the request comes."""
        answer = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        return answer() if callable(answer) else answer


def _crew(upstream: Upstream, hook_file, api: str = "anthropic", **ui: str) -> str:
    port = free_port()
    settings = {"limit_wait": "1s", "on_limit": f'env | grep ^CHORAGOS_ >> "{hook_file}"',
                **ui}
    return (role_toml("orchestrator", start=True)
            + role_toml("coder", "--worker", "--model", "--model-api", api, stall_after="")
            + f'[gateway]\nbuiltin = true\naddr = "127.0.0.1:{port}"\n'
            + f'[gateway.upstream]\n{api} = "{upstream.url}"\n'
            + "[ui]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in settings.items()))


def _coder(s) -> dict:
    out = s.cli("status", "--json")
    assert out.returncode == 0, out.stderr
    return next(r for r in json.loads(out.stdout)["roles"] if r["name"] == "coder")


def _iso(when: float) -> str:
    return datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Limit:
    """A limit answer made when the request comes: it lifts ``wait`` s later."""

    def __init__(self, headers, wait: float = 5.0, body: dict = RATE, status: int = 429):
        self.headers, self.wait, self.body, self.status = headers, wait, body, status
        self.until = 0.0

    def __call__(self) -> tuple:
        self.until = float(int(time.time() + self.wait))  # whole seconds: headers say no more
        return self.status, self.headers(self.until), self.body


def _waits_out(s, upstream: Upstream, limit: Limit, hook_file,
               source: str = "anthropic", metrics: int = 0) -> None:
    """The role is limited until ``until``, nothing is typed meanwhile, then it
    is continued and finishes its task."""
    s.wait_booted(["orchestrator", "coder"])
    s.cli("delegate", "--to", "coder", "--task", "build it")
    limited = s.wait(lambda: (c := _coder(s))["state"] == "limited" and c, message="limited")
    until = limit.until
    assert limited["limited_until"] == pytest.approx(until, abs=1.5)
    assert limited["ready"] is False
    note = s.wait(lambda: s.board()["T1"]["note"], message="the board's note")
    assert note.startswith(f"waits out a provider's limit (rate limit, {source}) until ")
    if metrics:
        scraped = scrape(metrics)
        assert scraped[("choragos_role_state", (("role", "coder"), ("state", "limited")))] == 1
        assert scraped[("choragos_role_limited_until_seconds", (("role", "coder"),))] == \
            limited["limited_until"]
        assert scraped[("choragos_role_limits_total", (("role", "coder"),
                                                       ("source", source)))] == 1
    event = s.wait_event(lambda e: e["event"] == "role limited", message="limit event")
    assert event["role"] == "coder" and event["source"] == source
    typed_before = len(s.submitted("coder"))
    # Work delegated meanwhile waits for the reset (and for the task it holds).
    assert s.cli("delegate", "--to", "coder", "--task", "then this").returncode == 0
    s.wait(lambda: any(r["text"].startswith("Continue") for r in s.agents("submit", "coder")),
           timeout=30, message="a continue line after the reset")
    continued = [r for r in s.agents("submit", "coder")]
    # Nothing was typed into it while it was limited: the continue line came first.
    assert continued[typed_before]["text"].startswith("Continue")
    assert time.time() >= until - 0.5
    s.wait(lambda: [r for r in s.agents("work-done", "coder")], message="task finished")
    assert s.board()["T1"]["note"] == ""
    second = s.wait_event(lambda e: e["event"] == "delivered" and e["task"] == "T2",
                          message="the task delegated meanwhile")
    assert second["t"] >= until - 0.5
    assert upstream.seen[1] >= until - 0.5
    hooks = hook_file.read_text().splitlines()
    assert sum(1 for line in hooks if line.startswith("CHORAGOS_HOOK=on_limit")) == 1
    assert f"CHORAGOS_LIMIT_SOURCE={source}" in hooks


def test_anthropic_reset_headers_hold_the_role_until_the_reset(serve, short_tmp):
    limit = Limit(lambda until: {"anthropic-ratelimit-requests-remaining": "0",
                                 "anthropic-ratelimit-requests-reset": _iso(until),
                                 "anthropic-ratelimit-tokens-remaining": "9000",
                                 "anthropic-ratelimit-tokens-reset": _iso(until + 3600)})
    hook_file = short_tmp / "hooks.txt"
    metrics = free_port()
    with Upstream([limit, OK]) as upstream:
        s = serve(_crew(upstream, hook_file) + f'[metrics]\nlisten = "127.0.0.1:{metrics}"\n')
        _waits_out(s, upstream, limit, hook_file, metrics=metrics)
        assert any(e["event"] == "limit over" and e["by"] == "reset" for e in s.events())


def test_openai_reset_durations_hold_the_role_until_the_reset(serve, short_tmp):
    # Requests are spent (reset in 5 s); tokens are not (their reset is ignored).
    limit = Limit(lambda until: {"x-ratelimit-remaining-requests": "0",
                                 "x-ratelimit-reset-requests": f"{until - time.time():.3f}s",
                                 "x-ratelimit-remaining-tokens": "4000",
                                 "x-ratelimit-reset-tokens": "6m0s"},
                  body={"error": {"message": "Rate limit reached", "type": "requests",
                                  "code": "rate_limit_exceeded"}})
    hook_file = short_tmp / "hooks.txt"
    with Upstream([limit, OK]) as upstream:
        s = serve(_crew(upstream, hook_file, api="openai"))
        _waits_out(s, upstream, limit, hook_file, source="openai")


def test_gemini_retry_delay_holds_the_role_until_the_reset(serve, short_tmp):
    body = {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "Quota exceeded",
                      "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo",
                                   "retryDelay": "5s"}]}}
    limit = Limit(lambda until: {}, body=body)
    hook_file = short_tmp / "hooks.txt"
    with Upstream([limit, OK]) as upstream:
        s = serve(_crew(upstream, hook_file, api="gemini"))
        _waits_out(s, upstream, limit, hook_file, source="gemini")


def _limit_for(wait: float) -> Limit:
    return Limit(lambda until: {"retry-after": str(wait)}, wait=wait)


def test_a_limit_coming_straight_back_waits_longer(serve, short_tmp):
    # limit_wait 1s: the repeat waits 2 s although its retry-after says 1.
    with Upstream([_limit_for(1), _limit_for(1), OK]) as upstream:
        s = serve(_crew(upstream, short_tmp / "hooks.txt"))
        s.wait_booted(["orchestrator", "coder"])
        s.cli("delegate", "--to", "coder", "--task", "build it")
        s.wait(lambda: [r for r in s.agents("work-done", "coder")], 30, "task finished")
        limits = [e for e in s.events() if e["event"] == "role limited"]
        assert [e["repeats"] for e in limits] == [0, 1]
        assert limits[0]["until"] - limits[0]["t"] == pytest.approx(1, abs=0.5)
        assert 2.0 <= limits[1]["until"] - limits[1]["t"] <= 2.5  # the back-off, + jitter
        continued = [t for t in s.submitted("coder") if t.startswith("Continue")]
        assert len(continued) == 2 and len(upstream.seen) == 3
        assert upstream.seen[2] - upstream.seen[1] >= 2.0
        # The same limit back is said in the log, not rung nor told again.
        hook_file = short_tmp / "hooks.txt"
        s.wait(lambda: hook_file.exists() and "CHORAGOS_HOOK=on_limit" in hook_file.read_text(),
               10, "the first limit's hook")
        hooks = hook_file.read_text().splitlines()
        assert sum(line.startswith("CHORAGOS_HOOK=on_limit") for line in hooks) == 1
        told = [t for t in s.submitted("orchestrator") if "limit" in t and "coder" in t]
        assert len(told) == 1, told


def test_a_limit_past_the_give_up_fails_the_task(serve, short_tmp):
    hook_file = short_tmp / "hooks.txt"
    with Upstream([_limit_for(3600)]) as upstream:
        s = serve(_crew(upstream, hook_file, limit_give_up="3s", idle_after="1s"))
        s.wait_booted(["orchestrator", "coder"])
        s.cli("delegate", "--to", "coder", "--task", "build it")
        limited = s.wait(lambda: (c := _coder(s))["state"] == "limited" and c, message="limited")
        assert limited["limited_until"] - time.time() < 4  # never past the give-up
        s.cli("delegate", "--to", "coder", "--task", "queued behind it")
        given_up = s.wait_event(lambda e: e["event"] == "limit given up", 15, "the give-up")
        assert given_up["role"] == "coder" and given_up["lasted"] >= 3
        # Waiting on a provider is not a stuck crew: no idle alarm meanwhile.
        assert not [e for e in s.events() if e["event"] == "team idle"]
        s.wait(lambda: s.board()["T1"]["state"] == "failed", 10, "T1 failed")
        assert "past [ui] limit_give_up (3s)" in s.board()["T1"]["note"]
        assert s.board()["T2"]["state"] == "failed"  # queued, failed too: never typed
        s.wait(lambda: _coder(s)["state"] == "idle", 10, "the coder idle again")
        assert holds_for(lambda: not [t for t in s.submitted("coder") if "T2" in t], 2)
        s.wait(lambda: [t for t in s.submitted("orchestrator") if "T1" in t and "limit" in t],
               15, "the orchestrator told")
        assert not [t for t in s.submitted("coder") if t.startswith("Continue")]
        assert len(upstream.seen) == 1
        assert "coder has been held by a provider's limit" in s.stderr()


def test_reroute_sends_the_limited_roles_work_to_an_idle_sibling(serve, short_tmp):
    port = free_port()
    config = (role_toml("orchestrator", start=True)
              + role_toml("coder", "--worker", "--model", limit_action="reroute",
                          stall_after="")
              + role_toml("coder2", "--worker", "--model", stall_after="")
              + f'[gateway]\nbuiltin = true\naddr = "127.0.0.1:{port}"\n')
    with Upstream([_limit_for(30), OK]) as upstream:
        s = serve(config
                  + f'[gateway.upstream]\nanthropic = "{upstream.url}"\n')
        s.wait_booted(["orchestrator", "coder", "coder2"])
        s.cli("delegate", "--to", "coder", "--task", "first")
        s.wait(lambda: _coder(s)["state"] == "limited", message="limited")
        assert s.cli("delegate", "--to", "coder", "--task", "second").returncode == 0
        moved = s.wait_event(lambda e: e["event"] == "task rerouted", 10, "the reroute")
        assert (moved["task"], moved["was"], moved["role"]) == ("T2", "coder", "coder2")
        s.wait(lambda: [r for r in s.agents("work-done", "coder2")], 20, "T2 done by coder2")
        assert s.board()["T2"]["role"] == "coder2" and s.board()["T1"]["role"] == "coder"
        assert holds_for(lambda: not [t for t in s.submitted("coder") if "T2" in t], 2)
        s.wait(lambda: [t for t in s.submitted("orchestrator") if t.startswith("Rerouted: T2")],
               15, "the orchestrator told")


def test_a_role_paused_through_its_reset_is_continued_once_resumed(serve, short_tmp):
    with Upstream([_limit_for(2), OK]) as upstream:
        s = serve(_crew(upstream, short_tmp / "hooks.txt"))
        s.wait_booted(["orchestrator", "coder"])
        s.cli("delegate", "--to", "coder", "--task", "build it")
        s.wait(lambda: _coder(s)["state"] == "limited", message="limited")
        assert s.cli("pause", "coder").returncode == 0
        s.wait(lambda: _coder(s)["state"] == "paused", message="paused")
        s.wait_event(lambda e: e["event"] == "limit over", 15, "the reset, while paused")
        assert _coder(s)["state"] == "paused"
        assert not [t for t in s.submitted("coder") if t.startswith("Continue")]
        assert s.cli("resume", "coder").returncode == 0
        s.wait(lambda: [r for r in s.agents("work-done", "coder")], 20, "task finished")
        assert [t for t in s.submitted("coder") if t.startswith("Continue")]
        assert len(upstream.seen) == 2


def test_a_crew_held_only_by_a_limit_says_so_once_and_resume_lifts_the_hold(serve, short_tmp):
    """Nobody works while the coder waits out a reset an hour away: the crew
    says so once (the log, the event, ``on_idle``) naming the reset; the
    operator's ``resume`` then sets the coder going before it."""
    hook_file = short_tmp / "hooks.txt"
    with Upstream([_limit_for(3600), OK]) as upstream:
        s = serve(_crew(upstream, hook_file, idle_after="1s")
                  .replace("[ui]\n", f'[ui]\non_idle = \'echo "idle|$CHORAGOS_TASK" >> '
                                     f'"{hook_file}"\'\n'))
        s.wait_booted(["orchestrator", "coder"])
        s.cli("delegate", "--to", "coder", "--task", "build it")
        limited = s.wait(lambda: (c := _coder(s))["state"] == "limited" and c, message="limited")
        stuck = s.wait_event(lambda e: e["event"] == "team limited", 15, "the stuck word")
        assert stuck["roles"] == ["coder"] and stuck["tasks"] == ["T1"]
        assert stuck["until"] == pytest.approx(limited["limited_until"], abs=0.01)
        s.wait(lambda: "THE CREW IS STUCK ON PROVIDER LIMITS" in s.stderr(), 10, "the log line")
        said = time.strftime("%H:%M:%S", time.localtime(limited["limited_until"]))
        s.wait(lambda: hook_file.exists() and "idle|1 open task: T1" in hook_file.read_text(),
               10, "on_idle")
        assert said in hook_file.read_text()
        assert holds_for(lambda: len([e for e in s.events()
                                      if e["event"] in ("team limited", "team idle")]) == 1, 3)
        out = s.cli("resume", "coder")
        assert out.returncode == 0, out.stderr
        assert "coder was held by a provider's rate limit; it is set going now" in out.stdout
        over = s.wait_event(lambda e: e["event"] == "limit over", 10, "the hold lifted")
        assert over["by"] == "operator"
        s.wait(lambda: [r for r in s.agents("work-done", "coder")], 30, "task finished")
        assert [t for t in s.submitted("coder") if t.startswith("Continue")]
        assert len(upstream.seen) == 2 and upstream.seen[1] < limited["limited_until"] - 600


def test_reroute_sends_queued_work_to_a_role_once_it_comes_to_rest(serve, short_tmp):
    """Nobody was free when the coder's limit came (an hour away): its queued
    work goes to the helper when the helper finishes, not at the reset."""
    port = free_port()
    config = (role_toml("orchestrator", start=True)
              + role_toml("coder", "--worker", "--model", limit_action="reroute",
                          stall_after="")
              + role_toml("helper", "--worker", "--work", "4", stall_after="")
              + f'[gateway]\nbuiltin = true\naddr = "127.0.0.1:{port}"\n')
    with Upstream([_limit_for(3600)]) as upstream:
        s = serve(config + f'[gateway.upstream]\nanthropic = "{upstream.url}"\n')
        s.wait_booted(["orchestrator", "coder", "helper"])
        s.cli("delegate", "--to", "helper", "--task", "keep busy")
        typed = s.wait_event(lambda e: e["event"] == "delivered" and e["task"] == "T1", 10,
                             "T1 typed")
        s.cli("delegate", "--to", "coder", "--task", "first")
        s.wait(lambda: _coder(s)["state"] == "limited", message="limited")
        assert s.cli("delegate", "--to", "coder", "--task", "second").returncode == 0
        moved = s.wait_event(lambda e: e["event"] == "task rerouted", 30, "the reroute")
        assert (moved["task"], moved["was"], moved["role"]) == ("T3", "coder", "helper")
        # When it came to rest, not before (the session sees it at rest once
        # its screen has been still a while: its first task's 4 s are quiet).
        rest = next(e for e in s.events() if e["event"] == "role state"
                    and e["role"] == "helper" and e["state"] == "idle" and e["t"] > typed["t"])
        assert moved["t"] >= rest["t"]
        s.wait_event(lambda e: e["event"] == "work-done" and e["task"] == "T3", 30, "T3 done")
        assert s.board()["T3"]["role"] == "helper"
        assert moved["why"] == "coder waits out a provider's rate limit" and moved["same_cli"]
        s.wait(lambda: [t for t in s.submitted("orchestrator") if t.startswith("Rerouted: T3")],
               15, "the orchestrator told")
        told = [t for t in s.submitted("orchestrator") if "T3" in t and "helper" in t]
        assert len([t for t in told if "instead of coder" in t]) == 1, told
