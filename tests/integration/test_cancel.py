"""The operator takes back a task its role has not been given yet."""

from __future__ import annotations

import json

from tests.integration.harness import role_toml


def test_a_queued_task_is_cancelled_and_never_typed_in(serve):
    s = serve(role_toml("orchestrator", start=True) + role_toml("coder", "--worker", "--work", "6"))
    s.wait_booted(["orchestrator", "coder"])
    for text in ("the first job", "the second job"):
        assert s.cli("delegate", "--to", "coder", "--task", text).returncode == 0
    s.wait(lambda: s.board()["T1"]["state"] == "delivered", 20, message="T1 with coder")
    # T1 is already the agent's: it cannot be taken back.
    refused = s.cli("cancel", "T1")
    assert refused.returncode == 1 and "T1 is already with coder" in refused.stderr
    done = s.cli("cancel", "T2", "--reason", "done by hand")
    assert done.returncode == 0 and done.stdout.strip() == "cancelled T2", done.stderr
    t2 = s.board()["T2"]
    assert (t2["state"], t2["note"]) == ("rejected", "cancelled by the operator: done by hand")
    assert s.wait_event(lambda e: e["event"] == "task cancelled")["task"] == "T2"
    told = s.wait(lambda: [x for x in s.submitted("orchestrator") if "cancelled task T2" in x],
                  20, message="the orchestrator told")
    assert "done by hand" in told[0]
    # T1 reports; coder comes to rest with nothing queued, and T2 never went in.
    s.wait(lambda: s.board()["T1"]["state"] == "done", 30, message="T1 done")
    s.wait(lambda: (coder := _role(s, "coder"))["ready"] and coder["queued"] == 0, 20,
           message="coder at rest")
    assert not [x for x in s.submitted("coder") if "T2" in x]
    again = s.cli("cancel", "T2", "--json")
    assert again.returncode == 1 and "T2 is rejected" in json.loads(again.stdout)["error"]


def _role(s, name: str) -> dict:
    return next(r for r in json.loads(s.cli("status", "--json").stdout)["roles"]
                if r["name"] == name)
