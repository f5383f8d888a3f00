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


def rows(lines: list) -> list[str]:
    return [raw.decode("utf-8") for raw, _ in lines]


def test_a_name_too_long_for_its_card_ends_in_an_ellipsis():
    info = RoleInfo("a-very-long-role-name-of-32-char", RoleStatus.IDLE, pid=7)
    head = card_text(info)[0]
    assert head == " 1 ○ a-very-long-role-name-of-32…"
    assert len(head) == sidebar.WIDTH - 1


def test_a_team_too_big_for_whole_cards_gets_a_row_each_and_a_count_of_the_rest():
    team = [RoleInfo(f"worker-{n:02d}", RoleStatus.IDLE, pid=100 + n) for n in range(30)]
    team[3] = RoleInfo("worker-03", RoleStatus.EXITED, detail="held: memory")
    team[4] = RoleInfo("worker-04", RoleStatus.STARTING, detail="held: memory")  # never ran
    spans: list = []
    text = rows(sidebar.render(team, sidebar.WIDTH, 23, focus="worker-00",
                               shown={"worker-00", "worker-04"},
                               tasks={}, spans=spans))
    assert len(text) == 23
    assert text[0].rstrip() == "│ 1 ○ worker-00 idle"
    assert text[3].rstrip() == "│ 4 ✕ worker-03 (hidden) exited, …"
    assert text[4].rstrip() == "│ 5 ◌ worker-04 starting, held: m…"
    assert text[-1].rstrip() == "│   … 8 more roles"  # 22 rows of cards, 30 roles
    assert [name for name, _, _ in spans] == [f"worker-{n:02d}" for n in range(22)]
    # A team that fits keeps its whole cards.
    whole = rows(sidebar.render(team[:12], sidebar.WIDTH, 46, focus=None, shown=set(),
                                tasks={}))
    assert whole[1].rstrip() == "│   idle · ↻0 · pid 100"


def test_a_budget_too_long_for_the_usage_row_goes_whole_to_the_next():
    usage = {"tokens": {"input": 1234567, "output": 98765}, "cost": 123.45, "estimated": True,
             "budget": {"usd": 200, "tokens": 5000000}}
    text = card_text(RoleInfo("coder", RoleStatus.WORKING, pid=5, usage=usage))
    assert text[2:] == ["   ↑1.2M ↓98.8k", "   ~$123.45/$200.00 5.0M tok"]
    short = card_text(RoleInfo("coder", RoleStatus.WORKING, usage={"tokens": {"input": 12},
                                                                   "cost": 0.01}))
    assert short[2] == "   ↑12 ↓0 $0.01"
