"""``choragos demo`` attached in a laptop-sized terminal gets all its work done.

Five roles at 80x24 leave each tile about 22x4: the roles' terminals keep
their 80x24 floor, so every task is typed, taken and reported, and the tiles
show a part of each terminal.  Waits are on what the board and the screen
say, with deadlines long enough for a loaded machine.
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]

TASKS = ("T1", "T2", "T3", "T4")


def board(deck) -> dict[str, str]:
    out = deck.cli("board", "--json")
    if out.returncode != 0:
        return {}
    return {task["id"]: task["state"] for task in json.loads(out.stdout).get("tasks", [])}


def all_done(deck) -> bool:
    states = board(deck)
    return all(states.get(task) == "done" for task in TASKS)


@pytest.mark.parametrize(("cols", "rows"), [(80, 24), (100, 30)])
def test_the_demo_attached_at_a_small_terminal_gets_every_task_done(deck, cols, rows):
    d = deck()
    d.tmux("resize-window", "-t", ":0", "-x", str(cols), "-y", str(rows))
    demo = d.root / "demo"
    d.shell(f"choragos demo --dir {demo}")
    d.wait_screen("C-b ? help", 90)
    d.server_pids.add(d.ls()[0]["pid"])
    roles = json.loads(d.cli("status", "--json").stdout)["roles"]
    d.server_pids.update(role["pid"] for role in roles if role.get("pid"))  # gone at the end
    # The release task waits at its gate: approve it once the dialog shows.
    d.wait_screen("Approval needed: T4 for release", 180)
    d.keys("y")
    wait_until(lambda: all_done(d), 180, interval=0.5, message="every task done")
    log = (demo / ".choragos" / "logs" / "server.log").read_text(errors="replace")
    assert "could not be typed" not in log and "did not take" not in log, log[-3000:]
    size = d.tmux("display-message", "-p", "#{window_width}x#{window_height}").stdout
    assert size.strip() == f"{cols}x{rows}"
    # The zoomed orchestrator shows its terminal across the whole width.
    d.keys("C-b", "1")
    d.keys("C-b", "z")
    screen = d.wait_screen("All done: the team finished the plan.", 60)
    assert "ZOOM" in screen and len(screen.splitlines()) <= rows
