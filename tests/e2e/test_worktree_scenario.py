"""A real Claude worker in its own worktree; its change reaches the main
checkout through a merge gate approved with `choragos gate approve`."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.fakemodel import FakeModel, Turn, text, tool
from tests.e2e.scenario import BRIEF, ClaudeCrew, claude_role

pytestmark = [pytest.mark.claude, pytest.mark.timeout(120)]


def bash(command: str, description: str) -> list[dict]:
    return tool("Bash", {"command": command, "description": description})


def tool_said(*needles: str) -> Callable[[Turn], bool]:
    return lambda turn: all(needle in turn.tool_text for needle in needles)


def test_a_worktree_workers_change_is_merged_through_a_gate(
        claude_bin: Path, fake_model: FakeModel, short_tmp: Path) -> None:
    config = (claude_role("orchestrator", "claude", start=True)
              + claude_role("coder", "claude", worktree=True))
    s = ClaudeCrew(short_tmp, config, fake_model, claude_bin)
    # The permission rules must be in the worktree too, so they are committed.
    subprocess.run(["git", "add", ".claude/settings.json"], cwd=s.workdir, check=True)
    subprocess.run(["git", "commit", "-qm", "claude settings"], cwd=s.workdir, check=True)
    tree = s.workdir / ".choragos" / "worktrees" / "coder"
    fake_model.on(BRIEF.format(role="orchestrator"),
                  bash('choragos delegate --to coder --task "Add hello.txt"', "Delegate"))
    fake_model.on(tool_said("delegated T1 to coder"), text("Waiting for the coder."))
    fake_model.on("New task T1 from choragos",
                  tool("Write", {"file_path": str(tree / "hello.txt"),
                                 "content": "hello from the coder\n"}))
    fake_model.on(tool_said("hello.txt"),
                  bash('choragos work-done --id T1 --done --task "Added hello.txt"',
                       "Report the task done"))
    fake_model.on(tool_said("reported T1"), text("Reported."))
    fake_model.on("A worker reports: [T1 from coder]", text("Waiting for the merge."))
    fake_model.on("Merged: choragos/coder with T1", text("Good."))
    try:
        s.start()
        s.wait_booted(["orchestrator", "coder"], timeout=40)
        gate = s.wait_event(lambda e: e["event"] == "merge gated", 60, "the merge gate")
        assert gate["branch"] == "choragos/coder"
        assert "+hello from the coder" in Path(gate["diff"]).read_text()
        assert not (s.workdir / "hello.txt").exists()
        s.wait_told("A worker reports: [T1 from coder] Added hello.txt (1 file changed "
                    "(+1 -0)) Its branch choragos/coder waits at a merge gate")
        out = s.cli("gate", "approve", "T1")
        assert out.returncode == 0, out.stderr
        s.wait_event(lambda e: e["event"] == "merged", 30, "the merge")
        assert (s.workdir / "hello.txt").read_text() == "hello from the coder\n"
        log = subprocess.run(["git", "log", "--format=%s", "-2"], cwd=s.workdir, check=True,
                             capture_output=True, text=True).stdout.splitlines()
        assert log == ["Merge choragos/coder: T1 Added hello.txt", "Added hello.txt"]
        s.wait_told("Merged: choragos/coder with T1 from coder is in the main checkout")
    finally:
        s.finish()
