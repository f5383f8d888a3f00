"""``choragos diff ID``: exactly what one task changed, whatever came after."""

from __future__ import annotations

import subprocess

from tests.integration.harness import role_toml


def _reports(s) -> list[str]:
    return [x for x in s.submitted("orchestrator") if x.startswith("A worker reports")]


def _git(cwd, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout


def test_each_task_shows_its_own_changes_only(serve):
    s = serve(role_toml("orchestrator", start=True) + role_toml("coder", "--worker", "--edit"))
    s.wait_booted(["orchestrator", "coder"])
    assert s.cli("delegate", "--to", "coder", "--task", "A.\nwrite a.txt from T1").returncode == 0
    s.wait(lambda: len(_reports(s)) == 1, 30, message="T1's report")
    assert s.cli("delegate", "--to", "coder", "--task", "B.\nwrite b.txt from T2").returncode == 0
    s.wait(lambda: len(_reports(s)) == 2, 30, message="T2's report")
    (s.workdir / "c.txt").write_text("the operator's own, later\n")

    first = s.cli("diff", "T1")
    assert first.returncode == 0, first.stderr
    assert "+++ b/a.txt" in first.stdout and "+from T1" in first.stdout
    assert "b.txt" not in first.stdout and "c.txt" not in first.stdout
    second = s.cli("diff", "T2")
    assert "+++ b/b.txt" in second.stdout and "a.txt" not in second.stdout
    assert "c.txt" not in second.stdout
    missing = s.cli("diff", "T9")
    assert missing.returncode == 1 and "no checkpoint for T9" in missing.stderr
    assert s.cli("diff", "../x").returncode == 2


def test_a_task_still_at_work_shows_its_tree_so_far_and_says_so(serve):
    s = serve(role_toml("orchestrator", start=True)
              + role_toml("coder", "--worker", "--work", "60"))
    s.wait_booted(["orchestrator", "coder"])
    assert s.cli("delegate", "--to", "coder", "--task", "Long job").returncode == 0
    s.wait(lambda: s.board()["T1"].get("checkpoint"), 20, message="T1's checkpoint")
    (s.workdir / "early.txt").write_text("so far\n")
    out = s.cli("diff", "T1")
    assert out.returncode == 0, out.stderr
    assert "T1 has not reported yet" in out.stderr and "+so far" in out.stdout


def test_a_merged_worktree_task_keeps_its_own_diff(serve):
    s = serve(role_toml("orchestrator", start=True)
              + role_toml("alice", "--worker", "--edit", worktree=True, merge="auto"))
    s.wait_booted(["orchestrator", "alice"])
    assert s.cli("delegate", "--to", "alice", "--task", "N.\nwrite notes.txt from alice"
                 ).returncode == 0
    s.wait_merged("notes.txt")
    (s.workdir / "notes.txt").write_text("edited in the main tree after the merge\n")
    out = s.cli("diff", "T1")
    assert out.returncode == 0, out.stderr
    assert "+from alice" in out.stdout and "edited in the main tree" not in out.stdout
