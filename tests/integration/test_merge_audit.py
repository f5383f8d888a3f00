"""Probe: merges under kill -9, a worktree whose branch moved, hostile worktree content."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.integration.harness import role_toml


def _git(cwd: Path, *args: str, check: bool = True) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=check, capture_output=True,
                          text=True).stdout


# A verify that runs while the file "hold" is there: it keeps the aftercare busy.
HOLD = (f"{sys.executable} -c \"import os, time\nwhile os.path.exists('hold'): "
        "time.sleep(0.05)\"")


def test_an_approved_merge_survives_a_kill_before_it_ran(serve):
    s = serve(role_toml("lead", start=True)
              + role_toml("alice", "--worker", "--edit", worktree=True)
              + role_toml("slow", "--worker", verify=HOLD))
    s.wait_booted(["lead", "alice", "slow"])
    (s.workdir / "hold").write_text("")
    assert s.cli("delegate", "--to", "alice", "--task", "write a.txt A").returncode == 0
    s.wait_event(lambda e: e["event"] == "merge gated", 30, "the merge gate")
    assert s.cli("delegate", "--to", "slow", "--task", "check slowly").returncode == 0
    s.wait_event(lambda e: e["event"] == "work-done" and e.get("task") == "T2", 30, "slow done")
    out = s.cli("gate", "approve", "T1")
    assert out.returncode == 0, out.stderr
    s.kill9()
    (s.workdir / "hold").unlink()
    s.start(args=("--resume",))
    s.wait(lambda: (s.workdir / "a.txt").exists(), 30, message="the approved merge after resume")


def test_a_worker_that_switched_branch(serve):
    s = serve(role_toml("lead", start=True)
              + role_toml("alice", "--worker", "--edit", "--work", "3", worktree=True))
    s.wait_booted(["lead", "alice"])
    assert s.cli("delegate", "--to", "alice", "--task", "write a.txt A").returncode == 0
    s.wait_event(lambda e: e["event"] == "delivered" or e["event"] == "injection", 30, "typed")
    tree = s.workdir / ".choragos" / "worktrees" / "alice"
    _git(tree, "checkout", "-q", "-b", "elsewhere")
    line = s.wait(lambda: next((x for x in s.submitted("lead") if "[T1" in x), None), 30,
                  message="report")
    assert "could not be committed on choragos/alice (the worktree " in line
    assert "is on elsewhere, not on choragos/alice; nothing was committed" in line
    s.wait_event(lambda e: e["event"] == "commit failed", 5, "the event")


def test_handoff_dropping_a_worktree_role_with_a_merge_gate(serve):
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
    assert [g["id"] for g in json.loads(s.cli("gate", "list", "--json").stdout)["gates"]] == ["T1"]
    out = s.cli("gate", "approve", "T1")
    assert out.returncode == 0, out.stdout + out.stderr
    s.wait(lambda: (s.workdir / "a.txt").exists(), 20, message="the dropped role's merge")
    s.wait(lambda: [x for x in s.submitted("lead") if x.startswith("Merged: choragos/alice")], 20,
           message="the lead told")
