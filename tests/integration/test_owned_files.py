"""owns_files: the map in every brief, and a non-owner's change held at a human gate."""

from __future__ import annotations

import json

from tests.integration.harness import role_toml


def _reports(s) -> list[str]:
    return [x for x in s.submitted("orchestrator") if x.startswith(("A worker reports",
                                                                     "Task T"))]


def test_a_non_owner_changing_an_owned_file_is_held_for_a_person(serve):
    s = serve(role_toml("orchestrator", start=True)
              + role_toml("keeper", "--worker", "--edit", owns_files=["defects.md"])
              + role_toml("coder", "--worker", "--edit"))
    s.wait_booted(["orchestrator", "keeper", "coder"])
    brief = (s.workdir / ".choragos" / "briefs" / "coder.md").read_text()
    assert "## Owned files" in brief and "| defects.md | keeper |" in brief
    assert "| defects.md | keeper |" in (s.workdir / ".choragos" / "briefs"
                                        / "orchestrator.md").read_text()

    assert s.cli("delegate", "--to", "keeper", "--task", "write defects.md none").returncode == 0
    s.wait(lambda: len(_reports(s)) == 1, 30, message="the owner's report")
    assert s.board()["T1"]["state"] == "done"  # the owner may

    assert s.cli("delegate", "--to", "coder", "--task", "write defects.md hid it").returncode == 0
    held = s.wait_event(lambda e: e["event"] == "work held", 30, "the hold")
    assert held["kind"] == "owner" and held["why"] == "coder changed defects.md (owned by keeper)"
    gates = json.loads(s.cli("gate", "list", "--json").stdout)["gates"]
    assert [(g["id"], g["kind"]) for g in gates] == [("T2", "owner")]
    assert len(_reports(s)) == 1 and s.board()["T2"]["state"] == "delivered"
    assert s.cli("gate", "reject", "T2", "--reason", "not yours").returncode == 0
    line = s.wait(lambda: len(got := _reports(s)) == 2 and got[1], 20, message="the notice")
    assert line.startswith("Task T2 from coder FAILED: the operator rejected it at the owner gate")
    assert "Reason: not yours" in line
    assert s.board()["T2"]["state"] == "failed"
