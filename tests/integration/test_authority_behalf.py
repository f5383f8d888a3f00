"""What the session runs for a role runs with that role's authority, and never
finds its program where an agent can write: verify, git's hooks in a merge."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import wait_until
from tests.integration.harness import role_toml

ORCH = role_toml("orchestrator", start=True)
REVIEWER = role_toml("reviewer", approve=True)  # its tasks wait at a gate for the operator


def _approver(s, marker: Path) -> str:
    """A script that tries to approve gate T1 and says how it went in ``marker``."""
    return (f"#!/bin/sh\n{shlex.quote(sys.executable)} -m choragos gate approve T1 --sock "
            f"{shlex.quote(str(s.sock))} >> {shlex.quote(str(marker))} 2>&1\nexit 0\n")


def _gate_waits(s) -> None:
    assert s.cli("delegate", "--to", "reviewer", "--task", "nobody approves this").returncode == 0
    s.wait(lambda: s.board().get("T1", {}).get("state") == "gated", message="T1 at its gate")


def test_a_planted_sh_on_the_roles_path_is_not_what_verify_runs(serve):
    s = serve(ORCH + REVIEWER + role_toml(
        "coder", "--worker", "--edit", verify_rounds=1,
        verify="sh -c 'test ! -e forbidden.txt'"))
    s.wait_booted(["orchestrator", "reviewer", "coder"])
    _gate_waits(s)
    # What a worker can do: .choragos/bin is first on every role's PATH.
    marker = s.workdir.parent / "planted-ran"
    planted = s.workdir / ".choragos" / "bin" / "sh"
    planted.write_text(_approver(s, marker))
    planted.chmod(0o755)
    assert s.cli("delegate", "--to", "coder", "--task", "write forbidden.txt x").returncode == 0
    failed = s.wait_event(lambda e: e["event"] in ("verify failed", "verify passed"), 30,
                          "the verify")
    assert failed["event"] == "verify failed", failed
    assert not marker.exists()
    assert s.board()["T1"]["state"] == "gated"


def test_a_verify_script_the_worker_rewrote_has_the_workers_authority_only(serve):
    s = serve(ORCH + REVIEWER + role_toml("coder", "--worker", "--edit",
                                          verify="/bin/sh verify.sh"))
    s.wait_booted(["orchestrator", "reviewer", "coder"])
    _gate_waits(s)
    marker = s.workdir.parent / "verify-said"
    (s.workdir / "verify.sh").write_text(_approver(s, marker))  # the worker's own tree
    assert s.cli("delegate", "--to", "coder", "--task", "write a.txt x").returncode == 0
    s.wait_event(lambda e: e["event"] == "verify passed", 30, "the verify")
    said = marker.read_text()
    assert "gate approve is an operator command and was sent from inside the coder role's " \
           "process tree" in said, said
    refused = s.wait_event(lambda e: e["event"] == "request refused" and e["cmd"] == "gate")
    assert refused["caller"] == "coder"
    assert s.board()["T1"]["state"] == "gated"


def test_git_hooks_a_worker_configured_never_run_in_the_sessions_own_git(serve):
    s = serve(ORCH + REVIEWER + role_toml("coder", "--worker", "--edit", worktree=True,
                                          merge="auto"))
    s.wait_booted(["orchestrator", "reviewer", "coder"])
    _gate_waits(s)
    # What a worker can do from its worktree: the repository's config is shared.
    hooks, marker = s.workdir.parent / "hooks", s.workdir.parent / "hook-ran"
    hooks.mkdir()
    for name in ("pre-commit", "commit-msg", "post-commit", "pre-merge-commit", "post-merge",
                 "reference-transaction", "post-checkout"):
        (hooks / name).write_text(_approver(s, marker))
        (hooks / name).chmod(0o755)
    tree = s.workdir / ".choragos" / "worktrees" / "coder"
    subprocess.run(["git", "config", "core.hooksPath", str(hooks)], cwd=tree, check=True)
    assert s.cli("delegate", "--to", "coder", "--task", "write a.txt x").returncode == 0
    s.wait_event(lambda e: e["event"] == "merged", 30, "the auto merge")
    assert (s.workdir / "a.txt").read_text() == "x\n"
    assert not marker.exists()
    assert s.board()["T1"]["state"] == "gated"


def test_a_roles_program_planted_in_the_workspace_is_never_the_one_started(tmp_path: Path):
    """`.choragos/bin` leads every role's PATH: a worker's `.choragos/bin/claude`
    would otherwise become the next agent of every role that restarts."""
    from choragos.terminal.ptyproc import PtyChild, SpawnError

    work, outside, ran = tmp_path / "work", tmp_path / "bin", tmp_path / "ran"
    planted = work / ".choragos" / "bin"
    for folder, word in ((planted, "planted"), (outside, "installed")):
        folder.mkdir(parents=True)
        (folder / "agentx").write_text(f"#!/bin/sh\necho {word} >> {ran}\n")
        (folder / "agentx").chmod(0o755)
    child = PtyChild.spawn(["agentx"], work, {"PATH": f"{planted}:{outside}:/usr/bin:/bin"})
    try:
        wait_until(lambda: child.poll() is not None, 10, message="agentx to exit")
    finally:
        child.close()
    assert ran.read_text() == "installed\n"
    with pytest.raises(SpawnError, match="not found on PATH outside the workspace"):
        PtyChild.spawn(["agentx"], work, {"PATH": str(planted)})
