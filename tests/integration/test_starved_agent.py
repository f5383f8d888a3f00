"""An agent the machine does not run for a while is waited for, never typed
into twice nor given up on: what it has not read yet is still on its way.
Through a real ``serve --headless`` with fixture agents in real PTYs."""

from __future__ import annotations

import pytest

from tests.integration.harness import role_toml

BRIEF = "You are the orchestrator role"


@pytest.mark.timeout(90)
def test_a_brief_typed_before_the_agent_reads_goes_in_once(serve):
    s = serve(role_toml("orchestrator", "--starve-on", "boot", "--starve", "8", start=True))
    s.wait_booted(["orchestrator"], timeout=40)
    assert s.agents("starved", "orchestrator")
    submitted = s.submitted("orchestrator")
    assert len(submitted) == 1 and submitted[0].count(BRIEF) == 1, submitted
    assert not [e for e in s.events() if e["event"] == "boot injection retry"]


@pytest.mark.timeout(90)
@pytest.mark.parametrize(("flag", "record"), [
    ("--starve-on", "starved"),  # the Enter waits unread in the terminal
    ("--spin-on", "spun"),  # the Enter is read, and the agent is busy before it acts
])
def test_a_task_whose_enter_the_agent_is_slow_to_take_goes_in_once(serve, flag, record):
    s = serve(role_toml("orchestrator", start=True)
              + role_toml("coder", "--worker", flag, "tasks/T1.md", "--starve", "5"))
    s.wait_booted(["orchestrator", "coder"], timeout=40)
    assert s.cli("delegate", "--to", "coder", "--task", "slow to take").returncode == 0
    s.wait(lambda: s.board()["T1"]["state"] == "done", 40, "T1 done")
    assert s.agents(record, "coder")
    typed = [e for e in s.events() if e["event"] == "injection" and e["role"] == "coder"]
    assert [(e["kind"], e["ok"]) for e in typed] == [("task", True)], typed
    # No second Enter while it was slow: it would be the next line's, or a question's.
    assert "submitted after 1 enter(s)" in typed[0]["detail"]
    assert len([line for line in s.submitted("coder") if "tasks/T1.md" in line]) == 1
