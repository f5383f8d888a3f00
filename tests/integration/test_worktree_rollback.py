"""A real session with two worktree roles: each task is checkpointed in its
role's worktree, `choragos rollback` of one role's task restores that
worktree only (and is undone), and all of it survives a kill -9 and
`serve --resume`."""

from __future__ import annotations

import json

from tests.integration.harness import Serve, role_toml
from tests.integration.test_worktree_checkpoints import files as _files

TEAM = (role_toml("orchestrator", start=True)
        + role_toml("alice", "--worker", "--edit", worktree=True, merge="manual")
        + role_toml("bob", "--worker", "--edit", worktree=True, merge="manual"))


def _delegate(s: Serve, role: str, task: str, task_id: str) -> None:
    assert s.cli("delegate", "--to", role, "--task", task).returncode == 0
    s.wait(lambda: any(f"A worker reports: [{task_id} " in x for x in s.submitted("orchestrator")),
           30, message=f"the report of {task_id}")


def _checkpoints(s: Serve) -> list[dict]:
    out = s.cli("checkpoints", "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["checkpoints"]


def test_rolling_back_one_roles_task_restores_its_worktree_only_and_is_undone(serve):
    s = serve(TEAM)
    s.wait_booted(["orchestrator", "alice", "bob"])
    alice = s.workdir / ".choragos" / "worktrees" / "alice"
    bob = s.workdir / ".choragos" / "worktrees" / "bob"
    _delegate(s, "alice", "write a.txt one", "T1")
    _delegate(s, "alice", "Two edits.\nwrite a.txt two\nwrite extra/x.txt x", "T2")
    _delegate(s, "bob", "write a.txt bob", "T3")
    board = s.board()
    assert board["T1"]["checkpoint"].startswith("refs/choragos/wt/alice/checkpoints/")
    assert board["T2"]["checkpoint"].startswith("refs/choragos/wt/alice/checkpoints/")
    assert board["T3"]["checkpoint"].startswith("refs/choragos/wt/bob/checkpoints/")
    # each task's checkpoint, and the snapshot taken at its report (for `choragos diff`)
    listed = {(c["task_id"], c["worktree"]) for c in _checkpoints(s)}
    assert listed == {("T1", "alice"), ("T2", "alice"), ("T3", "bob"), ("done-T1", "alice"),
                      ("done-T2", "alice"), ("done-T3", "bob")}
    table = s.cli("checkpoints").stdout.splitlines()
    assert table[0].split() == ["TASK", "AGE", "ROLE", "TREE", "LABEL"]
    assert {row.split()[0]: row.split()[3] for row in table[1:]
            if not row.startswith("done-")} == {"T1": "alice", "T2": "alice", "T3": "bob"}

    assert (alice / "a.txt").read_text() == "two\n" and (alice / "extra" / "x.txt").exists()
    untouched = {"main": _files(s.workdir), "bob": _files(bob)}
    out = s.cli("rollback", "T2", "--yes")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "in the worktree alice at " in out.stdout
    assert (alice / "a.txt").read_text() == "one\n"
    assert not (alice / "extra").exists()
    assert {"main": _files(s.workdir), "bob": _files(bob)} == untouched
    assert "undo with: choragos rollback pre-rollback-T2" in out.stdout

    out = s.cli("rollback", "pre-rollback-T2", "--yes")
    assert out.returncode == 0, out.stdout + out.stderr
    assert (alice / "a.txt").read_text() == "two\n"
    assert (alice / "extra" / "x.txt").read_text() == "x\n"
    assert {"main": _files(s.workdir), "bob": _files(bob)} == untouched
    undo = {(c["task_id"], c["worktree"]) for c in _checkpoints(s)}
    assert {("pre-rollback-T2", "alice"), ("pre-undo-T2", "alice")} <= undo


def test_worktree_checkpoints_are_listed_and_rolled_back_after_a_kill_and_resume(serve):
    s = serve(TEAM)
    s.wait_booted(["orchestrator", "alice", "bob"])
    alice = s.workdir / ".choragos" / "worktrees" / "alice"
    _delegate(s, "alice", "write a.txt one", "T1")
    ref = s.board()["T1"]["checkpoint"]
    s.kill9()

    s.start(args=("--resume",))
    s.wait_event(lambda e: e["event"] == "boot injection" and e["role"] == "alice", 20,
                 "alice back")
    assert s.board()["T1"]["checkpoint"] == ref
    assert [(c["ref"], c["worktree"]) for c in _checkpoints(s)
            if not c["task_id"].startswith("done-")] == [(ref, "alice")]
    main = _files(s.workdir)
    out = s.cli("rollback", "T1", "--yes")
    assert out.returncode == 0, out.stdout + out.stderr
    assert not (alice / "a.txt").exists()
    assert _files(s.workdir) == main
    # the resumed session checkpoints the same worktree, under the same refs
    _delegate(s, "alice", "write b.txt two", "T2")
    assert s.board()["T2"]["checkpoint"].startswith("refs/choragos/wt/alice/checkpoints/")


def test_a_worktree_task_reported_failed_is_measured_in_its_worktree(serve):
    s = serve(role_toml("orchestrator", start=True)
              + role_toml("carol", "--worker", "--edit", "--outcome", "failed", worktree=True))
    s.wait_booted(["orchestrator", "carol"])
    (s.workdir / "main-only.txt").write_text("not carol's\n")
    _delegate(s, "carol", "Half done.\nwrite half.txt one\\ntwo", "T1")
    line = next(x for x in s.submitted("orchestrator") if "A worker reports: [T1 " in x)
    assert "(1 file changed (+2 -0))" in line
    assert s.board()["T1"]["changes"] == [
        {"path": "half.txt", "kind": "added", "added": 2, "deleted": 0}]
