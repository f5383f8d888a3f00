"""Roles on another machine, for real: an sshd on loopback, another account.

The remote role is the fixture agent run by that account over ``ssh -tt``;
it reports with the plain ``choragos work-done`` the session installed
there, through the forwarded control socket, and its work comes back
through the merge gate.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import wait_until
from tests.integration.harness import Serve, base_env, role_toml
from tests.remote.conftest import ORCH, checkout_there, host_toml, kill_master, remote_role

pytestmark = pytest.mark.timeout(240)

def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout


def _gates(s: Serve) -> dict[str, dict]:
    out = s.cli("gate", "list", "--json")
    assert out.returncode == 0, out.stderr
    return {g["id"]: g for g in json.loads(out.stdout)["gates"]}


def test_a_remote_worker_does_the_task_and_its_work_merges_only_after_the_gate(
        remote_session, ssh_server):
    s = remote_session(remote_role(ssh_server, "coder", "--worker", "--edit", "--cli",
                                   "choragos"))
    s.wait_booted(["orchestrator", "coder"], timeout=60)
    roles = {r["name"]: r for r in json.loads(s.cli("status", "--json").stdout)["roles"]}
    assert (roles["coder"]["host"], roles["orchestrator"]["host"]) == ("box", "")
    head, *rows = s.cli("status").stdout.splitlines()
    assert head.split()[:3] == ["ROLE", "STATE", "HOST"]
    assert next(row for row in rows if row.startswith("coder")).split()[2] == "box"
    brief = s.workdir.parent / "brief.md"  # outside the workspace, as an operator's notes
    brief.write_text("the details, only here\n")
    assert s.cli("delegate", "--to", "coder", "--task", "write made.txt from afar",
                 "--brief", str(brief)).returncode == 0
    gates = s.wait(lambda: _gates(s), 60, message="the merge gate")
    # The host got the brief's copy, and its task file names that, not this machine's path.
    there = Path(checkout_there(ssh_server, s, "coder")) / ".choragos" / "tasks"
    assert (there / "T1.brief.md").read_text() == "the details, only here\n"
    assert "Read `.choragos/tasks/T1.brief.md`" in (there / "T1.md").read_text()
    assert gates["T1"]["kind"] == "merge"
    assert "made.txt" in Path(gates["T1"]["file"]).read_text()
    assert not (s.workdir / "made.txt").exists(), "merged before the operator decided"
    assert s.cli("gate", "approve", "T1").returncode == 0
    assert s.wait_merged("made.txt").strip() == "from afar"
    done = s.wait(lambda: s.board()["T1"]["state"] == "done" and s.board()["T1"], 30)
    assert done["role"] == "coder"
    # The report travelled with the work-done and is readable here.
    report = Path(done["report"])
    assert report.is_relative_to(s.workdir / ".choragos") and report.read_text()



def _ran(s: Serve, role: str) -> list[dict]:
    return [json.loads(r["text"]) for r in s.agents("ran", role)]


FORGED_APPROVE = ("run: python3 -c \"import json,os,socket; c=socket.socket(socket.AF_UNIX); "
                  "c.connect(os.environ['CHORAGOS_SOCK']); c.sendall(json.dumps({'cmd': 'gate', "
                  "'action': 'approve', 'id': 'T1'}).encode()); c.shutdown(socket.SHUT_WR); "
                  "print(c.recv(65536).decode())\"")


def test_a_remote_worker_cannot_act_as_the_operator_or_report_another_roles_task(
        remote_session, ssh_server):
    s = remote_session(remote_role(ssh_server, "coder", "--shell")
                       + role_toml("alice", approve=True))
    s.wait_booted(["orchestrator", "coder", "alice"], timeout=60)
    assert s.cli("delegate", "--to", "alice", "--task", "held at the gate").returncode == 0
    s.wait(lambda: "T1" in _gates(s), 20, message="the approve gate")
    lines = ("run: choragos gate approve T1", FORGED_APPROVE,
             "run: choragos work-done --id T1 --done --task stolen")
    for count, line in enumerate(lines, 1):
        assert s.cli("keys", "coder", "--text", line).returncode == 0
        assert s.cli("keys", "coder", "enter").returncode == 0
        s.wait(lambda n=count: len(_ran(s, "coder")) == n, 30, message=f"attempt {count}")
    verb, forged, report = _ran(s, "coder")
    assert verb["rc"] != 0 and "operator command" in verb["out"], verb
    assert '"status":"error"' in forged["out"] and "operator command" in forged["out"], forged
    assert report["rc"] != 0 and "belongs to alice" in report["out"], report
    assert s.board()["T1"]["state"] == "gated"
    refused = [e for e in s.events() if e["event"] == "request refused"]
    assert refused and {e.get("caller") for e in refused} == {"coder"}, refused


def test_a_dropped_connection_restarts_the_role_and_types_its_task_again(
        remote_session, ssh_server):
    s = remote_session(remote_role(ssh_server, "coder", "--worker", "--work", "4", "--cli",
                                   "choragos", restart="on-failure"))
    s.wait_booted(["orchestrator", "coder"], timeout=60)
    assert s.cli("delegate", "--to", "coder", "--task", "a long one").returncode == 0
    s.wait(lambda: s.board()["T1"]["state"] == "delivered", 30,
           message="the task to reach the remote agent")
    kill_master(s)
    lost = s.wait_event(lambda e: e["event"] == "role exited" and e["role"] == "coder", 30)
    assert "connection to box" in lost["status"] and lost["restarting"], lost
    s.wait_event(lambda e: e["event"] == "task redelivered" and e["task"] == "T1", 30)
    done = s.wait(lambda: s.board()["T1"]["state"] == "done", 90, message="T1 done after all")
    assert done
    typed = [line for line in s.submitted("coder") if "T1.md" in line]
    assert len(typed) == 2, typed


def test_a_program_missing_on_the_host_is_named_on_the_card(remote_session, ssh_server):
    s = remote_session('[[roles]]\nname = "coder"\ncommand = "no-such-agent"\n'
                       'host = "box"\n')
    s.wait_booted(["orchestrator"], timeout=60)
    exited = s.wait_event(lambda e: e["event"] == "role exited" and e["role"] == "coder", 60)
    assert "no-such-agent is not on the PATH of box" in exited["status"], exited
    status = json.loads(s.cli("status", "--json").stdout)
    coder = next(r for r in status["roles"] if r["name"] == "coder")
    assert "no-such-agent is not on the PATH of box" in coder["detail"], coder


def test_doctor_checks_each_host(short_tmp: Path, ssh_server):
    work = short_tmp / "proj"
    work.mkdir()
    (work / ".choragos.toml").write_text(
        # "gone": an address nothing answers ssh on (its config names only .1).
        host_toml(ssh_server) + host_toml(ssh_server, "gone").replace("@127.0.0.1", "@127.0.0.2")
        + ORCH + remote_role(ssh_server, "coder") + remote_role(ssh_server, "tester")
        + '[[roles]]\nname = "ghost"\ncommand = "no-such-agent"\nhost = "box"\n'
        + '[[roles]]\nname = "far"\ncommand = "python3"\nhost = "gone"\n')
    out = subprocess.run([sys.executable, "-m", "choragos", "doctor", "--json"], cwd=work,
                         env=base_env(), capture_output=True, text=True, timeout=120)
    hosts = [c for c in json.loads(out.stdout)["checks"] if c["name"] == "host"]
    said = {(c["level"], c["message"].split(": ", 1)[1].split(" (")[0]) for c in hosts}
    assert ("OK", "reachable, with python3 and git") in said, hosts
    assert any(c["level"] == "OK" and "python3 is" in c["message"] and "coder, tester"
               in c["message"] for c in hosts), hosts
    assert any(c["level"] == "FAIL" and "no-such-agent is not on its PATH" in c["message"]
               for c in hosts), hosts
    assert any(c["level"] == "FAIL" and c["message"].startswith("host gone")
               and "without a password prompt" in c["message"] for c in hosts), hosts
    assert out.returncode == 1


def test_a_rollback_of_a_remote_roles_task_restores_the_tree_and_branch_there(
        remote_session, ssh_server):
    s = remote_session(remote_role(ssh_server, "coder", "--worker", "--edit", "--cli",
                                   "choragos", merge="manual"))
    s.wait_booted(["orchestrator", "coder"], timeout=60)
    # One after the other: a task's checkpoint is taken when it is delegated.
    for number, task in enumerate(("write kept.txt one",
                                   "write gone.txt two\nappend kept.txt more"), 1):
        assert s.cli("delegate", "--to", "coder", "--task", task).returncode == 0
        s.wait(lambda n=number: s.board()[f"T{n}"]["state"] == "done"
               and s.board()[f"T{n}"].get("changed") is not None, 60,
               message=f"T{number} done and its work brought back")
    checkout = checkout_there(ssh_server, s, "coder")

    def there(*command: str) -> str:
        done = ssh_server.run("sh", "-c", f'cd "$1" && {" ".join(command)}', "sh", checkout)
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert there("cat kept.txt gone.txt").split() == ["one", "more", "two"]
    there("echo unsent > scratch.txt")  # never reported: the rollback's save holds it
    done = s.cli("rollback", "T2", "--yes")
    assert done.returncode == 0, done.stderr + done.stdout
    assert there("cat kept.txt").split() == ["one"]
    assert there("ls").split() == ["README.md", "kept.txt"]
    assert there("git status --porcelain -- . ':!.choragos'") == ""
    mirror = s.workdir / ".choragos" / "worktrees" / "coder"
    assert there("git rev-parse HEAD").strip() == _git(mirror, "rev-parse", "HEAD").strip()
    assert _git(mirror, "log", "-1", "--format=%s").strip() == "rollback to before T2"
    assert not (mirror / "gone.txt").exists()
    # What the host held beyond the report is in the rollback's save, undone by its own.
    assert s.cli("rollback", "pre-rollback-T2", "--yes").returncode == 0
    assert there("cat scratch.txt gone.txt").split() == ["unsent", "two"]
    assert not (s.workdir / "gone.txt").exists(), "the rollback reached the main checkout"


def _masters(s: Serve) -> list[int]:
    control = s.sock.with_name(f"{s.sock.stem}.box.ssh")
    found = subprocess.run(["pgrep", "-f", f"{control} -M"], capture_output=True, text=True)
    return [int(pid) for pid in found.stdout.split()]


def test_a_resumed_session_reconnects_its_remote_role_and_finishes_its_tasks(
        remote_session, ssh_server):
    s = remote_session(remote_role(ssh_server, "coder", "--worker", "--work", "3", "--cli",
                                   "choragos", restart="on-failure"))
    s.wait_booted(["orchestrator", "coder"], timeout=60)
    for text in ("in flight when the server dies", "queued behind it"):
        assert s.cli("delegate", "--to", "coder", "--task", text).returncode == 0
    s.wait(lambda: s.board()["T1"]["state"] == "delivered", 30, message="T1 at work there")
    [old] = _masters(s)
    s.kill9()
    # Its seat's ssh lost its terminal with the server: the agent there ends with it.
    s.wait(lambda: not any("agent.py" in line for line in ssh_server.processes()), 20,
           message="the agent there to end with the killed server")
    s.start(args=("--resume",))
    s.wait(lambda: {t["state"] for t in s.board().values()} == {"done"}, 120,
           message="T1 and T2 done after the resume")
    assert s.board()["T2"]["role"] == "coder"
    # The dead server's connection is not left behind: the resumed one replaced it.
    assert _masters(s) != [old] and len(_masters(s)) == 1
    s.wait(lambda: old not in _masters(s) and not _alive(old), 10,
           message="the old master connection to end")


def test_a_killed_servers_master_connection_ends_with_it(remote_session, ssh_server):
    s = remote_session(remote_role(ssh_server, "coder"))
    s.wait_booted(["orchestrator", "coder"], timeout=60)
    [master] = _masters(s)
    helpers = [int(pid) for pid in subprocess.run(
        ["pgrep", "-P", str(master)], capture_output=True, text=True).stdout.split()]
    s.kill9()
    # Nobody resumes: the connection (and its forwards) must not wait for one.
    s.wait(lambda: _masters(s) == [] and not _alive(master), 10,
           message="the master connection to end with the killed server")
    s.wait(lambda: not any(map(_alive, helpers)), 10, message="what watched it to end too")
    s.start(args=("--resume",))  # so the session ends cleanly, there too
    s.wait(lambda: len(_masters(s)) == 1, 60, message="the resumed session connected")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _working_there(s: Serve, ssh_server) -> None:
    """The remote worker at a task, so its agent runs there when the session ends."""
    assert s.cli("delegate", "--to", "coder", "--task", "a long one").returncode == 0
    s.wait(lambda: s.board()["T1"]["state"] == "delivered", 30, message="T1 at work there")
    assert any("agent.py" in line for line in ssh_server.processes())


def test_choragos_kill_leaves_nothing_running_on_the_host(remote_session, ssh_server):
    s = remote_session(remote_role(ssh_server, "coder", "--worker", "--work", "30"))
    s.wait_booted(["orchestrator", "coder"], timeout=60)
    _working_there(s, ssh_server)
    killed = s.cli("kill", timeout=60)
    assert killed.returncode == 0, killed.stderr
    assert s.proc.wait(60) == 0
    s.wait(lambda: ssh_server.processes() == [], 10, message="nothing left there")
    assert ssh_server.run("sh", "-c", "ls -A ~/.choragos-remote").stdout == ""


def test_a_session_that_gives_up_leaves_nothing_running_on_the_host(remote_session,
                                                                    ssh_server):
    from choragos.actors.session import SESSION_INTENSITY

    s = remote_session(remote_role(ssh_server, "coder", "--worker", "--work", "30"),
                       env={"CHORAGOS_TEST_FAULTS": "accept-loop"})
    s.wait_booted(["orchestrator", "coder"], timeout=60)
    _working_there(s, ssh_server)
    for death in range(1, SESSION_INTENSITY + 2):  # one more than the supervisor allows
        s.proc.send_signal(signal.SIGUSR2)
        if death <= SESSION_INTENSITY:
            s.wait(lambda d=death: sum(e["event"] == "actor restarted" for e in s.events())
                   >= d, 15, message=f"listener restart {death}")
            # Served again before the next fault: one sent while the new
            # listener drains the old loop's leftovers would be lost with them.
            s.wait(lambda: s.cli("ping", timeout=10).returncode == 0, 15,
                   message=f"ping after {death}")
    assert s.proc.wait(60) == 1, s.stderr()
    assert any(e["event"] == "session gave up" for e in s.events())
    s.wait(lambda: ssh_server.processes() == [], 10, message="nothing left there")
    s.start(args=("--resume",))  # and it resumes, connecting again (stopped by the fixture)
    s.wait(lambda: s.board()["T1"]["state"] == "delivered" and any(
        "agent.py" in line for line in ssh_server.processes()), 60, message="T1 there again")


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is needed for the deck")
def test_the_decks_card_names_the_host(ssh_server, shared_log, short_tmp: Path):
    from tests.deck.conftest import TmuxDeck

    d = TmuxDeck(short_tmp, host_toml(ssh_server) + ORCH + remote_role(ssh_server, "coder"))
    # A log the other account can write too (the deck's shell was started before).
    d.agent_log = shared_log
    d.env["AGENT_LOG"] = str(shared_log)
    try:
        d.shell(f"export AGENT_LOG={shared_log}")
        d.serve()
        d.wait_booted(["orchestrator", "coder"], 60)
        screen = d.wait_screen(lambda text: "@box" in text and "orchestrator" in text, 30)
        cards = [line for line in screen.splitlines() if "@box" in line]
        assert len(cards) == 1, screen  # the coder's: the orchestrator runs here
    finally:
        d.cleanup()
    wait_until(lambda: ssh_server.processes() == [], 10, message="nothing left there")


def test_a_rollback_for_a_host_that_cannot_be_reached_changes_nothing(remote_session,
                                                                      ssh_server):
    s = remote_session(remote_role(ssh_server, "coder", "--worker", "--edit", "--cli",
                                   "choragos", merge="manual"))
    s.wait_booted(["orchestrator", "coder"], timeout=60)
    assert s.cli("delegate", "--to", "coder", "--task", "write kept.txt one").returncode == 0
    s.wait(lambda: s.board()["T1"]["state"] == "done", 60, message="T1 done")
    # Its work brought back and committed on the mirror: the checks measured it.
    s.wait(lambda: s.board()["T1"].get("changed") is not None, 60, message="T1 checked")
    mirror = s.workdir / ".choragos" / "worktrees" / "coder"
    head = _git(mirror, "rev-parse", "HEAD")
    ssh_server.stop()  # the host goes away
    done = s.cli("rollback", "T1", "--yes", timeout=90)
    assert done.returncode != 0
    assert "box cannot be reached" in done.stderr and "nothing was rolled back" in done.stderr
    assert (mirror / "kept.txt").read_text() == "one\n"
    assert _git(mirror, "rev-parse", "HEAD") == head
    assert _git(mirror, "status", "--porcelain") == ""
    failed = [e for e in s.events() if e["event"] == "rollback failed"]
    assert len(failed) == 1 and "cannot be reached" in failed[0]["error"], failed
