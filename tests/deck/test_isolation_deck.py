"""The board shows what a task changed, and `d` pages its diff (the real deck, in tmux)."""

from __future__ import annotations

import re

import pytest

from tests.conftest import wait_until
from tests.deck.conftest import TmuxDeck
from tests.integration.harness import role_toml

pytestmark = [pytest.mark.slow, pytest.mark.timeout(150)]

TEAM = (role_toml("orchestrator", start=True) + role_toml("coder", "--worker", "--edit")
        + "\n[ui]\nauto_focus = false\n")


def _board_after_t1(deck, task: str, files: str) -> TmuxDeck:
    """A deck whose coder has done T1 (``task``), its board open on T1's row,
    which counts ``files`` changed."""
    d: TmuxDeck = deck(TEAM)
    d.serve()
    d.wait_booted(["orchestrator", "coder"])
    out = d.cli("delegate", "--to", "coder", "--task", task)
    assert out.returncode == 0, out.stderr
    wait_until(lambda: any("T1 exit=0" in r["text"] for r in d.agents("work-done", "coder")),
               60, message="coder to do T1")
    d.keys("C-b", "t")
    label = re.escape(task.split()[0][:3])
    d.wait_screen(lambda s: re.search(rf"T1\s+coder\s+done\s+\S+\s+\S+\s+✓\s+{files}\s+{label}",
                                      s), 30)
    return d


def test_board_counts_changed_files_and_d_shows_the_diff(deck):
    d = _board_after_t1(deck, "Greet.\nwrite hello.txt hi from T1", "1")
    screen = d.wait_screen("changed hello.txt (added, +1 -0)")
    assert "FILES" in screen
    (d.workdir / "later.txt").write_text("changed after T1 reported\n")
    d.keys("d")
    screen = d.wait_screen("what T1 changed (its checkpoint to its report)")
    assert "+hi from T1" in screen and "hello.txt" in screen
    assert "later.txt" not in screen  # the task's own diff, not the tree's since


def _worktree_task(deck, **keys: object) -> TmuxDeck:
    """A deck whose worktree role alice has been handed a task that writes notes.txt."""
    team = (role_toml("orchestrator", start=True)
            + role_toml("alice", "--worker", "--edit", worktree=True, **keys)
            + "\n[ui]\nauto_focus = false\n")
    d: TmuxDeck = deck(team)
    d.serve()
    d.wait_booted(["orchestrator", "alice"])
    out = d.cli("delegate", "--to", "alice", "--task", "Note.\nwrite notes.txt from alice")
    assert out.returncode == 0, out.stderr
    return d


def test_a_merge_gate_shows_the_diff_and_y_merges(deck):
    d = _worktree_task(deck)
    screen = d.wait_screen(lambda s: "Merge gate" in s and "Approval needed: T1 for alice" in s,
                           30)
    assert "the diff to merge" in screen and "+from alice" in screen
    assert "merge choragos/alice: Note." in screen
    assert not (d.workdir / "notes.txt").exists()
    d.keys("y")
    wait_until(lambda: (d.workdir / "notes.txt").exists(), 20, message="the merge")
    assert (d.workdir / "notes.txt").read_text() == "from alice\n"
    d.wait_screen(lambda s: "Merge gate" not in s)
    wait_until(lambda: any(x.startswith("Merged: choragos/alice with T1")
                           for x in d.submitted("orchestrator")), 20,
               message="the orchestrator told")


def test_d_on_a_worktree_task_pages_its_branch_and_y_on_the_board_merges(deck):
    d = _worktree_task(deck)
    d.wait_screen("Merge gate", 30)
    d.keys("Escape")
    d.wait_screen(lambda s: "Merge gate" not in s)
    d.keys("C-b", "t")
    d.wait_screen(lambda s: re.search(r"T1\s+alice\s+done", s), 20)
    d.keys("d")
    screen = d.wait_screen("what T1 changed (its checkpoint to its report)")
    assert "+from alice" in screen
    d.keys("q")
    d.wait_screen(lambda s: re.search(r"T1\s+alice\s+done", s))
    d.keys("y")
    wait_until(lambda: (d.workdir / "notes.txt").exists(), 20, message="the merge")


def test_u_on_a_worktree_task_rolls_back_its_worktree_only(deck):
    d = _worktree_task(deck, merge="manual")
    tree = d.workdir / ".choragos" / "worktrees" / "alice"
    wait_until(lambda: (tree / "notes.txt").exists(), 30, message="alice to write notes.txt")
    (d.workdir / "notes.txt").write_text("the main tree's own\n")
    d.keys("C-b", "t")
    d.wait_screen(lambda s: re.search(r"T1\s+alice\s+done.*✓", s), 30)
    d.keys("u")
    screen = d.wait_screen("Roll back to before T1?")
    assert "delete   notes.txt" in screen
    d.keys("y")
    wait_until(lambda: not (tree / "notes.txt").exists(), 10, message="the worktree rolled back")
    d.wait_screen("rolled back T1; undo: choragos rollback")
    assert (d.workdir / "notes.txt").read_text() == "the main tree's own\n"
    undo = d.cli("rollback", "pre-rollback-T1", "--yes")
    assert undo.returncode == 0, undo.stderr
    assert (tree / "notes.txt").read_text() == "from alice\n"


def test_a_task_that_made_many_files_shows_their_count_and_pages_its_whole_diff(deck):
    d = _board_after_t1(deck, "Generate.\nspawn gen 3000", "3000")
    d.wait_screen("changed 3000 files (+3000 -0): gen/f000000.txt (added, +1 -0), ")
    d.keys("d")
    d.wait_screen("what T1 changed", 20)
    d.keys("G")  # the last of 3000 files' diffs, about 15,000 lines down
    d.wait_screen("+file 2999", 10)
