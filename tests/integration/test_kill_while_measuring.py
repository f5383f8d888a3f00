"""A server killed between a work-done's ack and the measure of its changes.

The report of a task with a checkpoint waits, in the server's memory, for
the aftercare to measure what the task changed; the task itself is done on
disk before the worker hears its ack.  A ``kill -9`` in that window once
lost the report for good: the resumed board said done, and the orchestrator
never heard of the work (found by bench/chaos.py).  Here the window is held
open by taking the checkpoint store's lock, so the measure waits for it.
"""

from __future__ import annotations

import fcntl
import os
import time

from tests.integration.harness import role_toml

# The worker takes 1.5 s over its task, so the lock is held before its work-done
# (at no work time, a loaded machine measured before the test took the lock).
TEAM = role_toml("lead", start=True) + role_toml("coder", "--worker", "--edit", "--work", "1.5")


def hold_store_lock(workdir) -> int:
    """Take the checkpoint store's lock (as a second choragos process would)."""
    fd = os.open(workdir / ".git" / "choragos" / "lock", os.O_RDWR | os.O_CREAT, 0o600)
    deadline = time.monotonic() + 30
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            assert time.monotonic() < deadline, "the checkpoint lock was never free"
            time.sleep(0.05)


def test_a_report_waiting_for_its_changes_survives_a_kill(serve):
    s = serve(TEAM)
    s.wait_booted(["lead", "coder"])
    out = s.cli("delegate", "--to", "coder", "--task", "edit\nwrite notes.txt hello")
    assert out.returncode == 0, out.stderr
    s.wait_event(lambda e: e["event"] == "checkpoint" and e["task"] == "T1", 20,
                 "T1's checkpoint")
    fd = hold_store_lock(s.workdir)
    try:
        s.wait(lambda: any(r["text"].startswith("T1 exit=0") for r in s.agents("work-done")),
               30, "T1's work-done acknowledged")
        assert not [e for e in s.events() if e["event"] == "changes"], \
            "the changes were measured through the lock"
        s.kill9()
    finally:
        os.close(fd)
    s.start(args=("--resume",))
    assert s.board()["T1"]["state"] == "done"
    s.wait(lambda: any(line.startswith("A worker reports: [T1 from coder]")
                       for line in s.submitted("lead")), 30, "T1's report in the orchestrator")
    changes = s.wait_event(lambda e: e["event"] == "changes" and e["task"] == "T1", 10,
                           "T1's changes measured after the resume")
    assert [f["path"] for f in changes["files"]] == ["notes.txt"]
    assert s.board()["T1"]["checks"] == ""
    reports = [line for line in s.submitted("lead") if "[T1 from coder]" in line]
    assert len(reports) == 1, reports
