"""The core's ``rollback`` command, over the real socket of a real session."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shlex
import subprocess
import sys
import threading
from pathlib import Path

from choragos.control import wire
from tests.integration.harness import role_toml

TEAM = role_toml("orchestrator", "--shell", start=True) + role_toml("coder", "--shell")


def ask(s, request: dict) -> dict:
    return wire.request(s.sock, request, 15.0, workdir=s.workdir)


def checkpointed_task(s) -> str:
    """T1 delegated (so checkpointed), then the files changed as a worker would."""
    assert s.cli("delegate", "--to", "coder", "--task", "Rewrite the README").returncode == 0
    s.wait(lambda: s.board()["T1"].get("checkpoint"), message="T1's checkpoint")
    (s.workdir / "README.md").write_text("wrecked\n")
    (s.workdir / "stray.txt").write_text("new\n")
    return s.board()["T1"]["checkpoint"]


def test_a_dry_run_plans_and_the_rollback_restores_and_is_logged(serve):
    s = serve(TEAM)
    s.wait_booted(["orchestrator", "coder"])
    before = (s.workdir / "README.md").read_text()
    ref = checkpointed_task(s)
    plan = ask(s, {"cmd": "rollback", "target": "T1", "dry_run": True})
    assert plan["status"] == "ok" and plan["checkpoint"] == ref, plan
    assert plan["restore"] == ["README.md"] and plan["delete"] == ["stray.txt"], plan
    assert not plan["empty"] and not plan["conflicts"]
    assert (s.workdir / "README.md").read_text() == "wrecked\n"  # a dry run changes nothing
    assert not [e for e in s.events() if e["event"].startswith("rollback")]

    done = ask(s, {"cmd": "rollback", "target": plan["checkpoint"]})
    assert done["status"] == "ok", done
    assert (done["restored"], done["deleted"], done["saved"]) == (1, 1, "pre-rollback-T1")
    assert (s.workdir / "README.md").read_text() == before
    assert not (s.workdir / "stray.txt").exists()
    (logged,) = [e for e in s.events() if e["event"] == "rollback"]
    assert (logged["task"], logged["checkpoint"], logged["by"]) == ("T1", ref, "operator")


def test_bad_targets_get_a_clear_error_and_change_nothing(serve):
    s = serve(TEAM)
    s.wait_booted(["orchestrator", "coder"])
    checkpointed_task(s)
    for request, words in (({"cmd": "rollback"}, 'needs "target"'),
                           ({"cmd": "rollback", "target": "T1 T2"}, "no checkpoint for 'T1 T2'"),
                           ({"cmd": "rollback", "target": "T1", "dry_run": "yes"},
                            '"dry_run" must be true or false'),
                           ({"cmd": "rollback", "target": "T99"}, "no checkpoint for")):
        ack = ask(s, request)
        assert ack["status"] == "error" and words in ack["error"], (request, ack)
    assert (s.workdir / "README.md").read_text() == "wrecked\n"
    assert (s.workdir / "stray.txt").exists()
    assert [e["target"] for e in s.events() if e["event"] == "rollback failed"] == ["T1 T2", "T99"]


def test_a_role_may_not_roll_back(serve):
    s = serve(TEAM)
    s.wait_booted(["orchestrator", "coder"])
    checkpointed_task(s)
    code = ("import json,os; from pathlib import Path; from choragos.control import wire; "
            "print(json.dumps(wire.request(Path(os.environ['CHORAGOS_SOCK']), "
            "{'cmd': 'rollback', 'target': 'T1'}, 10.0)))")
    before = len(s.agents("ran", "orchestrator"))
    line = f"run: {shlex.quote(sys.executable)} -c {shlex.quote(code)}"
    assert s.cli("keys", "orchestrator", "--text", line, "enter").returncode == 0
    s.wait(lambda: len(s.agents("ran", "orchestrator")) > before, 20, message="the run")
    ran = json.loads(s.agents("ran", "orchestrator")[before]["text"])
    assert "operator command" in ran["out"], ran
    assert (s.workdir / "README.md").read_text() == "wrecked\n"
    assert not [e for e in s.events() if e["event"] == "rollback"]


def test_the_cli_verb_rolls_back_through_the_session_and_is_logged(serve):
    s = serve(TEAM)
    s.wait_booted(["orchestrator", "coder"])
    before = (s.workdir / "README.md").read_text()
    ref = checkpointed_task(s)
    shown = s.cli("rollback", "T1", "--dry-run")
    assert shown.returncode == 0 and f"ref {ref}" in shown.stdout, shown
    assert not [e for e in s.events() if e["event"].startswith("rollback")]
    done = s.cli("rollback", "T1", "--yes")
    assert done.returncode == 0, done.stderr
    assert "restored 1 file, deleted 1" in done.stdout, done.stdout
    assert "saved the state before as pre-rollback-T1 (refs/" in done.stdout, done.stdout
    assert "undo with: choragos rollback pre-rollback-T1" in done.stdout
    assert (s.workdir / "README.md").read_text() == before
    (logged,) = [e for e in s.events() if e["event"] == "rollback"]
    assert (logged["target"], logged["checkpoint"], logged["by"]) == (ref, ref, "operator")
    assert (logged["restored"], logged["deleted"], logged["saved"]) == (1, 1, "pre-rollback-T1")
    # The undo goes through the session as well.
    assert s.cli("rollback", "pre-rollback-T1", "--yes").returncode == 0
    assert (s.workdir / "README.md").read_text() == "wrecked\n"
    assert [e["task"] for e in s.events() if e["event"] == "rollback"] == ["T1",
                                                                         "pre-rollback-T1"]


def test_the_cli_verb_is_refused_inside_a_role(serve):
    s = serve(TEAM)
    s.wait_booted(["orchestrator", "coder"])
    checkpointed_task(s)
    cli = f"{shlex.quote(sys.executable)} -m choragos rollback T1 --yes"
    before = len(s.agents("ran", "orchestrator"))
    assert s.cli("keys", "orchestrator", "--text", f"run: {cli}", "enter").returncode == 0
    s.wait(lambda: len(s.agents("ran", "orchestrator")) > before, 20, message="the run")
    ran = json.loads(s.agents("ran", "orchestrator")[before]["text"])
    assert ran["rc"] == 1 and "operator command" in ran["out"], ran
    assert "orchestrator role's process tree" in ran["out"], ran
    assert (s.workdir / "README.md").read_text() == "wrecked\n"
    assert not [e for e in s.events() if e["event"].startswith("rollback")]


def test_the_cli_plan_through_the_session_reads_as_without_one(serve):
    s = serve(TEAM)
    s.wait_booted(["orchestrator", "coder"])
    checkpointed_task(s)
    for i in range(25):  # more than the 20 paths listed
        (s.workdir / f"new{i:02}.txt").write_text("x\n")
    through = s.cli("rollback", "T1", "--dry-run")
    alone = subprocess.run([sys.executable, "-m", "choragos", "rollback", "T1", "--dry-run"],
                           cwd=s.workdir, capture_output=True, text=True, timeout=30,
                           env={**s.env, "CHORAGOS_SOCK": str(s.sock) + ".none"})
    assert through.returncode == alone.returncode == 0, (through.stderr, alone.stderr)
    lines = through.stdout.splitlines()
    assert "warning: a choragos session is running here" in through.stdout
    assert "27 files to restore" not in through.stdout and "  ... and 7 more" in lines
    # The same lines but the checkpoint's age and the live-session warning.
    assert [x for x in lines[1:] if "session is running" not in x] == \
        alone.stdout.splitlines()[1:], (through.stdout, alone.stdout)
    missing = s.cli("rollback", "T9", "--yes")
    assert missing.returncode == 1 and "no checkpoint for" in missing.stderr, missing.stderr
    assert [e["target"] for e in s.events() if e["event"].startswith("rollback")] == []


def test_a_rollback_waiting_for_its_tree_holds_no_other_request(serve):
    """The restore runs on the checkpointer's thread: while it waits for the
    store's lock (held here, as a `choragos rollback` in a shell would), the
    core still answers, and the rollback completes once the lock is free."""
    s = serve(TEAM)
    s.wait_booted(["orchestrator", "coder"])
    before = (s.workdir / "README.md").read_text()
    checkpointed_task(s)
    lock_path = str(s.workdir / ".git" / "choragos" / "lock")
    lock = os.open(lock_path, os.O_RDWR)
    done: list[dict] = []
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        asking = threading.Thread(target=lambda: done.append(
            ask(s, {"cmd": "rollback", "target": "T1"})))
        asking.start()
        # The rollback has reached the store once the session has the lock
        # file open (it waits for the lock with it open).
        s.wait(lambda: lock_path in opened_by(s.proc.pid), message="the rollback at the lock")
        for cmd in ("ping", "status", "board"):  # the core's 4 s answer limit applies
            assert ask(s, {"cmd": cmd})["status"] == "ok", cmd
        assert not done and (s.workdir / "README.md").read_text() == "wrecked\n"
    finally:
        os.close(lock)
    asking.join(20)
    assert done and done[0]["status"] == "ok", done
    assert (s.workdir / "README.md").read_text() == before
    assert [e["task"] for e in s.events() if e["event"] == "rollback"] == ["T1"]


def opened_by(pid: int) -> set[str]:
    found = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            found.add(os.readlink(fd))
    return found
