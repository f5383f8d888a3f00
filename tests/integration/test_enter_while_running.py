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


def dialog_after_spell(serve, mode: str, read: str, spell: float, how: tuple[str, ...]):
    """A session whose coder, given a task, reads it (recorded as ``read``),
    wants the CPU for ``spell`` seconds in ``mode`` (busy, or ``how``
    starved) and then shows a dialog; returned once the dialog is up and
    read as waiting, having read no key for 1.5 s."""
    s = serve(role_toml("orchestrator", start=True)
              + role_toml("coder", mode, "tasks/T1.md", *how, "--starve", str(spell)))
    assert s.cli("delegate", "--to", "coder", "--task", "the task").returncode == 0
    s.wait(lambda: s.agents(read, "coder"), 40, f"the task's {read}")
    s.wait(lambda: s.agents("menu", "coder"), 20, "the dialog after the spell")
    # A key written meanwhile is read now, by the dialog.
    assert holds_for(lambda: not s.agents("answer", "coder"), 1.5), s.agents("answer", "coder")
    s.wait(lambda: status(s)["coder"]["state"] == "waiting", 10, "the dialog read as waiting")
    return s


def operator_answers(s) -> None:
    """The operator answers: the one key the dialog reads is the operator's."""
    assert s.cli("keys", "coder", "esc").returncode == 0
    s.wait(lambda: s.agents("answer", "coder"), 10, "the operator's answer")
    assert [a["text"] for a in s.agents("answer", "coder")] == ["\x1b"]


@pytest.mark.timeout(90)
@pytest.mark.parametrize("how", [(), ("--starved",)], ids=["busy", "starved"])
def test_no_second_enter_lands_in_the_dialog_a_starved_agent_draws(serve, short_tmp, how):
    s = dialog_after_spell(serve, "--enter-then-menu", "read enter", SPELL, how)
    assert not s.agents("answer", "coder"), "a second Enter answered the dialog"
    assert len(s.submitted("coder")) == 1  # its brief; the task's line went to the spell
    operator_answers(s)
