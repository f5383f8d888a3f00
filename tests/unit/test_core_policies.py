"""The core's policies are made when the core first uses one: none is
needed for the roles' agents to start, so a session spawns them without
loading the policies' modules, and a session never given a task never
loads the task flow's (actors/corepolicies.py)."""

from __future__ import annotations

import json
import subprocess
import sys

from choragos.actors.core import CoreActor, CoreState
from choragos.actors.corepolicies import POLICIES
from choragos.board.events import EventLog
from choragos.config.model import Config, RoleSpec

# Loaded with the core all the same: the role actors send its messages.
WITH_THE_CORE = ("admission",)

PROBE = """
import json, sys
from pathlib import Path
from choragos.actors.core import CoreActor, CoreState
from choragos.actors.corepolicies import POLICIES
from choragos.board.events import EventLog
from choragos.config.model import Config, RoleSpec

def policies():
    return sorted(m for m in sys.modules
                  if m.removeprefix("choragos.actors.") in {p[0] for p in POLICIES.values()})

config = Config(roles=(RoleSpec(name="orchestrator", command="x", start=True),))
core = CoreActor(CoreState(config=config, workdir=Path(sys.argv[1]),
                           events=EventLog(Path(sys.argv[1]) / "events.jsonl")))
made = policies()
# A start: each role reports booting, then idle at its prompt.
from choragos.actors import messages as m
from choragos.actors.core import Seat
core.s.seats["orchestrator"] = Seat("orchestrator", None, m.RoleView("orchestrator", "exited"))
for status in ("booting", "idle"):
    core.handle(m.RoleReported(m.RoleView("orchestrator", status, ready=status == "idle")))
reported = policies()
# The deck's questions at its start, with nothing at a gate.
asked = [core.handle(m.Dispatch({"cmd": cmd, **extra}))
         for cmd, extra in (("status", {}), ("board", {}), ("gate", {"action": "list"}))]
assert [ack["status"] for ack in asked] == ["ok"] * 3 and asked[2]["gates"] == [], asked
synced = policies()
core.delegation
print(json.dumps([made, reported, synced, policies()]))
"""


def test_a_core_loads_no_policy_until_it_uses_one(tmp_path) -> None:
    made, reported, synced, used = json.loads(subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path)], capture_output=True, text=True,
        check=True, timeout=60).stdout)
    assert made == [f"choragos.actors.{m}" for m in WITH_THE_CORE]
    # A role's reports at the start: the journal's side only (no limit waited
    # out, nothing queued for the delivery).
    assert reported == sorted(f"choragos.actors.{m}" for m in (*WITH_THE_CORE, "corejournal"))
    # The deck's status, board and empty gate list: the token counts' besides.
    assert synced == sorted(f"choragos.actors.{m}"
                            for m in (*WITH_THE_CORE, "corejournal", "tokenusage"))
    # Delegation and what it is built with (and they with), no more.
    assert set(used) == {f"choragos.actors.{m}" for m in (
        *WITH_THE_CORE, "corejournal", "tokenusage", "delegation", "limitflow", "mergeflow",
        "holds")}


def test_each_policy_is_made_once_and_shared_by_those_built_with_it(tmp_path) -> None:
    config = Config(roles=(RoleSpec(name="orchestrator", command="x", start=True),))
    events = EventLog(tmp_path / "events.jsonl")
    core = CoreActor(CoreState(config=config, workdir=tmp_path, events=events))
    try:
        delegation = core.delegation
        assert core.delegation is delegation
        assert delegation.holds is core.holds and delegation.merges is core.merges
        assert core.holds.merges is core.merges and core.judge.holds is core.holds
        assert core.checks.judge is core.judge and delegation.guard is core.guard
        for name in POLICIES:
            assert getattr(core, name) is getattr(core, name)
            assert getattr(core, name).s is core.s
        # What is no policy stays missing, even before the core has its state.
        assert getattr(core, "_cmd_nonesuch", None) is None
        bare = CoreActor.__new__(CoreActor)
        assert getattr(bare, "delegation", None) is None
    finally:
        events.close()


TRIMS = """
import json, sys
from pathlib import Path
from choragos.actors import corepolicies
trims = []
corepolicies.give_back = lambda: trims.append(len(sys.modules)) or True
from choragos.actors.core import CoreActor, CoreState
from choragos.board.events import EventLog
from choragos.config.model import Config, RoleSpec

def core(name):
    config = Config(roles=(RoleSpec(name="orchestrator", command="x", start=True),))
    return CoreActor(CoreState(config=config, workdir=Path(sys.argv[1]),
                               events=EventLog(Path(sys.argv[1]) / name)))

first = core("a.jsonl")
made = len(trims)
first.delegation  # a dozen policies, their modules loaded
loaded = len(trims)
core("b.jsonl").delegation  # the same again: nothing loaded
print(json.dumps([made, loaded, len(trims)]))
"""


def test_the_heap_is_trimmed_once_after_policies_are_loaded(tmp_path) -> None:
    """A policy's modules, loaded at first use (after the agents' output
    grew the heap), leave their imports' temporaries in its holes: the heap
    is given back once after the outermost policy is made, not once a
    policy, and not when nothing was loaded."""
    made, loaded, again = json.loads(subprocess.run(
        [sys.executable, "-c", TRIMS, str(tmp_path)], capture_output=True, text=True,
        check=True, timeout=60).stdout)
    assert loaded == made + 1
    assert again == loaded
