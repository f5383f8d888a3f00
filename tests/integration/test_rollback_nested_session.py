"""Through a real session and ``choragos rollback``: the plan (the dry
run's ack, the verb's lines) and the result (the ack, the verb's lines, the
event log) say which nested repository's files the rollback puts back, and
what it leaves undone there (a commit the agent made)."""

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


def test_a_nested_repositorys_files_are_put_back_and_its_commit_named(serve):
    s = serve(TEAM)
    s.wait_booted(["orchestrator", "coder"])
    nested = s.workdir / "lib"
    nested.mkdir()
    git(nested, "init", "-q")
    (nested / "inside.txt").write_text("committed\n")
    git(nested, "add", "-A")
    git(nested, "commit", "-q", "-m", "c")
    (nested / "notes.txt").write_text("the operator's, not committed\n")
    assert s.cli("delegate", "--to", "coder", "--task", "Edit the library").returncode == 0
    s.wait(lambda: s.board()["T1"].get("checkpoint"), message="T1's checkpoint")
    (nested / "inside.txt").write_text("the agent's, committed\n")
    git(nested, "commit", "-q", "-a", "-m", "the agent's")
    (nested / "notes.txt").unlink()
    (nested / "stray.txt").write_text("the agent's, not committed\n")

    ask = {"cmd": "rollback", "target": "T1", "dry_run": True}
    plan = wire.request(s.sock, ask, 15.0, workdir=s.workdir)
    assert plan["status"] == "ok" and not plan["empty"], plan
    assert (plan["restore"], plan["delete"]) == (["lib/inside.txt", "lib/notes.txt"],
                                                 ["lib/stray.txt"]), plan
    assert (plan["nested_restored"], plan["nested_changes"]) == (["lib"], []), plan
    (note,) = plan["nested_notes"]
    assert note.startswith("lib: its HEAD moved from ") and "not undone" in note, note
    shown = s.cli("rollback", "T1", "--dry-run")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert "  restore  lib/inside.txt" in lines and "  delete   lib/stray.txt" in lines, lines
    assert "  files    lib" in lines and f"warning: {note}" in lines, lines

    done = s.cli("rollback", "T1", "--yes")
    assert done.returncode == 0, done.stderr
    assert "restored 2 files, deleted 1" in done.stdout, done.stdout
    assert f"warning: {note}" in done.stdout.splitlines(), done.stdout
    assert (nested / "inside.txt").read_text() == "committed\n"
    assert (nested / "notes.txt").read_text() == "the operator's, not committed\n"
    assert not (nested / "stray.txt").exists()
    (logged,) = [e for e in s.events() if e["event"] == "rollback"]
    assert logged["nested_restored"] == ["lib"] and logged["nested_notes"] == [note], logged
    # Without the session the verb puts the agent's files back from the undo point.
    alone = subprocess.run([sys.executable, "-m", "choragos", "rollback", "pre-rollback-T1",
                            "--yes"], cwd=s.workdir, capture_output=True, text=True,
                           timeout=30, env={**s.env, "CHORAGOS_SOCK": str(s.sock) + ".none"})
    assert alone.returncode == 0, (alone.stdout, alone.stderr)
    assert (nested / "stray.txt").read_text() == "the agent's, not committed\n"
    assert not (nested / "notes.txt").exists()
