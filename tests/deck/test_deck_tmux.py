"""End to end: the real deck, attached from a real terminal (tmux), over real agents.

Each test starts ``choragos serve`` in its own tmux server and temp git
repository with fixture agents as the roles, presses keys with
``send-keys`` and reads what a person would see with ``capture-pane``.
The fixture's cleanup stops the session and checks that no agent, server
or socket is left.
"""

from __future__ import annotations

import json
import re

import pytest

from tests.conftest import pid_alive, wait_until
from tests.deck.conftest import TmuxDeck

pytestmark = [pytest.mark.slow, pytest.mark.timeout(150)]

ROLES = ["orchestrator", "coder", "release"]


def titles(screen: str) -> list[str]:
    """The pane titles on screen, as "N role"."""
    return re.findall(r"(?:^|│) (\d) (\w+) [○●◌‖✕]", screen, re.MULTILINE)


def shown(screen: str) -> set[str]:
    return {name for _, name in titles(screen)}


def type_line(deck: TmuxDeck, text: str) -> None:
    """Type like a person: the text, then (once it shows) Enter on its own."""
    deck.type(text)
    deck.wait_screen(text)
    deck.keys("Enter")


def test_attach_shows_every_pane_and_card_and_keys_reshape_it(deck):
    d: TmuxDeck = deck()
    d.serve()
    d.wait_booted(ROLES)
    screen = d.wait_screen(lambda s: shown(s) == set(ROLES))
    for number, role in enumerate(ROLES, 1):
        assert f"fixture agent {role} starting" in screen      # the pane
        assert re.search(rf"│ {number} [○●◌] {role}", screen)  # the card
    assert "▸ orchestrator" in screen.splitlines()[-1]
    pids = d.agent_pids()

    # typing reaches the focused agent, and only that one
    type_line(d, "hello from the deck")
    wait_until(lambda: "hello from the deck" in d.submitted("orchestrator"), 10,
               message="the line to reach the orchestrator")
    assert not [line for line in d.submitted("coder") if "hello" in line]

    # focus right, then close that pane: the role is hidden, not stopped
    d.keys("C-b", "l")
    d.wait_screen(lambda s: "▸ coder" in s.splitlines()[-1])
    d.keys("C-b", "x")
    d.wait_screen(lambda s: shown(s) == {"orchestrator", "release"}
                  and "coder (hidden)" in s and "keeps running" in s)
    # split shows the hidden role again
    d.keys("C-b", "v")
    d.wait_screen(lambda s: shown(s) == set(ROLES))
    # zoom: one pane, then back
    d.keys("C-b", "z")
    d.wait_screen(lambda s: len(titles(s)) == 1 and "ZOOM" in s)
    d.keys("C-b", "z")
    d.wait_screen(lambda s: len(titles(s)) == 3)
    # focus by number, and the prefix twice types the prefix key itself
    d.keys("C-b", "3")
    d.wait_screen(lambda s: "▸ release" in s.splitlines()[-1])
    assert d.agent_pids() == pids and all(pid_alive(p) for p in pids.values())
    status = json.loads(d.cli("status", "--json").stdout)["roles"]
    assert {r["name"]: r["pid"] for r in status} == pids


def test_gate_overlay_y_delivers_and_n_reaches_the_orchestrator(deck):
    d: TmuxDeck = deck()
    d.serve()
    d.wait_booted(ROLES)
    screen = d.delegate_gated("release", "Tag v9 and write the changelog")
    assert "Approval needed: T1 for release" in screen and "1 gate waiting" in screen
    assert "Tag v9 and write the changelog" in screen
    d.keys("y")
    d.wait_screen(lambda s: "Approval needed" not in s)
    wait_until(lambda: any("T1 exit=0" in r["text"] for r in d.agents("work-done", "release")),
               20, message="release to do T1 and report")
    wait_until(lambda: any("A worker reports: [T1 from release]" in line
                           for line in d.submitted("orchestrator")), 20,
               message="the report to reach the orchestrator")

    d.cli("delegate", "--to", "release", "--task", "Push to production")
    d.wait_screen("Approval needed: T2 for release")
    d.keys("n")
    wait_until(lambda: any("The operator rejected delegation T2" in line
                           for line in d.submitted("orchestrator")), 20,
               message="the rejection to reach the orchestrator")
    assert not any("T2" in line for line in d.submitted("release"))
    board = {t["id"]: t for t in json.loads(d.cli("board", "--json").stdout)["tasks"]}
    assert (board["T1"]["state"], board["T2"]["state"]) == ("done", "rejected")


def test_detach_reattach_one_client_and_kill(deck):
    d: TmuxDeck = deck()
    d.serve()
    d.wait_booted(ROLES)
    type_line(d, "remember this line")
    d.wait_screen("you said: remember this line")
    d.cli("delegate", "--to", "coder", "--task", "Add retry with jitter")
    wait_until(lambda: any("T1 exit=0" in r["text"] for r in d.agents("work-done", "coder")),
               20, message="coder to finish T1")

    # prefix d detaches; the session keeps running and ls says nobody is attached
    d.keys("C-b", "d")
    d.wait_screen("[detached from")
    (session,) = d.ls()
    assert session["dir"] == str(d.workdir) and session["attached"] is None
    assert session["roles"] == ROLES

    # attach again: the same screens, and the board as it was
    d.shell("clear; choragos attach")
    d.wait_screen(lambda s: "C-b ? help" in s and "you said: remember this line" in s)
    d.keys("C-b", "t")
    d.wait_screen(lambda s: "Task board (1)" in s and re.search(r"T1\s+coder\s+done", s))
    d.keys("Escape")
    (session,) = d.ls()
    holder = session["attached"]
    assert isinstance(holder, int)

    # a second client is refused and told who holds the deck; --force takes over
    other = d.new_window()
    d.shell("choragos attach", window=other)
    refusal = d.wait_screen("already attached", window=other)
    assert f"pid {holder}" in refusal
    d.shell("choragos attach --force", window=other)
    d.wait_screen("C-b ? help", window=other)
    d.wait_screen("taken over by pid", window=0)

    # kill --all stops the session cleanly: the client is told, nothing is left
    out = d.cli("kill", "--all")
    assert out.returncode == 0 and "stopped the session" in out.stdout, out.stderr
    d.wait_screen("ended]", window=other)
    assert d.ls() == []
    pids = list(d.agent_pids().values())
    wait_until(lambda: not any(pid_alive(p) for p in pids), 10, message="agents gone")


def test_board_u_rolls_back_to_before_a_task_after_confirmation(deck):
    d: TmuxDeck = deck()
    d.serve()
    d.wait_booted(ROLES)
    readme = d.workdir / "README.md"
    before = readme.read_text()
    d.cli("delegate", "--to", "coder", "--task", "Rewrite the README")
    wait_until(lambda: any("T1 exit=0" in r["text"] for r in d.agents("work-done", "coder")),
               20, message="coder to finish T1")
    readme.write_text("wrecked by a worker\n")          # what the task did
    (d.workdir / "stray.txt").write_text("created by the task\n")

    d.keys("C-b", "t")
    d.wait_screen(lambda s: re.search(r"T1\s+coder\s+done.*✓", s))  # checkpoint column
    d.keys("u")
    screen = d.wait_screen("Roll back to before T1?")
    assert "restore  README.md" in screen and "delete   stray.txt" in screen
    assert readme.read_text() == "wrecked by a worker\n"   # nothing before the answer
    d.keys("y")
    wait_until(lambda: readme.read_text() == before, 10, message="README restored")
    assert not (d.workdir / "stray.txt").exists()
    d.wait_screen("rolled back T1; undo: choragos rollback")
    # the deck went through the core's rollback command: refused from a role
    # like any operator command, and written to the event log
    log = d.workdir / ".choragos" / "logs" / "events.jsonl"
    rollbacks = [r for r in map(json.loads, log.read_text().splitlines())
                 if r.get("event") == "rollback"]
    assert len(rollbacks) == 1, rollbacks
    assert rollbacks[0]["task"] == "T1" and rollbacks[0]["by"] == "operator"
    assert rollbacks[0]["saved"] == "pre-rollback-T1" and rollbacks[0]["deleted"] == 1
    undo = d.cli("rollback", "pre-rollback-T1", "--yes")
    assert undo.returncode == 0, undo.stderr
    assert readme.read_text() == "wrecked by a worker\n"   # the undo of the undo
