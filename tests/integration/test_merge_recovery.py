"""A merge the operator approved is not lost to a kill -9 or a handoff."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tests.integration.harness import role_toml

# A verify that runs while the file "hold" is there: it keeps the aftercare,
# which runs the merges one after another, busy.
HOLD = (f"{sys.executable} -c \"import os, time\nwhile os.path.exists('hold'): "
        "time.sleep(0.05)\"")


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout


def _told(s, role: str, lead: str) -> list[str]:
    return [x for x in s.submitted(role) if x.startswith(lead)]


def test_approved_merges_go_in_after_a_kill_even_one_made_by_hand_meanwhile(serve):
    s = serve(role_toml("lead", start=True)
              + role_toml("alice", "--worker", "--edit", worktree=True)
              + role_toml("bob", "--worker", "--edit", worktree=True)
              + role_toml("slow", "--worker", verify=HOLD))
    s.wait_booted(["lead", "alice", "bob", "slow"])
    (s.workdir / "hold").write_text("")
    assert s.cli("delegate", "--to", "alice", "--task", "write a.txt A").returncode == 0
    assert s.cli("delegate", "--to", "bob", "--task", "write b.txt B").returncode == 0
    s.wait(lambda: sum(e["event"] == "merge gated" for e in s.events()) == 2, 30,
           message="two merge gates")
    assert s.cli("delegate", "--to", "slow", "--task", "check slowly").returncode == 0
    s.wait_event(lambda e: e["event"] == "work-done" and e["task"] == "T3", 30, "the verify")
    for task in ("T1", "T2"):
        out = s.cli("gate", "approve", task)
        assert out.returncode == 0, out.stdout + out.stderr
    try:
        waiting = s.board()["T1"]["waiting"]
        assert waiting["kind"] == "merging"
    finally:
        s.kill9()  # both merges were queued behind the verify: neither ran
        (s.workdir / "hold").unlink()
    assert not (s.workdir / "a.txt").exists()
    _git(s.workdir, "merge", "-q", "--no-edit", "choragos/bob")  # the operator, meanwhile
    # What a kill inside T1's own `git merge` leaves: its merge state and git's lock.
    _git(s.workdir, "merge", "--no-ff", "--no-commit", "-q", waiting["commit"])
    lock = s.workdir / ".git" / "index.lock"
    lock.write_text("")
    os.utime(lock, (time.time() - 60,) * 2)

    s.start(args=("--resume",))
    restored = s.wait_event(lambda e: e["event"] == "isolation restored", 20, "the restore")
    assert restored["merging"] == ["T1", "T2"]
    cleared = s.wait_event(lambda e: e["event"] == "merge leftovers cleared", 30, "leftovers")
    assert cleared["files"] == [str(lock), str(s.workdir / ".git" / "MERGE_HEAD")]
    merged = s.wait_event(lambda e: e["event"] == "merged" and e["task"] == "T1", 30,
                          "the approved merge run after the resume")
    assert _git(s.workdir, "log", "-1", "--format=%s", merged["commit"]).startswith(
        "Merge choragos/alice: T1")
    assert (s.workdir / "a.txt").read_text() == "A\n"
    by_hand = s.wait_event(lambda e: e["event"] == "merged" and e["task"] == "T2", 10, "T2")
    assert by_hand["commit"] == _git(s.workdir, "rev-parse", "HEAD^1").strip()
    s.wait(lambda: _told(s, "lead", "Merged: choragos/alice with T1"), 20, message="T1 told")
    assert _told(s, "lead", "Merged: choragos/bob with T2")
    board = s.board()
    assert board["T1"]["waiting"] is None and board["T1"]["checks"].startswith("merged (")


def test_a_merge_gate_of_a_role_the_handoff_dropped_still_merges(serve):
    s = serve(role_toml("lead", "--handoff", start=True)
              + role_toml("alice", "--worker", "--edit", worktree=True))
    s.wait_booted(["lead", "alice"])
    assert s.cli("delegate", "--to", "alice", "--task", "write a.txt A").returncode == 0
    s.wait_event(lambda e: e["event"] == "merge gated", 30, "the merge gate")
    new = s.workdir / "next.toml"
    new.write_text(role_toml("lead", start=True))
    out = s.cli("handoff", "--config", str(new), "--wait", "20", timeout=40)
    assert out.returncode == 0, out.stderr
    assert s.proc.wait(30) == 0
    s.start(args=("--resume", "--loosen"))
    out = s.cli("gate", "approve", "T1")  # the core crashed here: alice has no worktree now
    assert out.returncode == 0, out.stdout + out.stderr
    s.wait(lambda: _told(s, "lead", "Merged: choragos/alice with T1"), 20, message="the merge")
    assert (s.workdir / "a.txt").read_text() == "A\n"
