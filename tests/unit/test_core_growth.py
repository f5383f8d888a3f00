"""What a task costs the session core does not grow with the tasks settled before it.

Counted, not timed: the real core (``CoreActor`` and its policies, driven on
the test's thread as the roles and the listener drive it) takes a task
through its whole cycle -- delegated, its checkpoint back, typed, reported,
the report typed into the orchestrator -- after 100 and after 5,000 settled
tasks, and the walks of the live board, the Python calls and the news it
published are counted per task.  The journal's own growth (its snapshots)
is counted on the journal.
"""

from __future__ import annotations

import cProfile
import pstats

import pytest

from bench.core_growth import CountedWalks
from choragos.actors import messages as m
from choragos.actors.core import CoreActor, CoreState
from choragos.board import journal
from choragos.board.tasks import TaskState
from tests.conftest import Told
from tests.unit.policyport import core_state

pytestmark = pytest.mark.timeout(120)


class Rig:
    """A core with an orchestrator ("lead") and a "coder", a checkpointer that
    only records, and a subscriber that counts the news."""

    def __init__(self, state: CoreState) -> None:
        self.state = state
        state.checkpointer = Told()
        self.news: list[object] = []
        state.subscribers.append(self.news.append)
        self.core = CoreActor(state)
        self.walks: CountedWalks | None = None

    def send(self, message: object) -> object:
        answer = self.core.on_receive(message)
        assert type(answer).__name__ != "Crashed", answer
        return answer

    def typed(self, role: str) -> m.Injection:
        told = self.state.seats[role].handle.told
        return next(msg for msg in reversed(told) if isinstance(msg, m.Inject)).injection

    def cycle(self) -> None:
        ack = self.send(m.Dispatch({"cmd": "delegate", "to": ["coder"], "task": "job",
                                    "brief": None, "caller": None}))
        task_id = ack["tasks"][0]["id"]
        self.send(m.CheckpointDone(task_id, ref=f"refs/choragos/cp/{task_id}", seconds=0.01))
        self.send(m.InjectionOutcome("coder", self.typed("coder"), True, "ok"))
        self.send(m.Dispatch({"cmd": "work-done", "id": task_id, "task": "done it",
                              "done": True, "caller": "coder"}))
        self.send(m.InjectionOutcome("lead", self.typed("lead"), True, "ok"))
        assert self.state.board.get(task_id).state is TaskState.DONE

    def settle_history(self, count: int) -> None:
        """``count`` more settled tasks on the board, put there directly."""
        board = self.state.board
        for _ in range(count):
            task = board.create("coder", "history")
            board.move(task.id, TaskState.DELIVERED)
            board.move(task.id, TaskState.DONE, summary="ok")

    def count_walks(self) -> None:
        self.walks = CountedWalks(self)  # the bench's counter, on this rig's board

    def per_task(self, tasks: int) -> dict[str, float]:
        """Each counted figure of ``tasks`` cycles, per task."""
        if self.walks is not None:
            self.walks.walks = 0
        self.news[:] = []
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(tasks):
            self.cycle()
        profile.disable()
        return {"walks": (self.walks.walks if self.walks is not None else 0) / tasks,
                "calls": pstats.Stats(profile).total_calls / tasks,
                "news": len(self.news) / tasks,
                "news bytes": sum(len(repr(item)) for item in self.news) / tasks}


def test_a_task_costs_the_core_the_same_after_100_or_5000_settled_tasks(tmp_path):
    """Counted per task, after 100 and after 5,000 settled tasks: the live
    board is walked by nothing (a delegation listed it for the checkpoint's
    tasks at work, and every settled move counted its states: two walks of
    up to 100 kept tasks), and the Python calls and the news published stay
    the same (the news a few bytes longer: the ids have more digits)."""
    rig = Rig(core_state(tmp_path))
    rig.count_walks()
    rig.settle_history(100)
    rig.per_task(5)  # warm: first-time paths (a directory made, a cache filled)
    early = rig.per_task(20)
    rig.settle_history(4900)
    late = rig.per_task(20)
    assert early["walks"] == 0 and late["walks"] == 0, (early, late)
    assert late["calls"] <= early["calls"] * 1.01, (early, late)
    assert late["news"] == early["news"]
    assert late["news bytes"] <= early["news bytes"] * 1.05, (early, late)
    assert len(rig.state.board.tasks) <= 101 + 1  # the rest archived


def test_the_journals_snapshots_write_no_more_than_its_records(tmp_path, monkeypatch):
    """A compaction writes the whole image, every task of the history; at a
    fixed count of records, the snapshots of 3,000 tasks compacted every 200
    records wrote 5.2 times the records' bytes (12.9 MB for 2.5), and the
    ratio grows with the history.  A compaction now also waits until the
    journal holds the last snapshot's size, so a snapshot is paid for by as
    many bytes of records: 0.95 times here, and at most about twice
    however long the history."""
    written = {"records": 0, "snapshots": 0}
    write_atomic, frame = journal.write_atomic, journal.frame

    def snapshot(path, data):
        written["snapshots"] += len(data)
        write_atomic(path, data)

    def record(r):
        data = frame(r)
        written["records"] += len(data)
        return data

    monkeypatch.setattr(journal, "write_atomic", snapshot)
    monkeypatch.setattr(journal, "frame", record)
    j = journal.Journal(tmp_path / "state", compact_every=200)
    task = {"role": "coder", "text": "a task of a few words " * 4, "brief": None,
            "created": 1.0, "note": "", "rounds": 0, "checks": ""}
    for n in range(1, 3001):
        for state in ("queued", "delivered", "done"):
            j.append("task", task={**task, "id": f"T{n}", "state": state})
        if n % 20 == 0:
            j.sync()  # a compaction is considered after each sync, as the fsync thread does
    j.close()
    assert written["snapshots"] <= 2 * written["records"], written
    assert len(journal.load(tmp_path / "state").tasks) == 3000  # nothing lost
