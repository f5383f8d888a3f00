"""A line whose echo never came is typed again only into an agent at rest,
not into one that a single look at its state finds asleep.

The fixture agent here reads its task's line without drawing it, wants the
CPU for 7 s (spinning on a CPU of its own, or pinned to one beside three
spinners of other sessions, so that it mostly waits on the run queue) with
a nap from 1.9 s to 2.6 s where the typist's one look came (at the end of
its 2 s echo wait), then shows a numbered dialog and records every key it
reads while the dialog is up.  Through a real ``serve --headless`` with the
agents in real PTYs.  On the old check (the text read, and the agent not
running at that one look) the text went in again 3 s later, unread until
the dialog read it as its answer.
"""

from __future__ import annotations

import pytest

from tests.integration.test_enter_while_running import dialog_after_spell, operator_answers

SPELL = 7.0  # wanting the CPU after reading the text: past the old retype (5 s in)


def _failed(s) -> list[dict]:
    return [e for e in s.events() if e["event"] == "injection" and e["role"] == "coder"
            and not e["ok"]]


@pytest.mark.timeout(90)
@pytest.mark.parametrize("how", [(), ("--starved",)], ids=["busy", "starved"])
def test_no_text_typed_again_lands_in_the_dialog_a_starved_agent_draws(serve, how):
    s = dialog_after_spell(serve, "--read-then-menu", "read text", SPELL, how)
    # Not typed again, and said: the task fails with the reason.
    s.wait(lambda: _failed(s), 30, "the line given up on")
    (failed,) = _failed(s)
    assert "a dialog is on the agent's screen; not typed again" in failed["detail"], failed
    s.wait(lambda: s.board()["T1"]["state"] == "failed", 10, "T1 failed")
    assert not s.agents("answer", "coder"), "the text typed again answered the dialog"
    assert len(s.agents("read text", "coder")) == 1 and len(s.submitted("coder")) == 1
    operator_answers(s)
