"""The real Claude Code CLI in a remote seat: run by the other account over
ssh, talking to the scripted model server through the built-in gateway's
forwarded port, reporting with the ``choragos work-done`` installed there.

Nothing reaches a real provider: the session's environment is built from
nothing (a fake key, no provider URL at all), the role's env policy lets
only the key and Claude's quiet switches through, and the only base URL
the CLI gets is the gateway's (loopback, forwarded), whose upstream is the
fake.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.e2e.claudeenv import CLAUDE_BIN, DEFAULT_ALLOW, FAKE_KEY, QUIET_ENV, prepare_home
from tests.e2e.fakemodel import FakeModel, Usage, text, tool
from tests.integration.gatewayfakes import free_port, tokens
from tests.integration.harness import Serve
from tests.remote import sshd
from tests.remote.conftest import checkout_there

pytestmark = [pytest.mark.claude, pytest.mark.timeout(240)]

USAGE = Usage(input_tokens=1000, output_tokens=10)
BOOT_TIMEOUT = 90  # a claude starting over ssh on two busy cores


def _said(needle: str):
    return lambda turn: needle in turn.tool_text


def _claude_there(server: sshd.Server) -> str:
    """The CLI's path, when the other account can run it (else the test skips)."""
    if not CLAUDE_BIN.exists():
        pytest.skip(f"the Claude Code CLI is not installed at {CLAUDE_BIN} (make claude)")
    if server.run("test", "-x", str(CLAUDE_BIN)).returncode != 0:
        pytest.skip(f"{server.account} cannot run {CLAUDE_BIN} (a parent folder is private)")
    return str(CLAUDE_BIN)


def _commit_settings(s: Serve) -> None:
    """The project's permission rules, committed: the checkout there gets them."""
    settings = s.workdir / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"permissions": {"allow": list(DEFAULT_ALLOW)}}))
    for args in (["add", ".claude"], ["commit", "-qm", "claude settings"]):
        subprocess.run(["git", *args], cwd=s.workdir, check=True, capture_output=True)


@pytest.fixture
def claude_home(ssh_server, short_tmp: Path):
    """Writes the other account's ``~/.claude.json`` trusting ``checkout``; removed after."""

    def write(checkout: str) -> None:
        local = prepare_home(short_tmp / "claude-home", Path(checkout))
        state = (local / ".claude.json").read_text()
        done = ssh_server.run("sh", "-c", "umask 077 && cat > ~/.claude.json", stdin=state)
        assert done.returncode == 0, done.stderr

    yield write
    ssh_server.run("sh", "-c", "rm -rf ~/.claude ~/.claude.json", timeout=20)


def test_a_real_claude_on_the_host_does_its_task_and_its_tokens_count_for_its_role(
        claude_home, remote_session, ssh_server):
    # claude_home first: its files there are removed after the session stopped.
    claude = _claude_there(ssh_server)
    port = free_port()
    with FakeModel(usage=USAGE) as model:
        s = remote_session(
            '[[roles]]\nname = "coder"\n'
            f'command = "{claude}"\nhost = "box"\nmerge = "auto"\n'
            f"env_allow = {json.dumps(['ANTHROPIC_API_KEY', *QUIET_ENV])}\n"
            f'[gateway]\nbuiltin = true\naddr = "127.0.0.1:{port}"\n'
            f'[gateway.upstream]\nanthropic = "{model.base_url}"\n',
            env={"ANTHROPIC_API_KEY": FAKE_KEY, **QUIET_ENV},
            setup=lambda made: (_commit_settings(made),
                                claude_home(checkout_there(ssh_server, made, "coder"))))
        there = checkout_there(ssh_server, s, "coder")
        model.on("New task T1 from choragos",
                 tool("Read", {"file_path": f"{there}/.choragos/tasks/T1.md"}))
        model.on(_said("Task T1 for coder"),
                 tool("Write", {"file_path": f"{there}/hello.txt", "content": "hello\n"}))
        model.on(_said("hello.txt"),
                 tool("Write", {"file_path": f"{there}/.choragos/reports/T1.md",
                                "content": "Wrote hello.txt over there.\n"}))
        model.on(_said("reports/T1.md"),
                 tool("Bash", {"command": 'choragos work-done --id T1 --done --task '
                               '"Wrote hello.txt" --report .choragos/reports/T1.md',
                               "description": "Report the task"}))
        model.on(lambda turn: "work-done" in turn.tool_text, text("Reported."), once=False)
        s.wait_booted(["orchestrator", "coder"], timeout=BOOT_TIMEOUT)
        assert s.cli("delegate", "--to", "coder", "--task", "Create hello.txt").returncode == 0
        s.wait(lambda: s.board()["T1"]["state"] == "done", 120, message="T1 done")
        assert s.wait_merged("hello.txt") == "hello\n"
        assert "over there" in Path(s.board()["T1"]["report"]).read_text()

        calls = model.message_requests(with_tools=False)
        assert calls and all(r.headers.get("x-api-key") == FAKE_KEY for r in calls)
        counted = tokens(f"http://127.0.0.1:{port}")
        assert set(counted) == {"coder"}, counted
        inputs = sum(m["input"] for m in counted["coder"].values())
        assert inputs == USAGE.input_tokens * len(calls)
        coder = s.wait(lambda: (r := {x["name"]: x for x in json.loads(
            s.cli("status", "--json").stdout)["roles"]}["coder"])["tokens"]["input"]
            == inputs and r, 30, message="the coder's tokens in status")
        assert coder["host"] == "box"
        # What the CLI there was given: the forwarded port, the fake key, nothing more.
        recipe = ssh_server.run("sh", "-c", "cat ~/.choragos-remote/*/coder.json").stdout
        env = json.loads(recipe)["env"]
        assert env["ANTHROPIC_BASE_URL"].startswith("http://127.0.0.1:")
        assert f":{port}/" not in env["ANTHROPIC_BASE_URL"]
        assert {k for k in env if k.startswith(("ANTHROPIC_", "CLAUDE_"))} == {
            "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", *(k for k in QUIET_ENV
                                                        if k.startswith("CLAUDE_"))}
