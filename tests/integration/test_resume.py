"""Durable sessions: a killed or stopped server is resumed with ``serve --resume``."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
import time
from pathlib import Path

from choragos.board import journal
from tests.integration.harness import role_toml

TEAM = (role_toml("lead", start=True)
        + role_toml("coder", "--worker", "--work", "30")
        + role_toml("reviewer", approve=True)
        + role_toml("tester", "--worker", "--work", "0.2"))


def delegate(serve, role: str, text: str) -> str:
    out = serve.cli("delegate", "--to", role, "--task", text)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()[1]  # "delegated T3 to coder"


def test_kill9_then_resume_keeps_board_gates_ids_and_hands_work_back(serve):
    s = serve(TEAM)
    s.wait_booted(["lead", "coder", "reviewer", "tester"])
    busy = delegate(s, "coder", "long job")
    gated = delegate(s, "reviewer", "needs a look")
    quick = delegate(s, "tester", "quick job")
    s.wait(lambda: s.board()[quick]["state"] == "done", 20, "the tester's work-done")
    s.wait(lambda: s.board()[busy]["state"] == "delivered", 20, "the coder's delivery")
    before = s.board()
    s.kill9()

    s.start(args=("--resume",))
    after = s.board()
    assert set(after) == set(before)
    for tid in (busy, gated, quick):
        assert after[tid]["state"] == before[tid]["state"]
        assert after[tid]["text"] == before[tid]["text"]
    gates = json.loads(s.cli("gate", "list", "--json").stdout)["gates"]
    assert [g["id"] for g in gates] == [gated]
    fresh = delegate(s, "tester", "after the restart")
    assert int(fresh[1:]) == max(int(t[1:]) for t in before) + 1
    s.wait(lambda: any("session restarted" in line and busy in line
                       for line in s.submitted("coder")), 30, "the coder's task handed back")
    brief = (s.workdir / ".choragos" / "briefs" / "lead.md").read_text()
    assert "This session was resumed" in brief and busy in brief
    assert "Do not re-delegate in-flight tasks" in brief
    assert any(e["event"] == "session resumed" for e in s.events())
    approve = s.cli("gate", "approve", gated)
    assert approve.returncode == 0, approve.stderr
    s.wait(lambda: s.board()[gated]["state"] == "delivered", 20, "the approved gate")
    home = journal.state_dir(s.workdir)
    assert stat.S_IMODE(home.stat().st_mode) == 0o700


def test_serve_without_resume_keeps_the_old_state_aside_and_names_a_dead_server(serve):
    s = serve(TEAM)
    s.wait_booted(["lead"])
    delegate(s, "reviewer", "gated work")
    pid = s.proc.pid
    s.kill9()
    s.start()
    # The socket answers before serve prints its notices: wait for them.
    err = s.wait(lambda: "choragos serve --resume" in s.stderr() and s.stderr(), 10,
                 "the notices")
    assert f"the session that ran as pid {pid} died at" in err
    assert "was kept in .choragos/state.kept-" in err
    assert "choragos serve --resume .choragos/state.kept-" in err
    assert s.board() == {}
    kept = [p for p in (s.workdir / ".choragos").iterdir() if p.name.startswith("state.kept-")]
    assert len(kept) == 1 and list(journal.load(kept[0]).tasks) == ["T1"]
    doctor = s.cli("doctor").stdout.splitlines()
    assert [line for line in doctor if "kept aside" in line] == [
        f"WARN an earlier session's state is kept aside in .choragos/{kept[0].name} "
        f"(1 task, 1 open): `choragos serve --resume .choragos/{kept[0].name}` resumes it; "
        f"delete it once it is not needed"]

    # the way out the notice names: resume the state kept aside
    assert s.stop() == 0
    s.start(args=("--resume", f".choragos/{kept[0].name}"))
    assert s.board()["T1"]["state"] == "gated"
    assert not kept[0].exists()


def test_a_new_session_continues_the_task_ids_of_the_directory(serve):
    s = serve(TEAM)
    s.wait_booted(["lead", "tester"])
    first = delegate(s, "tester", "first session's job")
    s.wait(lambda: s.board()[first]["state"] == "done", 20, "the first session's work-done")
    task_file = s.workdir / ".choragos" / "tasks" / f"{first}.md"
    kept = task_file.read_text()
    assert s.stop() == 0

    s.start()  # not a resume: a new session in the same directory
    s.wait_booted(["lead", "tester"])
    second = delegate(s, "tester", "second session's job")
    assert int(second[1:]) == int(first[1:]) + 1
    s.wait(lambda: s.board()[second]["state"] == "done", 20, "the second session's work-done")
    assert task_file.read_text() == kept  # the earlier session's task file is untouched
    listed = json.loads(s.cli("checkpoints", "--json").stdout)["checkpoints"]
    tasks = [c["task_id"] for c in listed if c["task_id"] in (first, second)]
    assert sorted(tasks) == sorted([first, second])


def serve_fails(s, *args: str) -> str:
    """Run a ``serve`` that must refuse to start; return what it said."""
    done = subprocess.run([sys.executable, "-m", "choragos", "serve", "--headless", *args],
                          cwd=s.workdir, env=s.env, capture_output=True, text=True,
                          timeout=30)
    assert done.returncode != 0, done.stderr
    return done.stderr


def test_resume_refuses_a_config_that_dropped_a_role_with_open_tasks(serve):
    s = serve(TEAM)
    s.wait_booted(["lead"])
    gated = delegate(s, "reviewer", "needs a look")
    assert s.stop() == 0
    config = s.workdir / ".choragos.toml"
    config.write_text(role_toml("lead", start=True) + role_toml("coder"))
    # (--loosen: the file changes what the coder runs, which the start would ask about first.)
    err = serve_fails(s, "--resume", "--loosen")
    assert "no longer has roles that still have open tasks: reviewer (T1)" in err
    assert "Put them back in" in err
    assert list(journal.load(journal.state_dir(s.workdir)).tasks) == [gated]

    other = s.workdir / "other.toml"
    other.write_text(TEAM)
    err = serve_fails(s, "--resume", "--config", str(other))
    assert f"ran with the config {config}" in err
    assert f"choragos serve --resume --config {config}" in err


def test_resume_refuses_an_unknown_journal_version(serve):
    s = serve(TEAM)
    s.wait_booted(["lead"])
    delegate(s, "reviewer", "x")
    assert s.stop() == 0
    home = journal.state_dir(s.workdir)
    (home / journal.JOURNAL).write_bytes(journal.frame(
        {"kind": "session", "seq": 99, "t": 1.0, "version": 7, "config": "x", "pid": 1}))
    err = serve_fails(s, "--resume")
    assert "journal version 7" in err and "without --resume" in err


def test_handoff_ends_the_session_and_the_next_team_gets_recap_and_handoff(serve):
    team = (role_toml("lead", "--handoff", start=True)
            + role_toml("coder", "--worker", "--work", "30")
            + role_toml("reviewer", approve=True))
    s = serve(team)
    s.wait_booted(["lead", "coder", "reviewer"])
    busy = delegate(s, "coder", "long job")
    gated = delegate(s, "reviewer", "needs a look")
    s.wait(lambda: s.board()[busy]["state"] == "delivered", 20, "the coder's delivery")
    new = s.workdir / "next.toml"
    new.write_text(role_toml("lead", start=True) + role_toml("coder", "--worker", "--work", "30"))
    out = s.cli("handoff", "--config", str(new), "--wait", "20", timeout=40)
    assert out.returncode == 0, out.stderr
    assert "wrote .choragos/handoff.md" in out.stdout
    assert s.proc.wait(30) == 0
    memory = (s.workdir / ".choragos" / "memory.md").read_text()
    assert "The fixture team was here." in memory

    # The next team's file is compared with the config the operator confirmed last.
    err = serve_fails(s, "--resume")
    assert f"{new} loosens what only you decide" in err and "lead args" in err
    assert "run `choragos serve --headless --resume --loosen`" in err
    s.start(args=("--resume", "--loosen"))
    roles = [r["name"] for r in json.loads(s.cli("status", "--json").stdout)["roles"]]
    assert roles == ["lead", "coder"]
    board = s.board()
    assert board[gated]["state"] == "rejected"
    assert "not in the team after a handoff" in board[gated]["note"]
    # ... and said in the log, so `choragos report` counts it as the board does.
    assert [e["role"] for e in s.events()
            if e["event"] == "gate rejected" and e.get("task") == gated] == ["reviewer"]
    assert board[busy]["state"] == "delivered"
    brief = (s.workdir / ".choragos" / "briefs" / "lead.md").read_text()
    assert brief.index("This session was resumed") < brief.index("Handoff from the previous")
    assert "Goal: the fixture goal." in brief and ".choragos/memory.md" in brief
    s.wait(lambda: any("session restarted" in line and busy in line
                       for line in s.submitted("coder")), 30, "the coder's task handed back")


def role_view(s, name: str) -> dict:
    out = s.cli("status", "--json")
    return next(r for r in json.loads(out.stdout)["roles"] if r["name"] == name)


def test_resume_keeps_a_spent_restart_budget_and_a_clock_with_its_time_left(serve):
    team = (role_toml("lead", start=True)
            + role_toml("flaky", "--crash-after", "0.3", restart="on-failure",
                        restart_retries=1)
            + role_toml("slow", timeout="8s"))
    s = serve(team)
    s.wait(lambda: role_view(s, "flaky")["state"] == "failed", 30, "flaky's budget spent")
    s.wait_booted(["slow"])
    task = delegate(s, "slow", "takes forever")
    s.wait(lambda: s.board()[task]["state"] == "delivered", 20, "the delivery")
    delivered = s.board()[task]
    s.wait(lambda: s.board()[task]["age"] - delivered["age"] >= 4, 10, "4 s of the clock")
    s.kill9()
    time.sleep(5)  # the server is down longer than the clock had left: not counted

    s.start(args=("--resume",))
    flaky = role_view(s, "flaky")
    assert flaky["restarts"] >= 1
    s.wait(lambda: role_view(s, "flaky")["state"] == "failed", 20,
           "flaky failed again at once: no fresh budget")
    assert len([e for e in s.events() if e["event"] == "role exited"
                and e["role"] == "flaky"]) == 1
    timeout = s.wait_event(lambda e: e["event"] == "timeout" and e["task"] == task, 20,
                           "the resumed clock to run out")
    assert timeout["seconds"] == 8
    # The resumed clock, as the session journaled it: about 4 s left (less
    # than 8: it was not restarted; more than 0: the 5 s the server was down
    # did not count; at most a heartbeat more than 4, the time counted only
    # up to the last record before the kill).
    path = journal.state_dir(s.workdir) / journal.JOURNAL
    resumed = [r for r in journal.read_records(path)
               if r["kind"] == "clock" and r.get("action") == "start"]
    assert [r["task"] for r in resumed] == [task, task]  # started, then resumed
    left = resumed[1]["left"]
    assert 0.5 <= left <= 5.5, f"the resumed clock had {left:.1f}s left"
    ran = timeout["t"] - resumed[1]["t"]
    assert left - 0.1 <= ran <= left + 3.0, f"it ran out {ran:.1f}s after, {left:.1f}s left"


def test_detach_names_the_dead_server_and_resumes_in_the_background(serve):
    s = serve(TEAM)
    s.wait_booted(["lead"])
    gated = delegate(s, "reviewer", "gated work")
    pid = s.proc.pid
    s.kill9()
    out = s.cli("serve", "--detach", "--resume", timeout=60)
    assert out.returncode == 0, out.stderr
    assert f"resuming the session that ran as pid {pid} (1 task, 1 open" in out.stderr
    assert s.board()[gated]["state"] == "gated"
    assert s.cli("shutdown").returncode == 0
    s.wait(lambda: not s.sock.exists(), 30, "the detached session to stop")
    s.start(args=("--resume",))  # the fixture stops this one
    s.wait(lambda: "resuming the session that ran as pid" in s.stderr(), 10, "the notice")


def cmdline(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]


def test_resume_args_are_added_to_the_first_start_of_a_resumed_session_only(serve):
    s = serve(role_toml("lead", start=True)
              + role_toml("coder", "--worker", resume_args=["--paste-mode"]))
    s.wait_booted(["coder"])
    assert "--paste-mode" not in cmdline(role_view(s, "coder")["pid"])
    s.kill9()
    s.start(args=("--resume",))
    s.wait_booted(["coder"])
    assert cmdline(role_view(s, "coder")["pid"])[-1] == "--paste-mode"
    assert s.cli("restart", "coder").returncode == 0
    s.wait(lambda: (view := role_view(s, "coder"))["pid"] and view["restarts"] >= 1
           and "--paste-mode" not in cmdline(view["pid"]), 20, "a plain restart")


def test_stopped_or_crashed_the_way_back_is_serve_resume_not_a_fresh_serve(serve):
    """Every "no session" a person meets after a crash or a stop names
    ``serve --resume``: a plain ``serve`` would keep the open tasks aside."""
    s = serve(TEAM)
    s.wait_booted(["lead"])
    gated = delegate(s, "reviewer", "gated work")
    hint = ("the last session here is saved (1 task, 1 open): `choragos serve --resume` "
            "carries it on; a plain `choragos serve` starts afresh and keeps it aside")
    s.kill9()  # the socket is left behind: "connection refused", not "not found"
    status = s.cli("status")
    assert status.returncode == 3 and hint in status.stderr, status.stderr
    assert "starts a new one" not in status.stderr

    s.start(args=("--resume",))
    out = s.cli("shutdown")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == (f"the session is shutting down: 1 task still open ({gated}); "
                                  "`choragos serve --resume` carries it on")
    s.wait(lambda: s.proc.poll() is not None, 60, "the session to stop")
    for verb in ("status", "board"):
        said = s.cli(verb)
        assert said.returncode == 3 and hint in said.stderr, said.stderr
        assert "start one with `choragos serve`" not in said.stderr
    assert f"OK   no session running; {hint}" in s.cli("doctor").stdout.splitlines()
