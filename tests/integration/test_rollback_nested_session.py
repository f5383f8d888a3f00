"""Through a real session and ``choragos rollback``: the plan (the dry
run's ack, the verb's lines) and the result (the ack, the verb's lines, the
event log) name a nested repository holding work not committed there, which
the rollback leaves exactly as it is."""

from __future__ import annotations

import os
import subprocess
import sys

from choragos.control import wire
from tests.integration.harness import role_toml

TEAM = role_toml("orchestrator", "--shell", start=True) + role_toml("coder", "--shell")


def git(cwd, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid",
                        "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(cwd), "PATH": os.environ["PATH"]})


def test_a_nested_repository_with_uncommitted_work_is_named_plan_result_and_log(serve):
    s = serve(TEAM)
    s.wait_booted(["orchestrator", "coder"])
    nested = s.workdir / "lib"
    nested.mkdir()
    git(nested, "init", "-q")
    (nested / "inside.txt").write_text("committed\n")
    git(nested, "add", "-A")
    git(nested, "commit", "-q", "-m", "c")
    assert s.cli("delegate", "--to", "coder", "--task", "Edit the library").returncode == 0
    s.wait(lambda: s.board()["T1"].get("checkpoint"), message="T1's checkpoint")
    (nested / "inside.txt").write_text("the agent's, not committed\n")

    ask = {"cmd": "rollback", "target": "T1", "dry_run": True}
    plan = wire.request(s.sock, ask, 15.0, workdir=s.workdir)
    assert plan["status"] == "ok" and plan["empty"], plan
    assert (plan["nested_changes"], plan["nested_changes_count"]) == (["lib"], 1), plan
    shown = s.cli("rollback", "T1", "--dry-run")
    assert shown.returncode == 0, shown.stderr
    assert "nothing to roll back" in shown.stdout
    assert "nested repositories with work not committed there" in shown.stdout
    assert "  changed  lib" in shown.stdout.splitlines(), shown.stdout

    (s.workdir / "stray.txt").write_text("new\n")  # now a file of the tree to undo too
    done = s.cli("rollback", "T1", "--yes")
    assert done.returncode == 0, done.stderr
    assert "restored 0 files, deleted 1" in done.stdout, done.stdout
    assert "  changed  lib" in done.stdout.splitlines(), done.stdout
    assert (nested / "inside.txt").read_text() == "the agent's, not committed\n"
    (logged,) = [e for e in s.events() if e["event"] == "rollback"]
    assert logged["nested_changes"] == ["lib"] and logged["submodules"] == [], logged
    # Without the session the verb says the same of the same tree.
    alone = subprocess.run([sys.executable, "-m", "choragos", "rollback", "T1", "--dry-run"],
                           cwd=s.workdir, capture_output=True, text=True, timeout=30,
                           env={**s.env, "CHORAGOS_SOCK": str(s.sock) + ".none"})
    assert "  changed  lib" in alone.stdout.splitlines(), (alone.stdout, alone.stderr)
