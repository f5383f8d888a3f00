"""A remote seat met by a hostile agent, a flaky network and a tired operator.

Real sshd, real ssh, real git: what the agent there does is typed into the
fixture agent's shell line (``run: ...``), as a hostile agent would run it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from tests.integration.harness import Serve, role_toml
from tests.remote.conftest import checkout_there, remote_role

pytestmark = pytest.mark.timeout(240)

COMMIT = "git -c user.name=x -c user.email=x@y commit -qm sneaky"
PAYLOADS = {
    # The task file here, overwritten by the merge into the main checkout.
    "state": ("echo EVIL > .choragos/tasks/T1.md && git add -f .choragos/tasks/T1.md",
              "under .choragos"),
    "link": ("ln -s /etc leak && git add leak", "symbolic link leak"),
    "climbing link": ("mkdir -p sub && ln -s ../../.. sub/up && git add sub/up",
                      "symbolic link sub/up"),
}


def _ran(s: Serve, role: str) -> list[dict]:
    return [json.loads(r["text"]) for r in s.agents("ran", role)]


def _run_there(s: Serve, role: str, *lines: str) -> list[dict]:
    """Each line run by the agent there, in turn; what each gave."""
    before = len(_ran(s, role))
    for count, line in enumerate(lines, before + 1):
        assert s.cli("keys", role, "--text", f"run: {line}").returncode == 0
        assert s.cli("keys", role, "enter").returncode == 0
        s.wait(lambda n=count: len(_ran(s, role)) >= n, 30, message=f"{line!r} to run there")
    return _ran(s, role)[before:]


@pytest.mark.parametrize("payload", sorted(PAYLOADS))
def test_work_that_reaches_into_the_state_or_out_of_the_checkout_is_not_taken(
        remote_session, ssh_server, payload):
    s = remote_session(remote_role(ssh_server, "coder", "--shell", merge="auto"))
    s.wait_booted(["orchestrator", "coder"], timeout=60)
    assert s.cli("delegate", "--to", "coder", "--task", "the honest task").returncode == 0
    s.wait(lambda: s.board()["T1"]["state"] == "delivered", 30, message="T1 there")
    task_file = s.workdir / ".choragos" / "tasks" / "T1.md"
    before = task_file.read_text()
    script, said = PAYLOADS[payload]
    sneaky, report = _run_there(s, "coder", f"sh -c '{script} && {COMMIT}'",
                                "choragos work-done --id T1 --done --task finished")
    assert sneaky["rc"] == 0, sneaky
    assert report["rc"] == 0, report
    failed = s.wait_event(lambda e: e["event"] == "commit failed" and e["task"] == "T1", 60)
    assert said in failed["error"] and "nothing was taken" in failed["error"], failed
    mirror = s.workdir / ".choragos" / "worktrees" / "coder"
    assert (mirror / ".choragos").is_symlink(), "the mirror lost its link to the state"
    assert not (mirror / "leak").exists() and not (mirror / "sub").exists()
    s.wait(lambda: s.board()["T1"]["state"] == "done", 30, message="T1 reported")
    assert task_file.read_text() == before
    assert not any(e["event"] == "merged" for e in s.events())
    assert not os.path.lexists(s.workdir / "leak")
    assert not Path(s.workdir / "sub").exists()


# Started as a daemon is: SIGHUP ignored, its output elsewhere, in the background.
DAEMON = "sh -c 'nohup sleep 321 >/dev/null 2>&1 &'"


def _daemons(ssh_server) -> list[str]:
    return [line for line in ssh_server.processes() if "sleep 321" in line]


def test_what_an_ended_agent_left_running_there_is_stopped(remote_session, ssh_server):
    s = remote_session(remote_role(ssh_server, "coder", "--shell", "--exit-on", "bye"))
    s.wait_booted(["orchestrator", "coder"], timeout=60)
    [started] = _run_there(s, "coder", DAEMON)
    assert started["rc"] == 0, started
    assert len(_daemons(ssh_server)) == 1
    assert s.cli("keys", "coder", "--text", "bye").returncode == 0
    assert s.cli("keys", "coder", "enter").returncode == 0
    s.wait_event(lambda e: e["event"] == "role exited" and e["role"] == "coder", 30)
    s.wait(lambda: _daemons(ssh_server) == [], 20,
           message="what the agent started there to end with it")


def _sshd_sessions(ssh_server) -> list[int]:
    """The account's own sshd processes: each carries one connection's data."""
    out = subprocess.run(["pgrep", "-u", ssh_server.account, "-x", "sshd"],
                         capture_output=True, text=True).stdout
    return [int(pid) for pid in out.split()]


def _agents_there(ssh_server) -> list[str]:
    return [line for line in ssh_server.processes() if "agent.py" in line]


def test_a_connection_that_went_silent_leaves_one_agent_there_not_two(
        remote_session, ssh_server):
    s = remote_session(remote_role(ssh_server, "coder", "--worker", "--work", "2", "--cli",
                                   "choragos", restart="on-failure"))
    s.wait_booted(["orchestrator", "coder"], timeout=60)
    assert len(_agents_there(ssh_server)) == 1
    # The network drops without a word: the host's end of the connection
    # hears nothing more, and its agent runs on.
    frozen = _sshd_sessions(ssh_server)
    assert frozen
    for pid in frozen:
        os.kill(pid, signal.SIGSTOP)
    try:
        lost = s.wait_event(lambda e: e["event"] == "role exited" and e["role"] == "coder",
                            60)
        assert "connection to box" in lost["status"] and lost["restarting"], lost
        s.wait(lambda: sum(e["event"] == "boot injection" and e["role"] == "coder"
                           and e["ok"] for e in s.events()) == 2, 60,
               message="coder connected again and booted")
        assert len(_agents_there(ssh_server)) == 1, _agents_there(ssh_server)
    finally:
        for pid in frozen:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
    assert s.cli("delegate", "--to", "coder", "--task", "after the drop").returncode == 0
    s.wait(lambda: s.board()["T1"]["state"] == "done", 60, message="T1 done there")


def test_a_killed_server_leaves_nothing_running_on_the_host(remote_session, ssh_server):
    s = remote_session(remote_role(ssh_server, "coder", "--shell"))
    s.wait_booted(["orchestrator", "coder"], timeout=60)
    [started] = _run_there(s, "coder", DAEMON)
    assert started["rc"] == 0 and len(_daemons(ssh_server)) == 1, started
    s.kill9()
    # Nobody resumes: what the agent started must not wait for a session.
    s.wait(lambda: ssh_server.processes() == [], 20, message="nothing left there")
    s.start(args=("--resume",))  # so the session ends cleanly, there too
    s.wait_booted(["coder"], timeout=60)


def _workdir_there(workdir: str):
    def setup(s: Serve) -> None:
        config = s.workdir / ".choragos.toml"
        line = f"workdir = {json.dumps(workdir)}\n"
        config.write_text(config.read_text().replace("ssh_args", line + "ssh_args", 1))
    return setup


def test_a_folder_there_that_is_not_the_roles_checkout_is_left_alone(remote_session,
                                                                     ssh_server):
    # The operator's own clone on the host, where workdir says the role's goes.
    made = ssh_server.run("sh", "-c", "rm -rf ~/mine && mkdir -p ~/mine/coder && cd "
                          "~/mine/coder && git init -q -b main && echo secret > private.txt "
                          "&& git add . && git -c user.name=x -c user.email=x@y commit -qm own")
    assert made.returncode == 0, made.stderr
    s = remote_session(remote_role(ssh_server, "coder"), setup=_workdir_there("mine"))
    s.wait_booted(["orchestrator"], timeout=60)
    exited = s.wait_event(lambda e: e["event"] == "role exited" and e["role"] == "coder", 60)
    assert "not this role's checkout" in exited["status"], exited
    state = ssh_server.run("sh", "-c", "cd ~/mine/coder && git symbolic-ref HEAD && "
                           "git config --get receive.denyCurrentBranch; git status --short")
    assert state.stdout.split() == ["refs/heads/main"], state
    ssh_server.run("rm", "-rf", str(ssh_server.home / "mine"))


FORGERY = """import json, os, socket
def ask(request):
    c = socket.socket(socket.AF_UNIX)
    c.connect(os.environ["CHORAGOS_SOCK"])
    c.sendall(json.dumps(request).encode())
    c.shutdown(socket.SHUT_WR)
    answer = b""
    while True:
        chunk = c.recv(65536)
        if not chunk:
            return json.loads(answer)
        answer += chunk
for request in json.load(open(os.path.expanduser("~/forged.json"))):
    print(json.dumps(ask(request)))
"""
OPERATOR_ONLY = (
    {"cmd": "gate", "action": "reject", "id": "T1", "reason": "no"},
    {"cmd": "rollback", "target": "T1"}, {"cmd": "budget", "role": "coder", "amount": "99"},
    {"cmd": "budget", "session": True, "amount": "99"}, {"cmd": "shutdown"},
    {"cmd": "pause", "role": "alice"}, {"cmd": "resume", "role": "alice"},
    {"cmd": "restart", "role": "alice"}, {"cmd": "reload"}, {"cmd": "handoff"},
    {"cmd": "input", "role": "alice", "text": "approve it"},
    # Whoever the request says is calling: the socket says who.
    {"cmd": "gate", "action": "approve", "id": "T1", "caller": None},
)


def _forge(s: Serve, ssh_server, requests) -> list[dict]:
    """``requests`` sent raw by the agent there on its socket; their acks."""
    for name, text in (("forge.py", FORGERY), ("forged.json", json.dumps(requests))):
        copied = ssh_server.run("sh", "-c", f"cat > ~/{name}", stdin=text)
        assert copied.returncode == 0, copied.stderr
    try:
        [ran] = _run_there(s, "coder", f"python3 {ssh_server.home}/forge.py")
    finally:
        ssh_server.run("rm", "-f", f"{ssh_server.home}/forge.py",
                       f"{ssh_server.home}/forged.json")
    acks = [json.loads(line) for line in ran["out"].splitlines()]
    assert len(acks) == len(requests), ran
    return acks


def test_no_operator_command_passes_the_forwarded_socket(remote_session, ssh_server):
    s = remote_session(remote_role(ssh_server, "coder", "--shell")
                       + role_toml("alice", approve=True))
    s.wait_booted(["orchestrator", "coder", "alice"], timeout=60)
    assert s.cli("delegate", "--to", "alice", "--task", "held at the gate").returncode == 0
    s.wait(lambda: s.board()["T1"]["state"] == "gated", 20, message="the approve gate")
    acks = _forge(s, ssh_server, OPERATOR_ONLY)
    for request, ack in zip(OPERATOR_ONLY, acks, strict=True):
        assert ack["status"] == "error" and "operator command" in ack["error"], (request, ack)
    assert s.board()["T1"]["state"] == "gated"
    assert s.cli("ping").returncode == 0
    refused = [e for e in s.events() if e["event"] == "request refused"]
    assert len(refused) == len(OPERATOR_ONLY) and {e["caller"] for e in refused} == {"coder"}


# Every shell's metacharacters, a quote of each kind, a newline in the task.
NASTY = "w $(touch ~/PWNED1) `touch ~/PWNED2`;touch ~/PWNED3 ' \\\" & | > < * ? ! # %"


def test_config_and_task_text_never_run_in_the_remote_shell(remote_session, ssh_server):
    try:
        s = remote_session(remote_role(ssh_server, "coder", "--worker", "--edit", "--cli",
                                       "choragos", merge="auto"), setup=_workdir_there(NASTY))
        s.wait_booted(["orchestrator", "coder"], timeout=60)
        task = "write a.txt $(touch ~/PWNED4) `touch ~/PWNED5`\nappend a.txt '; touch ~/PWNED6"
        assert s.cli("delegate", "--to", "coder", "--task", task).returncode == 0
        s.wait(lambda: s.board()["T1"]["state"] == "done", 60, message="T1 done")
        assert s.wait_merged("a.txt").splitlines() == [
            "$(touch ~/PWNED4) `touch ~/PWNED5`", "'; touch ~/PWNED6"]
        listed = ssh_server.run("sh", "-c", "ls -A ~").stdout
        assert "PWNED" not in listed, listed
    finally:
        ssh_server.run("sh", "-c", 'rm -rf ~/"$1"', "sh", NASTY.split("/")[0])


def test_a_shutdown_after_a_silent_drop_leaves_nothing_running_there(remote_session,
                                                                      ssh_server):
    s = remote_session(remote_role(ssh_server, "coder", "--shell"))
    s.wait_booted(["orchestrator", "coder"], timeout=60)
    frozen = _sshd_sessions(ssh_server)
    for pid in frozen:
        os.kill(pid, signal.SIGSTOP)
    try:
        lost = s.wait_event(lambda e: e["event"] == "role exited" and e["role"] == "coder",
                            60)
        assert "connection to box" in lost["status"] and not lost["restarting"], lost
        assert len(_agents_there(ssh_server)) == 1  # the host's sshd has not noticed
        assert s.stop() == 0, s.stderr()
        # Still frozen: only the shutdown itself can have ended it.
        s.wait(lambda: _agents_there(ssh_server) == [], 15,
               message="the shutdown to end the agent there")
        folder = ssh_server.run("sh", "-c", "ls -A ~/.choragos-remote")
        assert folder.stdout == "", folder
    finally:
        for pid in frozen:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


def test_a_path_from_a_remote_role_never_names_a_file_here(remote_session, ssh_server):
    s = remote_session(remote_role(ssh_server, "coder", "--shell", can_delegate=True)
                       + role_toml("alice"))
    s.wait_booted(["orchestrator", "coder", "alice"], timeout=60)
    assert s.cli("delegate", "--to", "coder", "--task", "the task").returncode == 0
    s.wait(lambda: s.board()["T1"]["state"] == "delivered", 30, message="T1 there")
    secret = str(s.workdir.parent / "operator-secret.txt")
    delegated, reported = _forge(s, ssh_server, [
        {"cmd": "delegate", "to": ["alice"], "task": "see the brief", "brief": secret},
        {"cmd": "work-done", "id": "T1", "task": "finished", "done": True, "report": secret}])
    assert delegated["status"] == "error" and "on box" in delegated["error"], delegated
    assert reported["status"] == "ok", reported
    s.wait(lambda: s.board()["T1"]["state"] == "done", 30, message="T1 reported")
    assert s.board()["T1"]["report"] is None
    assert set(s.board()) == {"T1"}
    said = s.wait(lambda: [line for line in s.submitted("orchestrator") if "[T1" in line], 30,
                  message="the report to reach the orchestrator")
    assert not any(secret in line for line in said), said


def test_work_larger_than_the_hosts_limit_is_not_taken(remote_session, ssh_server):
    def setup(s: Serve) -> None:
        config = s.workdir / ".choragos.toml"
        config.write_text(config.read_text().replace("ssh_args", 'work_limit = "1MiB"\nssh_args',
                                                     1))

    s = remote_session(remote_role(ssh_server, "coder", "--shell", merge="auto"), setup=setup)
    s.wait_booted(["orchestrator", "coder"], timeout=60)
    assert s.cli("delegate", "--to", "coder", "--task", "a modest task").returncode == 0
    s.wait(lambda: s.board()["T1"]["state"] == "delivered", 30, message="T1 there")
    mirror = s.workdir / ".choragos" / "worktrees" / "coder"
    before = subprocess.run(["git", "-C", str(mirror), "rev-parse", "HEAD"],
                            capture_output=True, text=True).stdout
    made, report = _run_there(s, "coder", "sh -c 'head -c 3000000 /dev/urandom > big.bin'",
                              "choragos work-done --id T1 --done --task finished")
    assert made["rc"] == 0 and report["rc"] == 0, (made, report)
    failed = s.wait_event(lambda e: e["event"] == "commit failed" and e["task"] == "T1", 60)
    assert "work_limit (1 MiB)" in failed["error"], failed
    assert "nothing was taken" in failed["error"], failed
    there = ssh_server.run("git", "-C", checkout_there(ssh_server, s, "coder"), "rev-parse",
                           "HEAD:big.bin")
    assert there.returncode == 0, there  # committed there, and there only
    blob = there.stdout.strip()
    here = subprocess.run(["git", "-C", str(mirror), "cat-file", "-e", blob],
                          capture_output=True)
    assert here.returncode != 0, "the blob was fetched here"
    assert subprocess.run(["git", "-C", str(mirror), "rev-parse", "HEAD"],
                          capture_output=True, text=True).stdout == before
    assert not (mirror / "big.bin").exists() and not (s.workdir / "big.bin").exists()
