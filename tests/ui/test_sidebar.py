"""The role cards: every fact whole, however long the numbers."""

from __future__ import annotations

from choragos.roles.rolestatus import RoleStatus
from choragos.ui import sidebar
from choragos.ui.deckstate import RoleInfo
from choragos.ui.pane import fitted


def card_text(info: RoleInfo) -> list[str]:
    lines = sidebar.card(info, 1, sidebar.WIDTH - 1, focused=False, shown=True, task=None,
                         preview_lines=0)
    return [raw.decode("utf-8").rstrip() for raw, _ in lines]


def test_a_long_pid_goes_whole_to_the_next_row_never_cut():
    info = RoleInfo("orchestrator", RoleStatus.IDLE, profile="generic", pid=1342012,
                    restarts=12)
    text = card_text(info)
    assert text[1] == "   idle · generic · ↻12"
    assert text[2] == "   pid 1342012"
    assert all(len(line) <= sidebar.WIDTH - 1 for line in text)


def test_facts_that_fit_stay_on_one_row():
    info = RoleInfo("coder", RoleStatus.IDLE, profile="codex", pid=4242)
    assert card_text(info)[1] == "   idle · codex · ↻0 · pid 4242"


def test_fitted_keeps_each_fact_whole():
    assert fitted(["a", "bb", "ccc"], 6, " · ") == ["a · bb", "ccc"]
    assert fitted(["toolongforit"], 4, " · ") == ["toolongforit"]  # cut by the row itself
