"""`choragos serve` in a terminal starts the session's clocks, aftercare and
reload actors once its client has attached (its first frame drawn), not on
the way to that frame; the other modes start them with the session."""

from __future__ import annotations

import re
from datetime import datetime

import pytest

from tests.conftest import wait_until
from tests.deck.conftest import TmuxDeck
from tests.integration.harness import role_toml

REST = re.compile(r"clocks, aftercare and reload started (.*)")
HELD = re.compile(r"the agents of (\d+) roles the deck does not show spawned (.*)")


@pytest.mark.timeout(120)
def test_serve_starts_the_clocks_aftercare_and_reload_after_its_client_attached(deck):
    d: TmuxDeck = deck()
    d.serve()
    wait_until(lambda: REST.search(d.server_log()), 15, message="the rest of the tree started")
    log = d.server_log()
    found = [(match.start(), match.group(1)) for match in REST.finditer(log)]
    assert [when for _, when in found] == ["after its client's first frame"]
    assert found[0][0] > log.index("session running")  # after the server said it is ready
    # The reload actor, started that late, answers a reload (nothing changed).
    out = d.cli("reload")
    assert out.returncode == 0, out.stdout + out.stderr


def _logged_at(log: str, text: str) -> float:
    """The time (seconds since the epoch) of the server log's first line holding ``text``."""
    line = next(line for line in log.splitlines() if text in line)
    return datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()


@pytest.mark.timeout(120)
def test_serve_spawns_the_agents_its_deck_does_not_show_after_its_first_frame(deck):
    """The deck shows the start role and six more; the two others' agents
    spawn once its client's first frame is out, after the server said it is
    ready, and run as the shown ones do."""
    names = [f"r{i}" for i in range(9)]
    d: TmuxDeck = deck("".join(role_toml(name, start=name == "r0") for name in names)
                       + "\n[ui]\nauto_focus = false\n")
    d.serve()
    wait_until(lambda: HELD.search(d.server_log()), 15, message="the held agents spawned")
    log = d.server_log()
    held = HELD.search(log)
    assert held.groups() == ("2", "after its client's first frame")
    assert held.start() > log.index("session running")
    wait_until(lambda: set(d.agent_pids()) == set(names), 30, message="every agent started")
    ready = _logged_at(log, "session running")
    started = {r["role"]: r["t"] for r in d.agents("start")}
    assert min(started["r7"], started["r8"]) > ready
