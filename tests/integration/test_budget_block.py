"""Budgets that block, enforced in a real session's built-in gateway.

The test plays the coder's agent by sending model calls to the URL the
coder was started with; the upstream is the fake Anthropic server, each
reply priced at $0.40.  The call that crosses the budget is finished and
counted; the next is answered by the gateway itself and never reaches the
upstream; ``choragos budget`` or a reload with a higher budget lets calls
through again.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.fakemodel import FakeModel, Usage, read_sse
from tests.integration.gatewayfakes import free_port, request
from tests.integration.harness import role_toml

pytestmark = pytest.mark.timeout(120)

BODY = {"model": "claude-test-1", "max_tokens": 50, "stream": True,
        "messages": [{"role": "user", "content": "hi"}]}


def _crew(port: int, upstream: str, hook_file: Path, coder: dict, budget: str = "",
          flags: tuple[str, ...] = ()) -> str:
    return (role_toml("orchestrator", start=True) + role_toml("coder", *flags, **coder)
            + f'[gateway]\nbuiltin = true\naddr = "127.0.0.1:{port}"\n'
            + f'[gateway.upstream]\nanthropic = "{upstream}"\n'
            + '[pricing."claude-test"]\ninput = 1.0\n'
            + f'[ui]\non_budget = \'echo "$CHORAGOS_ROLE|$CHORAGOS_TASK" >> "{hook_file}"\'\n'
            + budget)


def _started(serve, claude: FakeModel, coder: dict, hook_file: Path):
    """A crew whose coder's calls reach ``claude`` through the built-in gateway,
    booted; and the coder's base URL."""
    s = serve(_crew(free_port(), claude.base_url, hook_file, coder))
    s.wait_booted(["orchestrator", "coder"])
    return s, _coder_url(s)


def _roles(s) -> dict[str, dict]:
    out = s.cli("status", "--json")
    assert out.returncode == 0, out.stderr
    return {r["name"]: r for r in json.loads(out.stdout)["roles"]}


def _call(url: str) -> tuple[int, bytes]:
    status, _, body = request(f"{url}/v1/messages", body=BODY,
                              headers={"x-api-key": "sk-ant-test-000"})
    return status, body


def _coder_url(s) -> str:
    pid = _roles(s)["coder"]["pid"]
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    env = dict(item.decode().split("=", 1) for item in raw if b"=" in item)
    return env["ANTHROPIC_BASE_URL"]


def _blocked(s, claude: FakeModel, url: str, calls: int) -> dict:
    """``calls`` went through; the next is refused in the API's error shape."""
    status, body = _call(url)
    assert status == 402, body
    error = json.loads(body)
    assert error["type"] == "error" and error["error"]["type"] == "budget_exceeded"
    assert "choragos budget coder AMOUNT" in error["error"]["message"]
    assert len(claude.message_requests(with_tools=False)) == calls
    return error


def test_a_blocking_budget_stops_the_next_call_until_it_is_raised(serve, short_tmp):
    port, hook_file = free_port(), short_tmp / "hooks.txt"
    with FakeModel(usage=Usage(input_tokens=400_000, output_tokens=0)) as claude:
        s = serve(_crew(port, claude.base_url, hook_file,
                        {"budget": "1.00", "budget_action": "block"}))
        s.wait_booted(["orchestrator", "coder"])
        assert s.cli("delegate", "--to", "coder", "--task", "spend it").returncode == 0
        url = _coder_url(s)
        for _ in range(3):  # $0.40, $0.80, then $1.20: the third crosses and is counted
            assert _call(url)[0] == 200
        error = _blocked(s, claude, url, calls=3)
        assert "$1.20 of $1.00" in error["error"]["message"]
        refused = s.wait_event(lambda e: e["event"] == "model call refused", 10, "refusal")
        assert refused["role"] == "coder"
        s.wait(lambda: s.board()["T1"]["note"].startswith("model calls blocked: the budget "
                                                          "of role coder is spent"),
               10, "the board's note")
        s.wait(lambda: hook_file.exists() and "coder|$1.20 of $1.00" in hook_file.read_text(),
               15, "on_budget")
        assert _roles(s)["coder"]["state"] != "paused"
        _blocked(s, claude, url, calls=3)  # still blocked: nothing more reached the upstream

        out = s.cli("budget", "coder", "2.00")
        assert out.returncode == 0, out.stderr
        assert "coder is now $2.00" in out.stdout
        s.wait(lambda: _call(url)[0] == 200, 10, "a call through after the raise")
        assert len(claude.message_requests(with_tools=False)) == 4
        s.wait(lambda: s.board()["T1"]["note"] == "", 10, "the note cleared")
        assert _call(url)[0] == 200  # $2.00: crossed again
        _blocked(s, claude, url, calls=5)

        config = s.workdir / ".choragos.toml"
        config.write_text(config.read_text().replace('budget = "1.00"', 'budget = "3.00"'))
        assert s.cli("reload", "--loosen").returncode == 0
        s.wait(lambda: _call(url)[0] == 200, 10, "a call through after the reload")
        assert len(claude.message_requests(with_tools=False)) == 6


def test_a_blocking_session_budget_stops_every_role(serve, short_tmp):
    port, hook_file = free_port(), short_tmp / "hooks.txt"
    with FakeModel(usage=Usage(input_tokens=400_000, output_tokens=0)) as claude:
        s = serve(_crew(port, claude.base_url, hook_file, {},
                        budget='[budget]\nsession = "0.50"\naction = "block"\n'))
        s.wait_booted(["orchestrator", "coder"])
        url = _coder_url(s)
        assert _call(url)[0] == 200 and _call(url)[0] == 200
        status, body = _call(url)
        assert status == 402
        message = json.loads(body)["error"]["message"]
        assert "the session's budget is spent ($0.80 of $0.50)" in message
        assert "choragos budget --session AMOUNT" in message
        assert len(claude.message_requests(with_tools=False)) == 2
        assert s.cli("budget", "--session", "5").returncode == 0
        s.wait(lambda: _call(url)[0] == 200, 10, "a call through after the raise")


def test_a_cutting_budget_ends_the_answer_that_crosses_it(serve, short_tmp):
    port, hook_file = free_port(), short_tmp / "hooks.txt"
    with FakeModel(usage=Usage(input_tokens=400_000, output_tokens=0)) as claude:
        s = serve(_crew(port, claude.base_url, hook_file,
                        {"budget": "0.30", "budget_action": "cut"}))
        s.wait_booted(["orchestrator", "coder"])
        url = _coder_url(s)
        status, body = _call(url)
        events = read_sse(body)
        assert status == 200 and [name for name, _ in events] == ["message_start", "error"]
        assert "($0.40 of $0.30)" in events[-1][1]["error"]["message"]
        _blocked(s, claude, url, calls=1)
        s.wait_event(lambda e: e["event"] == "model call refused", 10, "the refusal")
        s.wait(lambda: hook_file.exists() and "coder|$0.40 of $0.30" in hook_file.read_text(),
               15, "on_budget")


def test_a_role_held_by_a_blocking_budget_gets_nothing_typed_until_it_is_raised(serve,
                                                                                 short_tmp):
    """From the crossing on, nothing is typed into the role: its next tasks wait
    in its queue, no model call is made for them, and the operator's raise
    sends them in.  (A turn refused in the middle, and the "continue" that
    follows a raise, are the real CLIs' case: tests/e2e/test_budget_seats.py.)"""
    port, hook_file = free_port(), short_tmp / "hooks.txt"
    with FakeModel(usage=Usage(input_tokens=400_000, output_tokens=0)) as claude:
        s = serve(_crew(port, claude.base_url, hook_file,
                        {"budget": "0.30", "budget_action": "block", "stall_after": ""},
                        flags=("--worker", "--model")))
        s.wait_booted(["orchestrator", "coder"])
        assert s.cli("delegate", "--to", "coder", "--task", "first").returncode == 0
        s.wait(lambda: s.board()["T1"]["state"] == "done", 20, "T1 done ($0.40: crossed)")
        s.wait(lambda: "over budget" in _roles(s)["coder"]["marks"], 10, "the crossing seen")
        typed = len(s.submitted("coder"))
        for text in ("second", "third"):
            assert s.cli("delegate", "--to", "coder", "--task", text).returncode == 0
        s.wait(lambda: _roles(s)["coder"]["queued"] == 2, 10, "T2 and T3 queued and held")
        assert [s.board()[t]["state"] for t in ("T2", "T3")] == ["queued", "queued"]
        assert len(s.submitted("coder")) == typed, "a line was typed into a blocked role"
        assert len(claude.message_requests(with_tools=False)) == 1

        assert s.cli("budget", "coder", "5").returncode == 0
        s.wait(lambda: all(s.board()[t]["state"] == "done" for t in ("T2", "T3")), 30,
               "T2 and T3 delivered and done after the raise")
        assert len(claude.message_requests(with_tools=False)) == 3
        assert not [e for e in s.events() if e["event"] in ("budget continue",
                                                             "model call refused")]
