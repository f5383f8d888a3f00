"""A server killed while a work-done's verify runs.

A role with a ``verify`` command keeps its task delivered, marked
``verifying``, from the work-done's ack until the verify passes.  A
``kill -9`` in that window once made the resumed session hand the task back
to its worker (typed again after its acknowledged work-done) instead of
checking it again (found by bench/chaos.py with a verifying role).
"""

from __future__ import annotations

import shlex
import sys

from tests.integration.harness import role_toml


def test_a_verify_cut_by_a_kill_runs_again_and_the_task_is_not_typed_again(serve, short_tmp):
    go = short_tmp / "go"  # outside the tree: the verify waits for it, then passes
    verify = f"{shlex.quote(sys.executable)} -c " + shlex.quote(
        f"import os, time\nwhile not os.path.exists({str(go)!r}): time.sleep(0.05)")
    s = serve(role_toml("lead", start=True)
              + role_toml("coder", "--worker", "--edit", verify=verify))
    s.wait_booted(["lead", "coder"])
    assert s.cli("delegate", "--to", "coder", "--task", "write notes.txt hi").returncode == 0
    s.wait(lambda: any(r["text"].startswith("T1 exit=0") for r in s.agents("work-done")),
           30, "T1's work-done acknowledged")
    assert s.board()["T1"]["checks"] == "verifying"
    s.kill9()
    typed = [x for x in s.submitted("coder") if "T1" in x]
    s.start(args=("--resume",))
    go.write_text("")
    s.wait_event(lambda e: e["event"] == "verify passed" and e["task"] == "T1", 30,
                 "T1's verify run again after the resume")
    line = s.wait(lambda: next((x for x in s.submitted("lead") if "[T1 from coder]" in x),
                               None), 20, message="T1's report")
    assert "Its verify passed" in line
    assert s.board()["T1"]["state"] == "done"
    assert [x for x in s.submitted("coder") if "T1" in x] == typed  # the new process's brief only
    assert len([x for x in s.submitted("lead") if "[T1 from coder]" in x]) == 1
