"""fresh = true: a new process, briefed again, before each task after the first."""

from __future__ import annotations

from tests.integration.harness import role_toml


def test_a_fresh_role_is_restarted_and_rebriefed_before_each_task(serve):
    s = serve(role_toml("orchestrator", start=True) + role_toml("coder", "--worker", fresh=True)
              + role_toml("keeper", "--worker"))
    s.wait_booted(["orchestrator", "coder", "keeper"])
    for n in (1, 2, 3):
        assert s.cli("delegate", "--to", "coder", "--task", f"job {n}").returncode == 0
        s.wait(lambda n=n: s.board().get(f"T{n}", {}).get("state") == "done", 40,
               message=f"T{n} done")
    assert s.cli("delegate", "--to", "keeper", "--task", "job 4").returncode == 0
    assert s.cli("delegate", "--to", "keeper", "--task", "job 5").returncode == 0
    s.wait(lambda: s.board().get("T5", {}).get("state") == "done", 40, message="T5 done")
    starts = [int(r["text"]) for r in s.agents("start", "coder")]
    assert len(set(starts)) == 3  # one process per task
    # each process of coder was briefed, then given exactly one task
    lines = [x for x in s.submitted("coder") if "choragos team" in x or "New task" in x]
    kinds = ["brief" if "choragos team" in x else x.split()[2] for x in lines]
    assert kinds == ["brief", "T1", "brief", "T2", "brief", "T3"]
    assert [e["task"] for e in s.events() if e["event"] == "fresh restart"] == ["T2", "T3"]
    assert len({int(r["text"]) for r in s.agents("start", "keeper")}) == 1  # not fresh
