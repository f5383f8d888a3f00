"""The crash property: whatever moment the server is ``kill -9``ed, nothing acked is lost.

A scripted orchestrator (the fixture agent's ``--delegate`` mode) hands out
jobs to three workers without pause: one works quickly, one outlives its
timeout before reporting, one sits behind a gate; the test approves some
gates and pauses a role for a while.  The server is killed at random
moments (during delegate acks, checkpoints, journal compactions: the
journal compacts every few records here) and resumed each time.  After
every resume, each acknowledgement the log shows must hold.
"""

from __future__ import annotations

import itertools
import json
import random
import re
import time
from collections import Counter

import pytest

from choragos.board import journal
from tests.integration.harness import role_toml

KILLS = 20
TEAM = (role_toml("lead", "--delegate", "quick,slow,gated", "--every", "0.1", start=True)
        + role_toml("quick", "--worker", "--work", "0.1")
        + role_toml("slow", "--worker", "--work", "1.2", timeout="1s")
        + role_toml("gated", "--worker", "--work", "0.1", approve=True))
ACK = re.compile(r"delegated (T\d+) to (\w+)( \(waiting for approval\))? job (\S+)")
DONE = re.compile(r"(T\d+) exit=0 reported \1 \(done\)$")


class Ledger:
    """What the callers were told, read back from the agents' log and the test's own acks."""

    def __init__(self) -> None:
        self.approved: set[str] = set()
        self.paused: bool | None = None

    def acks(self, serve) -> dict[str, tuple[str, str, bool]]:
        """id -> (role, job, gated), asserting no id was ever handed out twice."""
        seen: dict[str, tuple[str, str, bool]] = {}
        for record in serve.agents("delegated"):
            tid, role, gated, job = ACK.match(record["text"]).groups()
            entry = (role, job, bool(gated))
            assert seen.setdefault(tid, entry) == entry, f"{tid} was acked twice: {entry}"
            seen[tid] = entry
        return seen

    def done(self, serve) -> set[str]:
        return {m.group(1) for r in serve.agents("work-done")
                if (m := DONE.search(r["text"]))}


def check(serve, ledger: Ledger) -> None:
    acks, done = ledger.acks(serve), ledger.done(serve)  # before the board: it only grows
    board = serve.board()
    for tid, (role, job, _) in acks.items():
        assert tid in board, f"acknowledged {tid} is missing after resume"
        assert board[tid]["role"] == role and board[tid]["text"] == f"job {job}"
    for tid in done:
        assert board[tid]["state"] == "done", f"{tid}'s acked work-done was lost"
    pending = {tid for tid, (_, _, gated) in acks.items()
               if gated and tid not in ledger.approved}
    gates = json.loads(serve.cli("gate", "list", "--json").stdout)["gates"]
    listed = {g["id"] for g in gates}
    assert pending <= listed, f"pending gates lost: {pending - listed}"
    assert not (listed & ledger.approved), "an approved gate is pending again"
    check_deliveries(serve)


def check_deliveries(serve) -> None:
    """No task reaches a worker twice unless the second time says the session restarted."""
    fresh: dict[str, int] = {}
    for record in serve.agents("submit"):
        line = record["text"]
        match = re.search(r"New task (T\d+)", line)
        if match:
            fresh[match.group(1)] = fresh.get(match.group(1), 0) + 1
        elif re.search(r"task T\d+ is still yours", line):
            assert "session restarted" in line
    twice = {tid: n for tid, n in fresh.items() if n > 1}
    assert not twice, (f"delivered twice without a re-delivery mark: {twice}\n"
                       + story(serve, next(iter(twice))))


def story(serve, tid: str) -> str:
    """Everything the agents and the event log say about one task, for a failure."""
    pattern = re.compile(rf"\b{tid}\b")
    agents = [json.dumps(r) for r in serve.agents() if pattern.search(r["text"])
              or r["kind"] == "start"]
    events = [json.dumps(e)[:400] for e in serve.events(all_runs=True)
              if pattern.search(json.dumps(e)) or e["event"] in ("deck starting",
                                                                  "session resumed")]
    return "--- agents ---\n" + "\n".join(agents) + "\n--- events ---\n" + "\n".join(events)


def operate(serve, ledger: Ledger, cycle: int) -> None:
    """The operator's part: approve a pending gate now and then, pause and resume a role."""
    gates = json.loads(serve.cli("gate", "list", "--json").stdout)["gates"]
    if gates and cycle % 2:
        tid = gates[0]["id"]
        if serve.cli("gate", "approve", tid).returncode == 0:
            ledger.approved.add(tid)
    if cycle in (4, 11):
        action = "pause" if cycle == 4 else "resume"
        if serve.cli(action, "quick").returncode == 0:
            ledger.paused = action == "pause"


def role_state(serve, role: str) -> str:
    out = serve.cli("status", "--json")
    return next(r["state"] for r in json.loads(out.stdout)["roles"] if r["name"] == role)


def rebuild(events: list[dict]) -> dict[str, str]:
    """The board's states as the event log tells them, resume markers included."""
    moves = {"delegate gated": "gated", "gate approved": "queued", "gate rejected": "rejected",
             "delivered": "delivered", "timeout": "timed-out", "task failed": "failed"}
    states: dict[str, str] = {}
    for event in events:
        name = event["event"]
        if name == "delegate":
            states[event["task"]] = "queued"
        elif name in moves:
            states[event["task"]] = moves[name]
        elif name == "work-done" and not event.get("note") and event["task"] in states:
            states[event["task"]] = "done"
        elif name == "session resumed":
            states.update(event["board"])
    return states


@pytest.mark.alone
@pytest.mark.timeout(240)
def test_kill9_at_random_moments_loses_nothing_acknowledged(serve):
    rng = random.Random(int(time.time()))
    s = serve(TEAM, env={"CHORAGOS_JOURNAL_COMPACT": "15"})
    ledger = Ledger()
    started = time.monotonic()
    for cycle in range(KILLS):
        time.sleep(rng.uniform(0.2, 2.0))
        operate(s, ledger, cycle)
        s.kill9()
        s.start(args=("--resume",))
        check(s, ledger)
        if ledger.paused:
            s.wait(lambda: role_state(s, "quick") == "paused", 10, "quick paused again")
    s.wait(lambda: len(ledger.done(s)) >= 5, 30, "some work reported")
    check(s, ledger)
    assert s.stop() == 0
    resumed = [e for e in s.events(all_runs=True) if e["event"] == "session resumed"]
    assert len(resumed) == KILLS
    saved = journal.load(journal.state_dir(s.workdir)).tasks
    assert rebuild(s.events(all_runs=True)) == {t: task["state"] for t, task in saved.items()}
    print(f"{KILLS} kills in {time.monotonic() - started:.0f}s, {len(saved)} tasks, "
          f"{len(ledger.done(s))} acked work-done, {len(ledger.approved)} approvals, "
          f"{sum('still yours' in line for line in map(str, s.agents('submit')))} hand-backs; "
          f"last event before each kill: {last_events(s.events(all_runs=True))}")


def last_events(events: list[dict]) -> dict[str, int]:
    """What each killed run was doing last, by event name (how the kills landed)."""
    last: list[str] = []
    for before, event in itertools.pairwise(events):
        if event["event"] == "deck starting" and before["event"] != "deck stopped":
            last.append(before["event"])
    return dict(Counter(last))
