"""An agent the machine does not run for a while is waited for (up to the
starved wait), and never typed into twice: what it has not read yet is
still on its way.  One that reads nothing for longer is given up on loudly
and its line left to the operator.  Through a real ``serve --headless``
with fixture agents in real PTYs."""

from __future__ import annotations

import pytest

from tests.e2e.scenario import holds_for
from tests.integration.harness import role_toml
from tests.integration.test_roles import hooks_toml, read_env

BRIEF = "You are the orchestrator role"


def _held(s) -> bool:
    return s.cli("status", "--json").stdout.count('"held": true') == 1


@pytest.mark.timeout(120)
def test_a_brief_unread_past_the_starved_wait_is_left_to_the_operator(serve, short_tmp):
    # Starved well past the wait (30 s from the typing, which comes a few
    # seconds into the starving on a loaded machine): the brief is given up
    # on, never typed again, and the operator hears of it.
    s = serve(role_toml("orchestrator", "--paste-mode", "--starve-on", "boot", "--starve", "48",
                        start=True) + hooks_toml(short_tmp))
    boot = s.wait_event(lambda e: e["event"] == "boot injection", 60, "the boot's outcome")
    assert not boot["ok"] and "not typed again" in boot["detail"], boot
    assert not [e for e in s.events() if e["event"] == "boot injection retry"]
    assert _held(s)
    s.wait(lambda: (short_tmp / "on_input.env").exists(), 10, "the on_input hook")
    assert read_env(short_tmp / "on_input.env")["CHORAGOS_ROLE"] == "orchestrator"
    assert "orchestrator did not take its brief" in s.stderr()
    # Once it reads, the brief sits in its input once, unsent, and the role
    # still takes no line; the operator's Enter sends it and frees the role.
    s.wait(lambda: s.agents("paste", "orchestrator"), 40, "the agent reading the brief")
    assert [p["text"].count(BRIEF) for p in s.agents("paste", "orchestrator")] == [1]
    assert holds_for(lambda: _held(s) and not s.submitted("orchestrator"), 1.0)
    assert s.cli("keys", "orchestrator", "Enter").returncode == 0
    s.wait(lambda: s.submitted("orchestrator"), 10, "the operator's Enter")
    s.wait(lambda: not _held(s), 10, "the role free again")


@pytest.mark.timeout(120)
def test_an_enter_unread_past_the_starved_wait_gets_no_second_enter(serve):
    s = serve(role_toml("orchestrator", start=True)
              + role_toml("coder", "--worker", "--starve-on", "tasks/T1.md", "--starve", "45"))
    s.wait_booted(["orchestrator", "coder"], timeout=40)
    assert s.cli("delegate", "--to", "coder", "--task", "slow to take").returncode == 0
    typed = s.wait_event(lambda e: e["event"] == "injection" and e["role"] == "coder",
                         60, "the task's outcome")
    assert not typed["ok"] and "no second Enter" in typed["detail"], typed
    assert "not typed again" in s.board()["T1"]["note"]
    # One Enter waited in the terminal: read alone, it submits the line.  (Two
    # read together would be taken as pasted newlines, not a submission.)
    s.wait(lambda: s.submitted("coder")[1:], 40, "the task submitted once the agent reads")
    assert len([line for line in s.submitted("coder") if "tasks/T1.md" in line]) == 1
