"""The core loop through a real ``serve --headless`` with fixture agents."""

from __future__ import annotations

import concurrent.futures
import json
import os
import select
import subprocess
import sys
import time

import ptyprocess
import pytest

from tests.conftest import pid_alive, wait_until
from tests.integration.harness import AGENT, role_toml

TEAM = (role_toml("orchestrator", start=True) + role_toml("coder", "--worker")
        + role_toml("reviewer"))


def test_boot_briefs_every_role_once(serve):
    s = serve(TEAM)
    s.wait_booted(["orchestrator", "coder", "reviewer"])
    for role in ("orchestrator", "coder", "reviewer"):
        lines = s.submitted(role)
        assert len(lines) == 1, lines
        assert f"Read .choragos/briefs/{role}.md now" in lines[0]
    brief = (s.workdir / ".choragos/briefs/orchestrator.md").read_text()
    assert "| coder |" in brief and "choragos delegate --to" in brief
    status = json.loads(s.cli("status", "--json").stdout)["roles"]
    assert {r["name"]: r["state"] for r in status} == {
        "orchestrator": "idle", "coder": "idle", "reviewer": "idle"}


def test_delegate_to_work_done_loop(serve):
    s = serve(TEAM)
    s.wait_booted(["orchestrator", "coder"])
    out = s.cli("delegate", "--to", "coder", "--task", "Add retry with jitter")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "delegated T1 to coder"
    task_file = s.workdir / ".choragos/tasks/T1.md"
    assert "Add retry with jitter" in task_file.read_text()
    s.wait(lambda: any("A worker reports: [T1 from coder]" in line
                           for line in s.submitted("orchestrator")), 20,
               message="the report in the orchestrator")
    report_line = next(line for line in s.submitted("orchestrator") if "T1 from coder" in line)
    assert "finished T1 in the fixture" in report_line
    assert "Full report: read" in report_line and ".choragos/reports/T1.md" in report_line
    assert s.board()["T1"]["state"] == "done"
    names = [e["event"] for e in s.events()]
    for needed in ("deck starting", "delegate", "checkpoint", "delivered", "work-done"):
        assert needed in names, needed
    assert names.index("checkpoint") < names.index("delivered") < names.index("work-done")
    assert (s.workdir / ".choragos/worker-task-coder.md").read_text() == task_file.read_text()


def test_hostile_task_text_is_carried_inert(serve, short_tmp):
    s = serve(TEAM)
    s.wait_booted(["reviewer"])
    pwned = short_tmp / "pwned"
    hostile = f'"; touch {pwned} # $(touch {pwned}) `touch {pwned}` \x1b[2J\x1b]0;x\x07'
    out = s.cli("delegate", "--to", "reviewer", "--task", hostile)
    assert out.returncode == 0, out.stderr
    assert "\x1b" not in out.stdout + out.stderr
    s.wait(lambda: s.board()["T1"]["state"] == "delivered", 15, message="delivery")
    assert hostile in (s.workdir / ".choragos/tasks/T1.md").read_text()
    typed = s.submitted("reviewer")[-1]
    assert "touch" not in typed and "\x1b" not in typed
    assert not pwned.exists()


def test_bad_requests_change_nothing(serve):
    s = serve(TEAM)
    for args, reason in [
        (["delegate", "--to", "../etc", "--task", "x"], "role"),
        (["delegate", "--to", "nobody", "--task", "x"], "unknown role nobody"),
        (["work-done", "--id", "T99", "--task", "x", "--report", "/nonexistent/r.md"], "report"),
    ]:
        out = s.cli(*args)
        assert out.returncode != 0, args
        assert reason in (out.stderr + out.stdout), (args, out.stderr)
    assert s.board() == {}
    assert s.cli("ping").returncode == 0


def test_unknown_work_done_is_passed_on_not_dropped(serve):
    s = serve(TEAM)
    s.wait_booted(["orchestrator"])
    out = s.cli("work-done", "--id", "T42", "--task", "stray report")
    assert out.returncode == 1, out.stderr
    assert "unknown task id T42" in out.stderr and "passed to the orchestrator" in out.stderr
    s.wait(lambda: any("T42" in line and "unknown task id" in line
                           for line in s.submitted("orchestrator")), 15,
               message="the stray report reaching the orchestrator")
    assert any(e["event"] == "work-done" and e["task"] == "T42" for e in s.events())


def test_gate_approve_and_reject(serve):
    s = serve(TEAM + role_toml("release", approve=True))
    s.wait_booted(["orchestrator", "release"])
    out = s.cli("delegate", "--to", "release", "--task", "Ship v1")
    assert out.stdout.strip() == "delegated T1 to release (waiting for approval)"
    s.cli("delegate", "--to", "release", "--task", "Ship v2")
    gates = json.loads(s.cli("gate", "list", "--json").stdout)["gates"]
    assert [g["id"] for g in gates] == ["T1", "T2"]
    assert s.submitted("release") and all("T1" not in x for x in s.submitted("release"))
    assert s.cli("gate", "approve", "T1").returncode == 0
    s.wait(lambda: any("tasks/T1.md" in x for x in s.submitted("release")), 15,
               message="approved delivery")
    assert s.cli("gate", "reject", "T2", "--reason", "not before Friday").returncode == 0
    s.wait(lambda: any("rejected delegation T2" in x and "not before Friday" in x
                           for x in s.submitted("orchestrator")), 15,
               message="the rejection reaching the orchestrator")
    board = s.board()
    assert board["T1"]["state"] == "delivered" and board["T2"]["state"] == "rejected"
    assert not any("tasks/T2.md" in x for x in s.submitted("release"))
    refused = s.cli("gate", "approve", "T2")
    assert refused.returncode == 1 and "no delegation T2" in refused.stderr


def test_slow_booting_agent_is_briefed_after_it_settles(serve):
    s = serve(role_toml("orchestrator", "--boot", "2.5", start=True))
    s.wait_booted(["orchestrator"], timeout=20)
    assert len(s.submitted("orchestrator")) == 1
    assert not s.agents("dropped", "orchestrator")


def test_silent_boot_drops_input_then_retry_lands(serve):
    s = serve(role_toml("orchestrator", "--boot", "4", "--silent", start=True))
    s.wait_booted(["orchestrator"], timeout=25)
    retries = [e for e in s.events() if e["event"] == "boot injection retry"]
    assert retries, "the first injection should have been dropped and retried"
    assert s.agents("dropped", "orchestrator")
    assert len(s.submitted("orchestrator")) == 1


def test_fixture_ignores_text_and_enter_in_one_write():
    """The fixture treats text+Enter in one write as a paste, as agent TUIs do."""
    proc = ptyprocess.PtyProcess.spawn([sys.executable, str(AGENT)],
                                       env={"PATH": os.environ["PATH"]})
    seen = bytearray()

    def screen_has(needle: bytes) -> bool:
        while select.select([proc.fd], [], [], 0.05)[0]:
            seen.extend(proc.read(4096))
        return needle in seen.replace(b"\r", b"")

    try:
        wait_until(lambda: screen_has(b"agent> "), 10, message="prompt")
        proc.write(b"hello\r")
        # Echoed with the Enter as a newline: the fixture has read it all.
        wait_until(lambda: screen_has(b"agent> hello\n"), 5, message="the pasted line")
        assert b"you said" not in seen
        proc.write(b"\r")
        # The line still holds the newline: "hello" was not submitted early.
        wait_until(lambda: screen_has(b"you said: hello\n\n"), 5,
                   message="a submit after a separate Enter")
    finally:
        proc.terminate(force=True)


def test_restart_budget_then_failed(serve):
    s = serve(role_toml("orchestrator", start=True)
              + role_toml("coder", "--crash-after", "0.3", restart="on-failure",
                          restart_retries=2))
    s.wait_event(lambda e: e["event"] == "role state" and e["role"] == "coder"
                 and e["state"] == "failed", 40, "coder failed")

    def coder_exits() -> list[dict]:
        return [e for e in s.events() if e["event"] == "role exited" and e["role"] == "coder"]
    # The role tells the core its new state and its exit in two messages; the
    # "failed" state may be logged before the last exit.
    s.wait(lambda: len(coder_exits()) >= 3, 10, message="the third exit logged")
    exits = coder_exits()
    assert len(exits) == 3
    assert [e["restarting"] for e in exits] == [True, True, False]
    assert "budget" in exits[-1]["reason"]
    starts = s.agents("start", "coder")
    assert len(starts) == 3
    status = {r["name"]: r for r in json.loads(s.cli("status", "--json").stdout)["roles"]}
    assert status["coder"]["state"] == "failed" and status["coder"]["restarts"] == 2
    assert status["orchestrator"]["state"] == "idle"
    assert s.cli("restart", "coder").returncode == 0
    s.wait(lambda: len(s.agents("start", "coder")) == 4, 10, message="manual restart")


def test_stop_kills_an_agent_that_ignores_sigterm(serve):
    s = serve(role_toml("orchestrator", "--ignore-term", start=True))
    s.wait_booted(["orchestrator"])
    began = time.monotonic()
    assert s.stop() == 0
    assert time.monotonic() - began >= 2.5  # the grace period before SIGKILL
    stopped = [e for e in s.events() if e["event"] == "role stopped"]
    assert stopped and "signal 9" in stopped[0]["status"]


@pytest.mark.alone
def test_hundred_concurrent_delegations(serve):
    s = serve(role_toml("orchestrator", start=True) + role_toml("coder"))
    s.wait_booted(["coder"])
    with concurrent.futures.ThreadPoolExecutor(max_workers=25) as pool:
        results = list(pool.map(
            lambda n: s.cli("delegate", "--to", "coder", "--task", f"job {n}", timeout=30),
            range(100)))
    assert all(r.returncode == 0 for r in results), [r.stderr for r in results if r.returncode]
    ids = [r.stdout.split()[1] for r in results]
    assert len(set(ids)) == 100
    board = s.board()
    assert len(board) == 100
    assert all((s.workdir / f".choragos/tasks/{i}.md").exists() for i in ids)
    s.wait(lambda: sum("New task" in x for x in s.submitted("coder")) == 100, 120,
           interval=0.5, message="all 100 deliveries")
    order = [int(x.split("New task T")[1].split()[0]) for x in s.submitted("coder")
             if "New task" in x]
    assert order == sorted(order) == list(range(1, 101))


def test_second_session_in_the_same_directory_is_refused(serve):
    s = serve(TEAM)
    second = subprocess.run([sys.executable, "-m", "choragos", "serve", "--headless"],
                            cwd=s.workdir, env=s.env, capture_output=True, text=True,
                            timeout=20)
    assert second.returncode == 1
    assert f"pid {s.proc.pid}" in second.stderr and "already running" in second.stderr
    assert s.cli("ping").returncode == 0


def test_server_killed_hard_leaves_a_usable_directory(serve, short_tmp):
    s = serve(TEAM)
    s.wait_booted(["coder"])
    s.cli("delegate", "--to", "reviewer", "--task", "look at it")
    s.wait(lambda: s.board()["T1"]["state"] == "delivered", 15, "delivery")
    s.proc.kill()
    s.proc.wait()
    for pid in s.agent_pids():  # the agents lose their PTY and exit
        s.wait(lambda p=pid: not pid_alive(p), 10, f"agent {pid} to exit")
    names = [e["event"] for e in s.events()]
    assert "delivered" in names and "deck stopped" not in names  # readable up to the kill
    refs = subprocess.run(["git", "for-each-ref", "refs/choragos/checkpoints"],
                          cwd=s.workdir, capture_output=True, text=True).stdout
    assert "-T1" in refs
    s.start()  # the stale socket is cleared under the lock; a new session runs
    s.wait_booted(["coder"])
    assert s.cli("ping").returncode == 0
