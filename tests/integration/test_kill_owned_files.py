"""A task's owned-file fingerprints survive a kill of the server.

They are taken at the task's turn, just before its line is typed; a
``kill -9`` after that and ``serve --resume`` once left the resumed
session without them, so the task, handed back to its worker, could
change a file another role owns and be reported done with no owner check.
"""

from __future__ import annotations

from tests.integration.harness import role_toml

TEAM = (role_toml("lead", start=True)
        + role_toml("keeper", "--worker", "--edit", owns_files=["defects.md"])
        + role_toml("coder", "--worker", "--edit", "--work", "3"))


def test_an_owner_check_survives_a_kill_between_the_turn_and_the_work_done(serve):
    s = serve(TEAM)
    s.wait_booted(["lead", "keeper", "coder"])
    assert s.cli("delegate", "--to", "keeper", "--task", "write defects.md mine").returncode == 0
    s.wait(lambda: [x for x in s.submitted("lead") if "[T1 from keeper]" in x], 30,
           message="the owner's report")
    board = s.board()["T1"]
    assert board["state"] == "done" and board["owned"] is None and board["checks"] == ""
    out = s.cli("delegate", "--to", "coder", "--task", "edit\nwrite defects.md hid it")
    assert out.returncode == 0, out.stderr
    s.wait_event(lambda e: e["event"] == "delivered" and e["task"] == "T2", 20, "T2 delivered")
    assert s.board()["T2"]["owned"]["defects.md"]  # on the board, so journaled
    s.kill9()  # the worker is at work (--work 3): nothing written yet
    assert (s.workdir / "defects.md").read_text() == "mine\n"
    s.start(args=("--resume",))
    held = s.wait_event(lambda e: e["event"] == "work held", 30, "the owner hold")
    assert held["kind"] == "owner" and held["why"] == "coder changed defects.md (owned by keeper)"
    assert s.board()["T2"]["state"] == "delivered"
    reports = [x for x in s.submitted("lead") if "A worker reports" in x]
    assert len(reports) == 1 and "[T1 from keeper]" in reports[0]  # the done one not again
