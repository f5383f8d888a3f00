"""A git worktree per role and its merge back: gates, auto, manual, conflicts, rollback."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.harness import Serve, base_env, git_init, role_toml

ORCH = role_toml("orchestrator", start=True)


def _git(cwd: Path, *args: str, check: bool = True) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=check, capture_output=True,
                          text=True).stdout


@pytest.fixture
def session(short_tmp: Path) -> Iterator:
    """A session started after the repository holds ``files`` (committed), so
    the worktrees branch from a HEAD that has them."""
    made: list[Serve] = []

    def make(config: str, files: dict[str, str]) -> Serve:
        work = short_tmp / "work"
        work.mkdir()
        git_init(work)
        for name, text in files.items():
            (work / name).write_text(text)
        _git(work, "add", ".")
        _git(work, "commit", "-qm", "fixtures")
        made.append(Serve(work, config, sock=short_tmp / "s.sock", git=False))
        return made[-1].start()

    yield make
    for one in made:
        assert one.stop() == 0, one.stderr()
        one.assert_no_leftovers()


def _lines(s: Serve, role: str, lead: str) -> list[str]:
    return [x for x in s.submitted(role) if x.startswith(lead)]


def _gates(s: Serve) -> dict[str, dict]:
    import json
    out = s.cli("gate", "list", "--json")
    assert out.returncode == 0, out.stderr
    return {g["id"]: g for g in json.loads(out.stdout)["gates"]}


def test_two_workers_one_file_merged_through_gates_the_second_conflicts(session):
    s = session(ORCH + role_toml("alice", "--worker", "--edit", worktree=True)
                + role_toml("bob", "--worker", "--edit", worktree=True),
                {"shared.txt": "one\ntwo\n"})
    s.wait_booted(["orchestrator", "alice", "bob"])
    tree = s.workdir / ".choragos" / "worktrees"
    assert _git(tree / "alice", "branch", "--show-current").strip() == "choragos/alice"
    assert s.cli("delegate", "--to", "alice", "--task", "write shared.txt alice").returncode == 0
    assert s.cli("delegate", "--to", "bob", "--task", "write shared.txt bob").returncode == 0
    gates = s.wait(lambda: len(g := _gates(s)) == 2 and g, 40, message="two merge gates")
    assert gates["T1"]["kind"] == "merge" and gates["T1"]["label"].startswith(
        "merge choragos/alice: write shared.txt alice")
    diff = Path(gates["T1"]["file"]).read_text()
    assert "-one\n-two\n+alice" in diff
    # the work is committed on each branch: subject = summary, body = task id and text
    log = _git(s.workdir, "log", "-1", "--format=%s%n%b", "choragos/alice")
    assert log.startswith("finished T1 in the fixture\nTask: T1\n\nwrite shared.txt alice")
    assert (s.workdir / "shared.txt").read_text() == "one\ntwo\n"  # nothing merged yet

    assert s.cli("gate", "approve", "T1").returncode == 0
    s.wait_event(lambda e: e["event"] == "merged" and e["task"] == "T1", 20, "T1 merged")
    assert (s.workdir / "shared.txt").read_text() == "alice\n"
    head_after_first = _git(s.workdir, "rev-parse", "HEAD")

    assert s.cli("gate", "approve", "T2").returncode == 0
    refused = s.wait_event(lambda e: e["event"] == "merge refused", 20, "T2 refused")
    assert refused["conflicts"] == ["shared.txt"]
    # never half-merged: the main checkout is exactly as after the first merge
    assert (s.workdir / "shared.txt").read_text() == "alice\n"
    assert _git(s.workdir, "rev-parse", "HEAD") == head_after_first
    assert _git(s.workdir, "status", "--porcelain", "--untracked-files=no") == ""
    assert not (s.workdir / ".git" / "MERGE_HEAD").exists()
    assert _git(s.workdir, "show", "choragos/bob:shared.txt") == "bob\n"  # branch kept
    told = s.wait(lambda: _lines(s, "orchestrator", "Not merged: choragos/bob"), 20,
                  message="the orchestrator told")
    assert "conflicts with the main checkout in shared.txt" in told[0]
    s.wait(lambda: _lines(s, "bob", "Not merged: choragos/bob"), 20, message="bob told")
    assert _lines(s, "orchestrator", "Merged: choragos/alice with T1")


def test_auto_merges_manual_leaves_the_branch_and_rollback_undoes_the_merge(session):
    s = session(ORCH + role_toml("auto", "--worker", "--edit", worktree=True, merge="auto")
                + role_toml("hand", "--worker", "--edit", worktree=True, merge="manual"),
                {"base.txt": "base\n"})
    s.wait_booted(["orchestrator", "auto", "hand"])
    assert s.cli("delegate", "--to", "auto", "--task", "write a.txt from auto").returncode == 0
    s.wait_event(lambda e: e["event"] == "merged", 30, "the auto merge")
    assert (s.workdir / "a.txt").read_text() == "from auto\n"
    assert _git(s.workdir, "log", "-1", "--format=%s").startswith("Merge choragos/auto: T1")
    assert s.cli("delegate", "--to", "hand", "--task", "write b.txt by hand").returncode == 0
    line = s.wait(lambda: next(iter(_lines(s, "orchestrator", "A worker reports: [T2")),
                               None), 30, message="the manual report")
    assert "Its work is on branch choragos/hand, not merged (merge = manual)" in line
    assert "(1 file changed (+1 -0))" in line
    assert not (s.workdir / "b.txt").exists()
    assert _git(s.workdir, "show", "choragos/hand:b.txt") == "by hand\n"
    # the merge was checkpointed first, so a rollback undoes it like a task
    out = s.cli("rollback", "merge-T1", "--yes")
    assert out.returncode == 0, out.stdout + out.stderr
    assert not (s.workdir / "a.txt").exists()


def test_a_dirty_main_checkout_is_never_merged_into_and_the_operator_hears(session,
                                                                           short_tmp: Path):
    rang = short_tmp / "rang"
    s = session(ORCH + role_toml("auto", "--worker", "--edit", worktree=True, merge="auto")
                + f"[ui]\non_gate = 'printf \"%s %s\" \"$CHORAGOS_TASK_ID\" \"$CHORAGOS_TASK\" "
                  f">> {rang}'\n",
                {"base.txt": "base\n"})
    s.wait_booted(["orchestrator", "auto"])
    (s.workdir / "base.txt").write_text("edited by a person\n")
    head = _git(s.workdir, "rev-parse", "HEAD")
    assert s.cli("delegate", "--to", "auto", "--task", "write a.txt x").returncode == 0
    refused = s.wait_event(lambda e: e["event"] == "merge refused", 30, "the refusal")
    assert "uncommitted changes (base.txt)" in refused["why"]
    assert _git(s.workdir, "rev-parse", "HEAD") == head and not (s.workdir / "a.txt").exists()
    assert (s.workdir / "base.txt").read_text() == "edited by a person\n"
    s.wait(lambda: rang.exists() and rang.read_text(), 10, message="the on_gate hook")
    assert rang.read_text().startswith("T1 not merged: the main checkout has uncommitted ")


def test_worktree_outside_git_is_refused_with_the_reason(short_tmp: Path):
    work = short_tmp / "plain"
    work.mkdir()
    (work / ".choragos.toml").write_text(ORCH + role_toml("w", "--worker", worktree=True))
    env = base_env({"CHORAGOS_SOCK": str(short_tmp / "s.sock")})
    out = subprocess.run([sys.executable, "-m", "choragos", "serve", "--headless"], cwd=work,
                         env=env, capture_output=True, text=True, timeout=30)
    assert out.returncode == 2
    assert ".choragos.toml:roles[2].worktree: " in out.stderr
    assert "is not inside a git repository" in out.stderr
    assert not (short_tmp / "s.sock").exists()


def test_a_worktree_with_unmerged_work_is_reused_and_pruned_once_merged(session):
    config = ORCH + role_toml("hand", "--worker", "--edit", worktree=True, merge="manual")
    s = session(config, {"base.txt": "base\n"})
    s.wait_booted(["orchestrator", "hand"])
    assert s.cli("delegate", "--to", "hand", "--task", "write b.txt kept").returncode == 0
    s.wait(lambda: _lines(s, "orchestrator", "A worker reports: [T1"), 30, message="report")
    assert s.stop() == 0, s.stderr()
    assert [e["event"] for e in s.events() if e["event"].startswith("worktree ")] == [
        "worktree kept"]
    tree = s.workdir / ".choragos" / "worktrees" / "hand"
    assert (tree / "b.txt").read_text() == "kept\n"
    assert _git(s.workdir, "for-each-ref", "--format=%(refname)", "refs/choragos/wt/"
                ).startswith("refs/choragos/wt/hand/checkpoints/")

    again = Serve(s.workdir, config, sock=s.sock, git=False).start()
    try:
        again.wait_booted(["orchestrator", "hand"])
        assert (tree / "b.txt").read_text() == "kept\n"  # the same tree, work and all
        _git(s.workdir, "merge", "-q", "--no-edit", "choragos/hand")
    finally:
        assert again.stop() == 0, again.stderr()
    again.assert_no_leftovers()
    assert "worktree pruned" in [e["event"] for e in again.events()]
    assert not tree.exists()
    assert _git(s.workdir, "branch", "--list", "choragos/hand") == ""
    # its checkpoints went with it: there is no tree left to restore them into
    assert _git(s.workdir, "for-each-ref", "refs/choragos/wt/") == ""


def test_a_worktree_path_in_the_way_stops_the_start_with_the_reason(short_tmp: Path):
    work = short_tmp / "work"
    work.mkdir()
    git_init(work)
    (work / ".choragos" / "worktrees" / "w").mkdir(parents=True)
    (work / ".choragos" / "worktrees" / "w" / "mine.txt").write_text("not a worktree\n")
    (work / ".choragos.toml").write_text(ORCH + role_toml("w", "--worker", worktree=True))
    env = base_env({"CHORAGOS_SOCK": str(short_tmp / "s.sock")})
    out = subprocess.run([sys.executable, "-m", "choragos", "serve", "--headless"], cwd=work,
                         env=env, capture_output=True, text=True, timeout=30)
    assert out.returncode == 1, out.stderr
    assert "the worktree of w: " in out.stderr and "exists but is not a worktree" in out.stderr
    assert not (short_tmp / "s.sock").exists()


def test_the_state_link_never_shows_in_the_worktrees_git_status(session):
    s = session(ORCH + role_toml("w", "--worker", worktree=True), {"base.txt": "base\n"})
    s.wait_booted(["orchestrator", "w"])
    tree = s.workdir / ".choragos" / "worktrees" / "w"
    assert (tree / ".choragos" / "briefs" / "w.md").exists()  # the link reaches the state
    assert _git(tree, "status", "--porcelain") == ""
    assert _git(s.workdir, "status", "--porcelain", "--untracked-files=no") == ""


def test_a_merge_gate_merges_the_commit_the_operator_saw_and_reopens_when_it_moved(session):
    s = session(ORCH + role_toml("coder", "--worker", "--edit", worktree=True),
                {"base.txt": "base\n"})
    s.wait_booted(["orchestrator", "coder"])
    assert s.cli("delegate", "--to", "coder", "--task", "write a.txt seen").returncode == 0
    gate = s.wait(lambda: _gates(s).get("T1"), 40, message="the merge gate")
    seen = _git(s.workdir, "rev-parse", "choragos/coder").strip()
    assert "+seen" in Path(gate["file"]).read_text()
    # The worker adds a commit to its branch after the diff was shown.
    tree = s.workdir / ".choragos" / "worktrees" / "coder"
    (tree / "b.txt").write_text("never shown\n")
    _git(tree, "add", "b.txt")
    _git(tree, "commit", "-qm", "sneaked in")
    head = _git(s.workdir, "rev-parse", "HEAD")
    out = s.cli("gate", "approve", "T1")
    assert out.returncode != 0 and "choragos/coder moved since the diff you approved" in (
        out.stdout + out.stderr), out
    reopened = s.wait_event(lambda e: e["event"] == "merge gate reopened", 10, "the reopening")
    assert reopened["was"] == seen and reopened["commit"] != seen
    assert _git(s.workdir, "rev-parse", "HEAD") == head  # nothing merged
    assert not (s.workdir / "a.txt").exists() and not (s.workdir / "b.txt").exists()
    assert gate["commit"] == seen
    gate = _gates(s)["T1"]
    assert gate["commit"] == reopened["commit"] and "+never shown" in Path(
        gate["file"]).read_text()
    # Approving what is shown now merges exactly that.
    assert s.cli("gate", "approve", "T1").returncode == 0
    merged = s.wait_event(lambda e: e["event"] == "merged", 20, "the merge")
    assert _git(s.workdir, "rev-parse", f"{merged['commit']}^2").strip() == gate["commit"]
    assert (s.workdir / "b.txt").read_text() == "never shown\n"


def test_an_auto_merge_takes_the_commit_that_was_judged_not_one_added_meanwhile(session):
    s = session(ORCH + role_toml("coder", "--worker", "--edit", worktree=True, merge="auto",
                                 judge="rev")
                + role_toml("rev", "--worker", "--verdict", "9", "--work", "3"),
                {"base.txt": "base\n"})
    s.wait_booted(["orchestrator", "coder", "rev"])
    assert s.cli("delegate", "--to", "coder", "--task", "write a.txt judged").returncode == 0
    s.wait_event(lambda e: e["event"] == "judging", 30, "the judge to get the work")
    judged = _git(s.workdir, "rev-parse", "choragos/coder").strip()
    tree = s.workdir / ".choragos" / "worktrees" / "coder"
    (tree / "b.txt").write_text("never judged\n")
    _git(tree, "add", "b.txt")
    _git(tree, "commit", "-qm", "sneaked in while judged")
    merged = s.wait_event(lambda e: e["event"] == "merged", 30, "the auto merge")
    assert _git(s.workdir, "rev-parse", f"{merged['commit']}^2").strip() == judged
    assert (s.workdir / "a.txt").read_text() == "judged\n"
    assert not (s.workdir / "b.txt").exists()  # still on the branch, for the next check
    assert _git(s.workdir, "show", "choragos/coder:b.txt") == "never judged\n"


def _settled(s: Serve) -> int:
    return sum(e["event"] == "all tasks settled" for e in s.events())


def test_an_older_gate_merged_by_a_newer_one_is_done_and_the_crew_is_done_only_then(session):
    s = session(ORCH + role_toml("alice", "--worker", "--edit", worktree=True)
                + role_toml("bob", "--worker", "--edit", worktree=True),
                {"base.txt": "base\n"})
    s.wait_booted(["orchestrator", "alice", "bob"])
    # bob's work cannot be committed (git's lock in its worktree): said once, plainly.
    lock = s.workdir / ".git" / "worktrees" / "bob" / "index.lock"
    lock.write_text("")
    assert s.cli("delegate", "--to", "bob", "--task", "write b.txt B").returncode == 0
    line = s.wait(lambda: next(iter(_lines(s, "orchestrator", "A worker reports: [T1")), None),
                  30, message="bob's report")
    assert line.endswith("; nothing will be merged."), line  # no "Nothing to merge." after it
    lock.unlink()
    s.wait(lambda: _settled(s) == 1, 10, message="every task settled")
    for task, text in (("T2", "write a.txt A"), ("T3", "write c.txt C")):
        assert s.cli("delegate", "--to", "alice", "--task", text).returncode == 0
        s.wait_event(lambda e, t=task: e["event"] == "merge gated" and e["task"] == t, 30, task)
    assert _settled(s) == 1  # work waiting at a merge gate is not finished
    assert s.cli("gate", "approve", "T3").returncode == 0
    s.wait_event(lambda e: e["event"] == "merged" and e["task"] == "T3", 20, "T3's merge")
    assert _settled(s) == 1  # T2 still waits
    out = s.cli("gate", "approve", "T2")  # its commit went in with T3's merge
    assert out.returncode == 0, out.stdout + out.stderr
    told = s.wait(lambda: _lines(s, "orchestrator", "Merged: choragos/alice with T2"), 10,
                  message="T2 told")
    assert "it went in with the merge of T3 (commit " in told[0]
    assert not _lines(s, "orchestrator", "Not merged")
    merged = [e for e in s.events() if e["event"] == "merged" and e["task"] == "T2"]
    assert merged[0]["already"] is True and merged[0]["earlier"] == "T3"
    assert s.board()["T2"]["checks"].startswith("merged with T3 (")
    s.wait(lambda: _settled(s) == 2, 10, message="every task settled, gates and all")
