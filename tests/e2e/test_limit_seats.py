"""Real agent CLIs hitting a provider's limit, through the built-in gateway.

The fake model answers the coder's task with a 429 and a short
``retry-after`` once, then normally.  The session must show the coder
``limited`` until the reset, type nothing into it meanwhile, and once the
limit is over see the task through: the CLI going on by itself (its own
retry) or, if it gave up and rests at its prompt, a "continue" line.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e import seats
from tests.e2e.fakegemini import shell as gemini_shell
from tests.e2e.fakemodel import ApiError, FakeModel, text, tool
from tests.e2e.fakeopenai import shell
from tests.e2e.scenario import claude_role
from tests.e2e.seats import BOOT_TIMEOUT, tool_said
from tests.e2e.test_scenarios import bash
from tests.integration.gatewayfakes import free_port

RESET = 4  # seconds: the retry-after the fake sends


def _gateway(port: int, api: str, url: str) -> str:
    return (f'[gateway]\nbuiltin = true\naddr = "127.0.0.1:{port}"\n'
            f'[gateway.upstream]\n{api} = "{url}"\n[ui]\nlimit_wait = "2s"\n')


def _through_gateway(seat_crew, cli: str, api: str, model: FakeModel):
    """An orchestrator and a coder on ``cli``, whose ``api`` calls reach ``model``
    through the built-in gateway."""
    return seat_crew(seats.seat_role("orchestrator", cli, start=True)
                     + seats.seat_role("coder", cli) + _gateway(free_port(), api, model.base_url))


def _task_turn(turn) -> bool:
    return "New task T1" in turn.text or "Continue:" in turn.text


def _limited_then_done(s, role: str = "coder") -> None:
    limited = s.wait_event(lambda e: e["event"] == "role limited", 90, "the limit")
    assert limited["role"] == role and limited["until"] - limited["t"] == pytest.approx(
        RESET, abs=2.5)  # the gateway read it, then told the session: a loaded machine lags
    over = s.wait_event(lambda e: e["event"] == "limit over", 60, "the limit over")
    assert over["t"] >= limited["t"]
    events = s.events()
    between = [e for e in events if limited["t"] <= e["t"] < over["t"]
               and e["event"].startswith("injection") and e.get("role") == role]
    # Nothing typed into it while limited: the one outcome in that time may be
    # the task's own, typed before its first model call hit the limit.
    assert [(e["kind"], e["task"]) for e in between] in ([], [("task", "T1")])
    s.wait_event(lambda e: e["event"] == "work-done" and e["task"] == "T1", 90, "work-done")
    assert s.board()["T1"]["state"] == "done"


def _writes_hello_then_reports(model: FakeModel, work: Path, first: object) -> None:
    """Claude Code's turns: at ``first``, write hello.txt; then report T1 done."""
    model.on(first, tool("Write", {"file_path": str(work / "hello.txt"), "content": "hello\n"}))
    model.on(tool_said("hello.txt"),
             bash('choragos work-done --id T1 --done --task "Wrote hello.txt"', "Report the task"))
    model.default = text("Ready.")


def _delegated(s, task: str = "Create hello.txt") -> None:
    """Both roles booted, then ``task`` given to the coder."""
    s.wait_booted(["orchestrator", "coder"], timeout=BOOT_TIMEOUT)
    assert s.cli("delegate", "--to", "coder", "--task", task).returncode == 0


@pytest.mark.claude
@pytest.mark.timeout(240)
def test_claude_code_waits_out_a_429_and_finishes(crew, fake_model: FakeModel) -> None:
    port = free_port()
    s = crew(claude_role("orchestrator", "claude", start=True) + claude_role("coder", "claude")
             + _gateway(port, "anthropic", fake_model.base_url))
    work = s.workdir
    fake_model.on("New task T1", ApiError(429, "rate_limit_error", "Rate limited: slow down",
                                          headers=(("retry-after", str(RESET)),)))
    _writes_hello_then_reports(fake_model, work, _task_turn)
    _delegated(s)
    _limited_then_done(s)
    assert (work / "hello.txt").read_text() == "hello\n"


@pytest.mark.codex
@pytest.mark.timeout(240)
def test_codex_waits_out_a_429_and_finishes(seat_crew, fakes) -> None:
    model = fakes.openai
    s = _through_gateway(seat_crew, "codex", "openai", model)
    model.on("New task T1", ApiError(429, "rate_limit_exceeded", "Rate limit reached",
                                     headers=(("retry-after", str(RESET)),)))
    model.on(_task_turn, shell("printf 'hello\\n' > hello.txt"))
    model.on(lambda turn: "exited with code 0" in turn.tool_text,
             shell('choragos work-done --id T1 --done --task "Wrote hello.txt"'))
    model.default = text("Ready.")
    _delegated(s)
    _limited_then_done(s)
    assert (s.workdir / "hello.txt").read_text() == "hello\n"


@pytest.mark.claude
@pytest.mark.timeout(240)
def test_claude_codes_own_limit_screen_is_waited_out_and_continued(crew,
                                                                    fake_model: FakeModel):
    """No gateway: the limit is read from Claude Code's screen (it was told not
    to retry), and once the wait is over a "Continue" line is typed into it."""
    s = crew(claude_role("orchestrator", "claude", start=True) + claude_role("coder", "claude")
             + '[ui]\nlimit_wait = "3s"\n')
    work = s.workdir
    fake_model.on("New task T1", ApiError(429, "rate_limit_error", "Rate limited: slow down",
                                          headers=(("x-should-retry", "false"),)))
    _writes_hello_then_reports(fake_model, work, "Continue:")
    _delegated(s)
    limited = s.wait_event(lambda e: e["event"] == "role limited", 60, "the limit")
    assert (limited["role"], limited["source"]) == ("coder", "screen")
    assert "API Error: Request rejected (429)" in limited["said"]
    s.wait_event(lambda e: e["event"] == "limit continue", 30, "the continue line")
    s.wait_event(lambda e: e["event"] == "work-done" and e["task"] == "T1", 90, "work-done")
    assert (work / "hello.txt").read_text() == "hello\n"
    assert [e for e in s.events() if e["event"] == "role limited"] == [limited]


@pytest.mark.gemini
@pytest.mark.timeout(240)
def test_gemini_cli_waits_out_a_resource_exhausted_and_finishes(seat_crew, fakes) -> None:
    model = fakes.gemini
    s = _through_gateway(seat_crew, "gemini", "gemini", model)
    retry = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{RESET}s"}
    model.on("New task T1", ApiError(429, "resource_exhausted", "Quota exceeded, retry later",
                                     details=(retry,)))
    # The protocol verb is one a Gemini seat runs without asking (choragos init --seats).
    model.on(_task_turn, gemini_shell('choragos work-done --id T1 --done --task "Done"'))
    model.default = text("Ready.")
    _delegated(s, "Report it done")
    _limited_then_done(s)


@pytest.mark.claude
@pytest.mark.codex
@pytest.mark.timeout(300)
def test_reroute_sends_a_limited_claude_roles_work_to_a_codex_role(seat_crew, fakes) -> None:
    """Claude's provider limits the coder for ten minutes, and no other Claude
    role is free: work delegated to it meanwhile goes to the Codex role, and
    its history says where and why."""
    claude, codex = fakes.claude, fakes.openai
    s = seat_crew(seats.seat_role("orchestrator", "claude", start=True)
                  + seats.seat_role("coder", "claude", limit_action="reroute")
                  + seats.seat_role("helper", "codex")
                  + f'[gateway]\nbuiltin = true\naddr = "127.0.0.1:{free_port()}"\n'
                  + f'[gateway.upstream]\nanthropic = "{claude.base_url}"\n'
                  + f'openai = "{codex.base_url}"\n')
    claude.on("New task T1", ApiError(429, "rate_limit_error", "Rate limited: slow down",
                                      headers=(("retry-after", "600"),
                                               ("x-should-retry", "false"))), once=False)
    claude.default = text("Ready.")
    codex.on("New task T2", shell('choragos work-done --id T2 --done --task "Done by codex"'))
    codex.default = text("Ready.")
    s.wait_booted(["orchestrator", "coder", "helper"], timeout=90)
    assert s.cli("delegate", "--to", "coder", "--task", "Build it").returncode == 0
    limited = s.wait_event(lambda e: e["event"] == "role limited", 90, "the limit")
    assert limited["role"] == "coder"
    assert s.cli("delegate", "--to", "coder", "--task", "Report it done").returncode == 0
    moved = s.wait_event(lambda e: e["event"] == "task rerouted", 15, "the reroute")
    assert (moved["task"], moved["was"], moved["role"], moved["same_cli"]) == \
        ("T2", "coder", "helper", False)
    assert "no role running its agent CLI (claude) was free, helper runs codex" in moved["why"]
    s.wait_event(lambda e: e["event"] == "work-done" and e["task"] == "T2", 90, "T2 done")
    board = s.board()
    assert board["T2"]["role"] == "helper" and board["T2"]["state"] == "done"
    assert board["T1"]["role"] == "coder" and board["T1"]["state"] == "delivered"
    s.wait_told("Rerouted: T2 went to helper instead of coder", 60)
    assert [e["task"] for e in s.events() if e["event"] == "task rerouted"] == ["T2"]


@pytest.mark.claude
@pytest.mark.timeout(240)
def test_claude_code_giving_up_on_an_overload_is_held_and_continued(crew,
                                                                     fake_model: FakeModel):
    """No gateway.  A mid-stream ``overloaded_error`` Claude Code retries by
    itself (again without streaming); when those get 529 too it gives up the
    turn and rests at its prompt: read from its screen as a limit, waited out,
    and continued."""
    s = crew(claude_role("orchestrator", "claude", start=True) + claude_role("coder", "claude")
             + '[ui]\nlimit_wait = "3s"\n')
    work = s.workdir
    # (The turn that fails leaves no answer: the continue line joins its message.)
    fake_model.on(lambda turn: "New task T1" in turn.text and "Continue:" not in turn.text,
                  ApiError(529, "overloaded_error", "Overloaded", mid_stream=True), once=False)
    _writes_hello_then_reports(fake_model, work, "Continue:")
    _delegated(s)
    limited = s.wait_event(lambda e: e["event"] == "role limited", 90, "the limit")
    assert (limited["role"], limited["source"], limited["kind"]) == \
        ("coder", "screen", "overloaded")
    assert "API Error: Repeated 529 Overloaded errors" in limited["said"]
    streamed = [r for r in fake_model.message_requests() if r.body.get("stream")
                and "New task T1" in str(r.body.get("messages", [])[-1:])]
    assert streamed  # the overload came mid-stream first
    s.wait_event(lambda e: e["event"] == "limit continue", 30, "the continue line")
    s.wait_event(lambda e: e["event"] == "work-done" and e["task"] == "T1", 90, "work-done")
    assert (work / "hello.txt").read_text() == "hello\n"
