"""Sessions without a terminal: serve --detach, refusals, ls, kill (no tmux needed)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from ptyprocess import PtyProcess

from tests.conftest import pid_alive, wait_until
from tests.deck.conftest import TEAM, cli_for, kill_all_and_remove, scratch_project
from tests.integration.harness import AGENT, base_env, read_agent_log

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def project():
    root, work, env = scratch_project()
    cli = cli_for(env, work)
    yield root, work, cli
    kill_all_and_remove(cli, root)


def test_detach_returns_once_ready_and_a_second_serve_says_why_not(project):
    root, work, cli = project
    out = cli("serve", "--detach")
    assert out.returncode == 0, out.stderr
    assert f"session started in {work}" in out.stdout
    # ready means both sockets are bound
    assert (root / "s.sock").is_socket() and (root / "s.ui.sock").is_socket()
    (session,) = json.loads(cli("ls", "--json").stdout)["sessions"]
    assert session["dir"] == str(work) and session["mode"] == "daemon"
    assert pid_alive(session["pid"]) and session["pid"] != os.getpid()
    assert session["attached"] is None
    assert session["roles"] == ["orchestrator", "coder", "release"]
    # the server is a daemon: its own session, not a child of ours
    with open(f"/proc/{session['pid']}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    assert int(fields[3]) != os.getsid(0)  # the session id differs from ours

    again = cli("serve", "--detach")
    assert again.returncode == 1
    assert f"pid {session['pid']}" in again.stderr and "already running" in again.stderr

    table = cli("ls")
    assert str(work) in table.stdout and "daemon" in table.stdout


def test_serve_and_attach_need_a_terminal(project):
    _, _, cli = project
    out = cli("serve")
    assert out.returncode == 2 and "--detach" in out.stderr
    assert cli("serve", "--detach").returncode == 0
    out = cli("attach")
    assert out.returncode == 2 and "needs a terminal" in out.stderr


def test_attach_with_no_session_says_so(project):
    _, _, cli = project
    out = cli("ls")
    assert out.stdout.strip() == "no choragos sessions are running"
    out = cli("kill")
    assert out.returncode == 3 and "no choragos session is running" in out.stderr


def test_kill_stops_the_session_and_its_agents(project):
    root, work, cli = project
    assert cli("serve", "--detach").returncode == 0
    (session,) = json.loads(cli("ls", "--json").stdout)["sessions"]
    wait_until(lambda: (root / "agents.jsonl").exists()
               and (root / "agents.jsonl").read_text().count('"start"') == 3, 20,
               message="three agents")
    out = cli("kill")
    assert out.returncode == 0 and f"pid {session['pid']}" in out.stdout, out.stderr
    assert not pid_alive(session["pid"])
    assert not (root / "s.sock").exists() and not (root / "s.ui.sock").exists()
    assert not (root / "s.json").exists()
    assert json.loads(cli("ls", "--json").stdout)["sessions"] == []
    events = (work / ".choragos/logs/events.jsonl").read_text()
    assert '"deck stopped"' in events


def submitted(root: Path, role: str) -> list[str]:
    return [r["text"] for r in read_agent_log(root / "agents.jsonl", "submit", role)]


def test_detach_returns_once_the_orchestrator_has_taken_its_brief(project):
    root, _, cli = project
    assert cli("serve", "--detach").returncode == 0
    assert any("choragos team" in line for line in submitted(root, "orchestrator"))


def nobody_listens(path: Path) -> bool:
    """No file at ``path``, or a socket file nobody accepts on."""
    if not path.exists():
        return True
    with socket.socket(socket.AF_UNIX) as probe:
        try:
            probe.connect(str(path))
        except OSError:
            return True
    return False


def test_detach_fails_naming_the_orchestrator_and_why_and_stops_what_it_started(project):
    root, work, cli = project
    team = TEAM.replace(f"command = {json.dumps(sys.executable)}",
                        'command = "no-such-agent-cli"', 1)
    (work / ".choragos.toml").write_text(team)
    out = cli("serve", "--detach")
    assert out.returncode == 1, out.stdout + out.stderr
    assert "orchestrator did not start: command 'no-such-agent-cli' was not found on PATH" \
        in out.stderr
    assert "session started" not in out.stdout
    assert json.loads(cli("ls", "--json").stdout)["sessions"] == []
    # Nothing listens there any more.  (In one full run of the suite on a
    # loaded machine the socket's file was still there, with nobody behind
    # it, after the server had exited; the next start removes such a file.)
    log_tail = (work / ".choragos/logs/server.log").read_text()[-3000:]
    for name in ("s.sock", "s.ui.sock"):
        assert nobody_listens(root / name), f"{name} still answers\n{log_tail}"
    # The workers it had started are stopped again (the fixture waits for them).
    assert "orchestrator did not start" in (work / ".choragos/logs/server.log").read_text()


def test_detach_says_when_the_orchestrator_exits_at_once(project):
    _, work, cli = project
    team = TEAM.replace(f"args = {json.dumps([str(AGENT)])}",
                        'args = ["-c", "raise SystemExit(3)"]', 1)
    (work / ".choragos.toml").write_text(team)
    out = cli("serve", "--detach")
    assert out.returncode == 1
    assert "orchestrator did not start: it exited (exit status 3)" in out.stderr, out.stderr
    assert ".choragos/logs/orchestrator.log" in out.stderr


def test_a_worker_that_cannot_start_is_named_and_status_says_why(project):
    _, work, cli = project
    team = TEAM.replace('name = "coder"\ncommand = ' + json.dumps(sys.executable),
                        'name = "coder"\ncommand = "no-such-agent-cli"')
    assert team != TEAM
    (work / ".choragos.toml").write_text(team)
    out = cli("serve", "--detach")
    assert out.returncode == 0, out.stderr
    assert "choragos: coder did not start: command 'no-such-agent-cli'" in out.stderr
    status = cli("status")
    assert status.returncode == 0
    assert "coder failed: command 'no-such-agent-cli' was not found on PATH" in status.stdout
    assert "fix `command` in .choragos.toml" in status.stdout


def test_ctrl_c_while_serve_waits_stops_the_session_it_started(project):
    root, work, cli = project
    # An orchestrator that never shows a prompt: the start waits on its boot.
    team = TEAM.replace(f"command = {json.dumps(sys.executable)}", 'command = "sleep"', 1)
    team = team.replace(f"args = {json.dumps([str(AGENT)])}", 'args = ["300"]', 1)
    (work / ".choragos.toml").write_text(team)
    env = base_env({"CHORAGOS_SOCK": str(root / "s.sock"),
                    "XDG_RUNTIME_DIR": str(root / "run"),
                    "AGENT_LOG": str(root / "agents.jsonl")})
    serving = subprocess.Popen([sys.executable, "-m", "choragos", "serve", "--detach"],
                               cwd=work, env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: json.loads(cli("ls", "--json").stdout)["sessions"], 30,
                   message="the session to be up")
        (session,) = json.loads(cli("ls", "--json").stdout)["sessions"]
        roles = json.loads(cli("status", "--json").stdout)["roles"]
        pids = [role["pid"] for role in roles if role.get("pid")]
        assert len(pids) == 3 and serving.poll() is None  # still waiting on the boot
        serving.send_signal(signal.SIGINT)
        out, err = serving.communicate(timeout=90)
    finally:
        if serving.poll() is None:
            serving.kill()
    assert serving.returncode == 130, err
    assert "interrupted; the session it was starting was stopped" in err
    assert "Traceback" not in err + out and "session started" not in out
    assert not pid_alive(session["pid"])
    assert not [pid for pid in pids if pid_alive(pid)]  # the sleep too
    assert not (root / "s.sock").exists()
    assert json.loads(cli("ls", "--json").stdout)["sessions"] == []


def test_ctrl_c_in_any_verb_is_one_line_without_a_traceback(project):
    _, work, _ = project
    env = base_env({"PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    # A verb busy (here: `ls`, made to sleep) when the interrupt comes.
    waiting = subprocess.Popen([sys.executable, "-c",
                                "import sys, time; from choragos.cli import main; "
                                "sys.argv=['choragos', 'ls']; "
                                "import choragos.cli.ls as ls; "
                                "ls.run = lambda argv, verb: (print('ready', flush=True), "
                                "time.sleep(60)); sys.exit(main.main())"],
                               cwd=work, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    assert waiting.stdout.readline() == "ready\n"
    waiting.send_signal(signal.SIGINT)
    _, err = waiting.communicate(timeout=30)
    assert waiting.returncode == 130
    assert err.strip() == "choragos ls: interrupted"


def test_ctrl_c_before_the_deck_shows_stops_the_session_serve_started(project):
    root, work, cli = project
    env = base_env({"CHORAGOS_SOCK": str(root / "s.sock"),
                    "XDG_RUNTIME_DIR": str(root / "run"),
                    "AGENT_LOG": str(root / "agents.jsonl")})
    # The interrupt lands as the client starts to attach (before raw mode).
    script = ("import sys\n"
              "import choragos.ui.attach as attach\n"
              "def interrupted(*args, **kwargs):\n"
              "    raise KeyboardInterrupt\n"
              "attach.attach_to = interrupted\n"
              "from choragos.cli.main import main\n"
              "sys.exit(main(['serve']))\n")
    child = PtyProcess.spawn([sys.executable, "-c", script], cwd=str(work), env=env,
                             dimensions=(40, 160))
    output = b""
    while True:
        try:
            output += child.read(65536)
        except EOFError:
            break
    child.wait()
    text = output.decode(errors="replace")
    assert child.exitstatus == 130, text
    assert "choragos serve: interrupted; the session it was starting was stopped" in text
    assert "Traceback" not in text
    assert json.loads(cli("ls", "--json").stdout)["sessions"] == []
    assert not (root / "s.sock").exists()
