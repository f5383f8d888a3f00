"""Work-done checked, not trusted: changed-files records and the verify loop."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys

from choragos.gitstore import changes
from tests.integration.harness import role_toml

EDITS = "Make three changes.\nwrite notes/new.txt one\\ntwo\nappend README.md more\ndelete old.txt"


def _git(cwd, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout


def _reports(s, role: str = "orchestrator") -> list[str]:
    return [x for x in s.submitted(role) if x.startswith("A worker reports")]


def test_changed_files_match_git_diff_and_a_done_without_change_is_flagged(serve):
    s = serve(role_toml("orchestrator", start=True) + role_toml("coder", "--worker", "--edit"))
    (s.workdir / "old.txt").write_text("a\nb\nc\n")
    _git(s.workdir, "add", "old.txt", ".choragos.toml")
    _git(s.workdir, "commit", "-qm", "old")
    s.wait_booted(["orchestrator", "coder"])
    assert s.cli("delegate", "--to", "coder", "--task", EDITS).returncode == 0
    line = s.wait(lambda: next(iter(_reports(s)), None), 30, message="the report")
    assert "[T1 from coder] finished T1 in the fixture (3 files changed (+3 -3))" in line
    task = s.board()["T1"]
    _git(s.workdir, "add", "-A")
    numstat = _git(s.workdir, "diff", "--cached", "--numstat", "HEAD")
    expected = {p: (int(a), int(d)) for a, d, p in (x.split("\t") for x in numstat.splitlines())}
    got = {c["path"]: (c["added"], c["deleted"]) for c in task["changes"]}
    assert got == expected == {"README.md": (1, 0), "notes/new.txt": (2, 0), "old.txt": (0, 3)}
    kinds = {c["path"]: c["kind"] for c in task["changes"]}
    assert kinds == {"README.md": "modified", "notes/new.txt": "added", "old.txt": "deleted"}
    stat = _git(s.workdir, "diff", "--cached", "--stat", "HEAD").splitlines()[-1]
    assert stat.strip().startswith("3 files changed, 3 insertions(+), 3 deletions(-)")

    assert s.cli("delegate", "--to", "coder", "--task", "Look, but touch nothing").returncode == 0
    lines = s.wait(lambda: len(got := _reports(s)) == 2 and got, 30, message="second report")
    assert "[T2 from coder] finished T2 in the fixture (no files changed: the task claims " \
           "done without touching the tree)" in lines[1]
    assert s.board()["T2"]["changes"] == []
    table = s.cli("board").stdout.splitlines()
    files = table[0].split().index("FILES")
    counts = {row.split()[0]: row.split()[files] for row in table[1:]}
    assert counts == {"T1": "3", "T2": "0!"}  # the deck's FILES column, in the text board
    out = s.cli("report", "--json")
    assert out.returncode == 0, out.stderr
    records = {c["task"]: c for c in json.loads(out.stdout)["changes"]}
    assert records["T2"]["flagged"] is True and records["T1"]["flagged"] is False
    assert {c["path"] for c in records["T1"]["files"]} == set(expected)


def test_a_read_only_role_is_flagged_for_a_change_not_for_none(serve):
    s = serve(role_toml("orchestrator", start=True)
              + role_toml("reviewer", "--worker", "--edit", writes=False))
    s.wait_booted(["orchestrator", "reviewer"])
    assert s.cli("delegate", "--to", "reviewer", "--task", "Read it all").returncode == 0
    line = s.wait(lambda: next(iter(_reports(s)), None), 30, message="the first report")
    assert "(no files changed)" in line and "claims done" not in line
    assert s.cli("delegate", "--to", "reviewer", "--task", "Oops.\nwrite x.txt 1"
                 ).returncode == 0
    lines = s.wait(lambda: len(got := _reports(s)) == 2 and got, 30, message="second report")
    assert ("(1 file changed (+1 -0) although the role is read-only (writes = false))"
            in lines[1])
    table = s.cli("board").stdout.splitlines()
    files = table[0].split().index("FILES")
    assert {row.split()[0]: row.split()[files] for row in table[1:]} == {"T1": "0", "T2": "1!"}
    flags = {e["task"]: e["flagged"] for e in s.events() if e["event"] == "changes"}
    assert flags == {"T1": False, "T2": True}


def _verify_toml(rounds: int) -> str:
    code = ("import sys; t = open('ok.txt').read().strip(); print('ok.txt says', t); "
            "sys.exit(t != 'good')")
    return role_toml("coder", "--worker", "--edit", verify=f"{shlex.quote(sys.executable)} -c "
                     f"{shlex.quote(code)}", verify_rounds=rounds)


def test_verify_fails_then_passes_after_the_workers_fix(serve):
    s = serve(role_toml("orchestrator", start=True) + _verify_toml(2))
    s.wait_booted(["orchestrator", "coder"])
    task = "Fix ok.txt.\nwrite@1 ok.txt bad\nwrite@2 ok.txt good"
    assert s.cli("delegate", "--to", "coder", "--task", task).returncode == 0
    s.wait_event(lambda e: e["event"] == "verify failed" and e["round"] == 1, 30,
                 "the first verify to fail")
    fix = s.wait(lambda: next((x for x in s.submitted("coder") if "did not pass" in x), None),
                 20, message="the fix line")
    assert "read .choragos/tasks/T1.md again" in fix and "exit 1" in fix
    assert "ok.txt says bad" in (s.workdir / ".choragos" / "tasks" / "T1.md").read_text()
    s.wait_event(lambda e: e["event"] == "verify passed", 30, "verify to pass")
    line = s.wait(lambda: next(iter(_reports(s)), None), 20, message="the report")
    assert "Its verify passed (.choragos/reports/T1.verify.log)" in line
    assert "(1 file changed (+1 -0))" in line
    assert len(_reports(s)) == 1  # the failed round never reached the orchestrator
    board = s.board()["T1"]
    assert board["state"] == "done" and board["checks"] == "verify passed after 1 fix"
    log = (s.workdir / ".choragos" / "reports" / "T1.verify.log").read_text()
    assert "ok.txt says good" in log


def test_verify_failing_out_of_rounds_fails_the_task(serve):
    s = serve(role_toml("orchestrator", start=True) + _verify_toml(1))
    s.wait_booted(["orchestrator", "coder"])
    assert s.cli("delegate", "--to", "coder", "--task", "write ok.txt bad").returncode == 0
    line = s.wait(lambda: next(iter(_reports(s)), None), 40, message="the failure report")
    assert "[T1 from coder] FAILED: its verify still fails (exit 1) after 1 fix round" in line
    fails = [e for e in s.events() if e["event"] == "verify failed"]
    assert [e["round"] for e in fails] == [1, 2]
    assert len([x for x in s.submitted("coder") if "did not pass" in x]) == 1
    board = s.board()["T1"]
    assert board["state"] == "failed" and board["checks"] == "verify failed 2/1: out of rounds"


def test_verify_runs_with_the_roles_environment_not_the_sessions(serve):
    """The verify command sees what the role's agent sees: the variables the
    session injects into the role, and nothing its env_deny removes."""
    code = ("import os, sys; role = os.environ.get('CHORAGOS_ROLE'); "
            "secret = os.environ.get('VERIFY_SECRET'); "
            "print('role', role, 'secret', secret, 'shared', os.environ.get('VERIFY_SHARED')); "
            "sys.exit(role != 'coder' or secret is not None)")
    coder = role_toml("coder", "--worker", "--edit", env_deny=["VERIFY_SECRET"],
                      verify=f"{shlex.quote(sys.executable)} -c {shlex.quote(code)}")
    s = serve(role_toml("orchestrator", start=True) + coder,
              env={"VERIFY_SECRET": "leaked", "VERIFY_SHARED": "seen"})
    s.wait_booted(["orchestrator", "coder"])
    assert s.cli("delegate", "--to", "coder", "--task", "write a.txt x").returncode == 0
    line = s.wait(lambda: next(iter(_reports(s)), None), 30, message="the report")
    assert "Its verify passed" in line
    log = (s.workdir / ".choragos" / "reports" / "T1.verify.log").read_text()
    assert "role coder secret None shared seen" in log


def test_a_task_that_changes_many_files_keeps_the_first_and_counts_them_all(serve):
    s = serve(role_toml("orchestrator", start=True) + role_toml("coder", "--worker", "--edit"))
    s.wait_booted(["orchestrator", "coder"])
    many = changes.LISTED + 50
    assert s.cli("delegate", "--to", "coder", "--task", f"Generate.\nspawn gen {many}"
                 ).returncode == 0
    line = s.wait(lambda: next(iter(_reports(s)), None), 30, message="the report")
    assert f"finished T1 in the fixture ({many} files changed (+{many} -0))" in line
    task = s.board()["T1"]
    assert task["changed"] == {"files": many, "added": many, "deleted": 0}
    assert [c["path"] for c in task["changes"]] == [f"gen/f{n:06d}.txt"
                                                     for n in range(changes.LISTED)]
    table = s.cli("board").stdout.splitlines()
    assert table[1].split()[table[0].split().index("FILES")] == str(many)
    records = json.loads(s.cli("report", "--json").stdout)["changes"]
    assert records[0]["totals"] == task["changed"] and len(records[0]["files"]) == changes.LISTED
    # Each journal record of the task carries the kept entries, not all of them.
    journal = (s.workdir / ".choragos" / "state" / "journal.log").read_text()
    assert "gen/f000199.txt" in journal and "gen/f000200.txt" not in journal
