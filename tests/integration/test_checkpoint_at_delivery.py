"""A task's checkpoint is the workspace as it is when the task is delivered.

It was taken when the task was queued: a task queued behind another on a
busy worker was then measured against a tree from before that other's work
(its report once said "105 files changed" for a task that wrote one), and
a rollback to its checkpoint undid the other's work too.
"""

from __future__ import annotations

from choragos.gitstore.changes import changed_count, files_cell
from tests.integration.harness import role_toml

# Each task takes the worker a while, so the second waits in its queue
# while the first is at work.
TEAM = role_toml("lead", start=True) + role_toml("coder", "--worker", "--edit", "--work", "2")


def _report(s, task_id: str) -> str:
    prefix = f"A worker reports: [{task_id} from coder]"
    lines = [line for line in s.submitted("lead") if line.startswith(prefix)]
    return lines[0] if lines else ""


def _changes(s, task_id: str) -> dict:
    return s.wait_event(lambda e: e["event"] == "changes" and e["task"] == task_id, 40,
                        f"{task_id}'s changes")


def test_a_queued_task_is_measured_and_rolled_back_as_its_own(serve):
    s = serve(TEAM)
    s.wait_booted(["lead", "coder"])
    for name in ("one", "two"):
        out = s.cli("delegate", "--to", "coder", "--task", f"{name}.\nwrite {name}.txt {name}")
        assert out.returncode == 0, out.stderr
    assert [f["path"] for f in _changes(s, "T1")["files"]] == ["one.txt"]
    assert [f["path"] for f in _changes(s, "T2")["files"]] == ["two.txt"]
    s.wait(lambda: _report(s, "T2"), 20, "T2's report in the orchestrator")
    assert "1 file changed" in _report(s, "T2"), _report(s, "T2")
    task = s.board()["T2"]
    assert changed_count(task) == 1 and files_cell(task) == "1", task
    diff = s.cli("diff", "T2")
    assert diff.returncode == 0, diff.stderr
    assert "+++ b/two.txt" in diff.stdout and "one.txt" not in diff.stdout, diff.stdout
    # The checkpoint of T2 is the tree after T1's work: rolling back to it
    # undoes T2's file only.
    back = s.cli("rollback", "T2", "--yes", timeout=30)
    assert back.returncode == 0, back.stdout + back.stderr
    assert not (s.workdir / "two.txt").exists()
    assert (s.workdir / "one.txt").read_text() == "one\n"


def test_a_queued_task_killed_before_its_checkpoint_gets_one_after_resume(serve):
    s = serve(TEAM)
    s.wait_booted(["lead", "coder"])
    assert s.cli("delegate", "--to", "coder", "--task", "one.\nwrite one.txt one").returncode == 0
    s.wait_event(lambda e: e["event"] == "delivered" and e["task"] == "T1", 20, "T1 delivered")
    out = s.cli("delegate", "--to", "coder", "--task", "two.\nwrite two.txt two")
    assert out.returncode == 0, out.stderr
    # Acknowledged and queued behind T1, which is at work: no checkpoint yet.
    assert s.board()["T2"]["state"] == "queued" and not s.board()["T2"].get("checkpoint")
    s.kill9()
    s.start(args=("--resume",))
    assert [f["path"] for f in _changes(s, "T2")["files"]] == ["two.txt"]
    events = s.events(all_runs=True)
    taken = [e for e in events if e["event"] == "checkpoint" and e["task"] == "T2"]
    delivered = [e for e in events if e["event"] == "delivered" and e["task"] == "T2"]
    # One taken when the core's view of the worker was older than T1's line
    # (the worker was busy after all) is taken again at T2's turn: the board
    # holds the last, and the task went out once.
    assert taken and len(delivered) == 1, (taken, delivered)
    assert s.board()["T2"]["checkpoint"] == taken[-1]["ref"]
    assert taken[-1]["t"] <= delivered[0]["t"]
    typed = [line for line in s.submitted("coder") if "T2" in line]
    assert len(typed) == 1, typed
    s.wait(lambda: _report(s, "T2"), 20, "T2's report in the orchestrator")
