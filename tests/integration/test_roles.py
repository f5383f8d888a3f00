"""Roles that stay right: timeouts, pause, hooks, waiting, transcripts (issue 4)."""

from __future__ import annotations

import json
import signal
import sys
import time
from pathlib import Path

from tests.conftest import pid_alive, wait_until
from tests.integration.harness import Serve, role_toml


def hooks_toml(out_dir) -> str:
    lines = ["[ui]"]
    for hook in ("on_gate", "on_input", "on_timeout"):
        # written whole, then renamed: the test polls for the file's existence
        lines.append(f"{hook} = 'env > {out_dir}/{hook}.tmp && mv {out_dir}/{hook}.tmp "
                     f"{out_dir}/{hook}.env'")
    return "\n".join(lines) + "\n"


def read_env(path) -> dict[str, str]:
    pairs = [line.split("=", 1) for line in path.read_text().splitlines() if "=" in line]
    return dict(pairs)


def status(s: Serve) -> dict[str, dict]:
    return {r["name"]: r for r in json.loads(s.cli("status", "--json").stdout)["roles"]}


def test_timeout_notify_marks_rings_hooks_and_keeps_the_worker(serve, short_tmp):
    pwned = short_tmp / "pwned"
    s = serve(role_toml("orchestrator", start=True)
              + role_toml("coder", timeout="1s") + hooks_toml(short_tmp))
    s.wait_booted(["coder"])
    hostile = f'"; touch {pwned} # $(touch {pwned})'
    s.cli("delegate", "--to", "coder", "--task", hostile)
    s.wait(lambda: s.board()["T1"]["state"] == "timed-out", 10, "the timeout")
    event = s.wait_event(lambda e: e["event"] == "timeout", 5, "the timeout event")
    assert event["action"] == "notify"
    s.wait(lambda: (short_tmp / "on_timeout.env").exists(), 5, "the on_timeout hook")
    env = read_env(short_tmp / "on_timeout.env")
    assert env["CHORAGOS_ROLE"] == "coder" and env["CHORAGOS_TASK_ID"] == "T1"
    assert env["CHORAGOS_TASK"] == hostile
    assert not pwned.exists()
    assert len(s.agents("start", "coder")) == 1  # the worker keeps running
    s.cli("work-done", "--id", "T1", "--task", "late but done")
    s.wait(lambda: s.board()["T1"]["state"] == "done", 5, "a late work-done")


def test_paused_time_does_not_count_toward_the_timeout(serve):
    s = serve(role_toml("orchestrator", start=True) + role_toml("coder", timeout="2s"))
    s.wait_booted(["coder"])
    s.cli("delegate", "--to", "coder", "--task", "slow")
    delivered = s.wait_event(lambda e: e["event"] == "delivered", 10, "delivery")
    assert s.cli("pause", "coder").returncode == 0
    s.wait(lambda: status(s)["coder"]["state"] == "paused", 5, "paused")
    paused = s.wait_event(lambda e: e["event"] == "role state" and e["state"] == "paused")
    pid = status(s)["coder"]["pid"]
    with open(f"/proc/{pid}/stat") as handle:
        assert handle.read().split()[2] == "T"  # SIGSTOPped for real
    s.wait(lambda: time.time() > paused["t"] + 3, 10, "three paused seconds")
    assert s.board()["T1"]["state"] == "delivered"
    assert s.cli("resume", "coder").returncode == 0
    timeout = s.wait_event(lambda e: e["event"] == "timeout", 10, "the timeout")
    resumed = s.wait_event(lambda e: e["event"] == "role state" and e["was"] == "paused")
    paused_for = resumed["t"] - paused["t"]
    assert timeout["t"] - delivered["t"] >= 2 + paused_for - 0.3


def test_timeout_restart_kills_and_the_policy_respawns(serve):
    s = serve(role_toml("orchestrator", start=True)
              + role_toml("coder", timeout="1s", timeout_action="restart",
                          restart="on-failure"))
    s.wait_booted(["coder"])
    s.cli("delegate", "--to", "coder", "--task", "never finishes")
    s.wait(lambda: len(s.agents("start", "coder")) == 2, 15, "the respawn")
    s.wait(lambda: s.board()["T1"]["state"] == "failed", 10, "T1 failed")
    s.wait(lambda: any("Task T1 to coder failed" in line
                       for line in s.submitted("orchestrator")), 15, "orchestrator told")
    s.wait(lambda: sum(e["event"] == "boot injection" and e["role"] == "coder"
                       for e in s.events()) == 2, 15, "the re-brief")


def test_waiting_for_input_fires_on_input_and_holds_deliveries(serve, short_tmp):
    s = serve(role_toml("orchestrator", start=True)
              + role_toml("coder", "--ask", "New task") + hooks_toml(short_tmp))
    s.wait_booted(["coder"])
    s.cli("delegate", "--to", "coder", "--task", "first")
    s.wait(lambda: status(s)["coder"]["state"] == "waiting", 10, "waiting")
    s.wait(lambda: (short_tmp / "on_input.env").exists(), 5, "the on_input hook")
    assert read_env(short_tmp / "on_input.env")["CHORAGOS_ROLE"] == "coder"
    s.cli("delegate", "--to", "coder", "--task", "second")
    s.wait(lambda: status(s)["coder"]["queued"] == 1, 5, "the second task to queue")
    assert not s.agents("answer", "coder")  # nothing was typed into the question
    assert s.board()["T2"]["state"] == "queued"
    out = s.cli("keys", "coder", "--text", "y")  # the operator answers, headless
    assert out.returncode == 0 and out.stdout.strip() == "sent 1 character and 0 keys to coder"
    s.wait(lambda: s.board()["T2"]["state"] == "delivered", 10, "T2 after the answer")
    assert [a["text"] for a in s.agents("answer", "coder")] == ["y"]


def test_gate_fires_on_gate_with_the_task_in_the_environment(serve, short_tmp):
    s = serve(role_toml("orchestrator", start=True) + role_toml("release", approve=True)
              + hooks_toml(short_tmp))
    s.cli("delegate", "--to", "release", "--task", "ship $(it)")
    s.wait(lambda: (short_tmp / "on_gate.env").exists(), 10, "the on_gate hook")
    env = read_env(short_tmp / "on_gate.env")
    assert env["CHORAGOS_TASK"] == "ship $(it)" and env["CHORAGOS_TASK_ID"] == "T1"


def test_failing_hook_is_logged(serve):
    s = serve(role_toml("orchestrator", start=True) + role_toml("release", approve=True)
              + "[ui]\non_gate = 'exit 4'\n")
    s.cli("delegate", "--to", "release", "--task", "x")
    failed = s.wait_event(lambda e: e["event"] == "hook failed", 10, "hook failure")
    assert failed["hook"] == "on_gate" and failed["reason"] == "exit status 4"


def test_transcript_has_a_header_per_spawn_and_the_final_screen(serve):
    s = serve(role_toml("orchestrator", start=True)
              + role_toml("coder", "--exit-on", "New task", restart="on-failure"))
    s.wait_booted(["coder"])
    s.cli("delegate", "--to", "coder", "--task", "please exit")
    s.wait(lambda: len(s.agents("start", "coder")) == 2, 15, "the respawn")
    s.wait_booted(["coder"])
    text = (s.workdir / ".choragos/logs/coder.log").read_text()
    assert text.count("=== ") == 2
    assert "you said: New task T1" in text  # the screen, flushed when the pane closed


def test_sigusr1_dumps_thread_stacks_to_the_server_log(serve):
    s = serve(role_toml("orchestrator", start=True))
    # The dump shows the threads there are: the session answers before its
    # role's reader has started (the role makes its screen after the spawn).
    s.wait_event(lambda e: e["event"] == "role state" and e.get("state") == "booting", 15)
    s.proc.send_signal(signal.SIGUSR1)
    log = s.workdir / ".choragos/logs/server.log"
    # main, timers, actors, readers: every thread, not just the one signalled
    s.wait(lambda: log.read_text().count("Thread 0x") >= 4
           and "ptyproc.py" in log.read_text(), 5, "a full stack dump")


def test_a_crash_in_c_code_leaves_every_threads_stack_in_the_server_log(short_tmp):
    work = short_tmp / "work"
    work.mkdir()
    s = Serve(work, role_toml("orchestrator", start=True), sock=short_tmp / "s.sock").start()
    try:
        s.wait_booted(["orchestrator"])
        s.proc.send_signal(signal.SIGSEGV)  # as a fault in a C extension would raise it
        assert s.proc.wait(10) == -signal.SIGSEGV
        text = (work / ".choragos/logs/server.log").read_text()
        assert "Fatal Python error: Segmentation fault" in text
        assert text.count("Thread 0x") >= 4, text[-2000:]
    finally:
        s.stop()
        for pid in s.agent_pids():  # the agents lose their terminal and go
            wait_until(lambda pid=pid: not pid_alive(pid), 10, message=f"agent {pid} to exit")


def test_a_cli_that_needs_a_cursor_report_gets_one(serve):
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "vt_needs_cpr.py"
    s = serve(role_toml("orchestrator", start=True)
              + f'[[roles]]\nname = "asker"\ncommand = "{sys.executable}"\n'
                f'args = ["{fixture}"]\n')
    exited = s.wait_event(lambda e: e["event"] == "role exited" and e["role"] == "asker",
                          10, "the asker to finish")
    assert exited["status"] == "exit status 0"  # 3 would mean nobody answered
    assert "cursor at 1;6" in (s.workdir / ".choragos/logs/asker.log").read_text()


def test_bracketed_paste_when_the_agent_enabled_it(serve):
    s = serve(role_toml("orchestrator", "--paste-mode", start=True) + role_toml("coder"))
    s.wait_booted(["orchestrator", "coder"])
    pastes = s.agents("paste", "orchestrator")
    assert len(pastes) == 1
    assert pastes[0]["text"].startswith("\x1b[200~You are the orchestrator")
    assert pastes[0]["text"].endswith("\x1b[201~")  # the Enter came separately
    assert s.submitted("orchestrator")[0].startswith("You are the orchestrator")
    assert not s.agents("paste", "coder")  # mode 2004 off: typed plainly


def test_keys_typed_into_a_paused_role_wait_for_resume(serve):
    s = serve(role_toml("orchestrator", start=True) + role_toml("coder"))
    s.wait_booted(["coder"])
    assert s.cli("pause", "coder").returncode == 0
    s.wait(lambda: status(s)["coder"]["state"] == "paused", 5, "paused")
    assert s.cli("keys", "coder", "--text", "while paused", "enter").returncode == 0
    s.wait_event(lambda e: e["event"] == "operator input", 5, "the input event")
    assert "while paused" not in s.submitted("coder")
    assert s.cli("resume", "coder").returncode == 0
    s.wait(lambda: "while paused" in s.submitted("coder"), 10, "the held keys after resume")


def test_an_unrecognised_prompt_counts_as_idle_once_the_screen_is_quiet(serve):
    s = serve(role_toml("orchestrator", start=True) + role_toml("coder"),
              env={"AGENT_PROMPT": "ready: "})  # no prompt character we know
    s.wait_booted(["orchestrator", "coder"], timeout=15)
    s.cli("delegate", "--to", "coder", "--task", "anything")
    s.wait(lambda: s.board()["T1"]["state"] == "delivered", 15, "delivery")
    s.wait(lambda: status(s)["coder"]["state"] == "idle", 10, "idle after the quiet spell")
