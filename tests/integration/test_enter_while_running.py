"""A second Enter goes only into an agent at rest, not into one that a
single look at its state finds asleep.

The fixture agent here reads its task's Enter, keeps the line in its input
as drawn, wants the CPU for 4 s (spinning on a CPU of its own, or pinned to
one beside three spinners of other sessions, so that it mostly waits on the
run queue) with a nap of 0.25 s where the typist's one look came (1.5 s
after the Enter), then shows a numbered dialog and records every key it
reads while the dialog is up.  Through a real ``serve --headless`` with the
agents in real PTYs.  On the old check (input read, and the agent not
running at that one look) the second Enter went in during the nap and was
read by the dialog as its answer.
"""

from __future__ import annotations

import pytest

from tests.e2e.scenario import holds_for
from tests.integration.harness import role_toml
from tests.integration.test_seat_safety import status

SPELL = 4.0  # wanting the CPU after the Enter, with its input not redrawn


@pytest.mark.timeout(90)
@pytest.mark.parametrize("how", [(), ("--starved",)], ids=["busy", "starved"])
def test_no_second_enter_lands_in_the_dialog_a_starved_agent_draws(serve, short_tmp, how):
    s = serve(role_toml("orchestrator", start=True)
              + role_toml("coder", "--enter-then-menu", "tasks/T1.md", *how,
                          "--starve", str(SPELL)))
    assert s.cli("delegate", "--to", "coder", "--task", "the task").returncode == 0
    s.wait(lambda: s.agents("read enter", "coder"), 40, "the task's first Enter read")
    s.wait(lambda: s.agents("menu", "coder"), 20, "the dialog after the spell")
    # A second Enter written meanwhile is read now, by the dialog.
    assert holds_for(lambda: not s.agents("answer", "coder"), 1.5), s.agents("answer", "coder")
    s.wait(lambda: status(s)["coder"]["state"] == "waiting", 10, "the dialog read as waiting")
    assert not s.agents("answer", "coder"), "a second Enter answered the dialog"
    assert len(s.submitted("coder")) == 1  # its brief; the task's line went to the spell
    # The operator answers: the one key the dialog reads is the operator's.
    assert s.cli("keys", "coder", "esc").returncode == 0
    s.wait(lambda: s.agents("answer", "coder"), 10, "the operator's answer")
    assert [a["text"] for a in s.agents("answer", "coder")] == ["\x1b"]
