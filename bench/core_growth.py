"""The session core's own cost per task as the history grows, counted in-process.

No server, no PTY, no socket: the real core (``CoreActor``, its policies,
the journaled board, the journal with its fsync thread, the event log) is
driven on this thread through a whole task's cycle, as the roles and the
listener would drive it: ``delegate``, the checkpoint's answer, the task's
line typed (its outcome), ``work-done``, the report typed into the
orchestrator.  At each history level it counts what a cycle costs:

- the Python function calls the core made (``cProfile``), and the functions
  whose calls grew the most between the first and the last level;
- the live board's tasks walked (``values``/``__iter__`` of the live board);
- bytes written to the journal and the event log, and bytes of news
  published to subscribers (the news item's ``repr``);
- CPU seconds of the process (``time.process_time``: the core's thread and
  the journal's, whose compactions grow with the history), best of two
  windows without the profiler;
- and over the whole history so far, the bytes the journal's snapshots
  wrote per task (a compaction is rare and lumpy: a window may hold none).

History is built with the same cycle, quickly (no profile).  Counted
figures do not depend on the machine's load; the CPU figure does a little.

    .venv/bin/python bench/core_growth.py [--levels 0,1000,10000] [--window 200]
                                          [--top 15]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.common import emit  # noqa: E402
from choragos.actors import messages as m  # noqa: E402
from choragos.actors.core import CoreActor, CoreState, Seat  # noqa: E402
from choragos.actors.durable import JournaledBoard  # noqa: E402
from choragos.board import journal as journal_mod  # noqa: E402
from choragos.board.events import EventLog  # noqa: E402
from choragos.config.model import Config, RoleSpec  # noqa: E402
from choragos.roles.rolestatus import RoleStatus  # noqa: E402


class Recorder:
    """Stands in for a role's and the checkpointer's handle: keeps what it is told."""

    def __init__(self) -> None:
        self.told: list[Any] = []

    def tell(self, message: Any) -> None:
        self.told.append(message)


class Rig:
    """One core with an orchestrator and a worker, driven by hand."""

    def __init__(self, workdir: Path, compact_every: int = journal_mod.COMPACT_EVERY) -> None:
        (workdir / ".choragos").mkdir(parents=True, exist_ok=True)
        config = Config(roles=(RoleSpec(name="lead", command="x", start=True),
                               RoleSpec(name="coder", command="x")))
        self.journal = journal_mod.Journal(journal_mod.state_dir(workdir),
                                           compact_every=compact_every)
        self.journal.start()
        self.events = EventLog(workdir / ".choragos" / "logs" / "events.jsonl")
        self.news = [0, 0]  # items, bytes of their repr
        state = CoreState(config=config, workdir=workdir, events=self.events,
                          board=JournaledBoard(journal=self.journal), journal=self.journal)
        state.subscribers.append(self._heard)
        self.roles = {name: Recorder() for name in ("lead", "coder")}
        for name, handle in self.roles.items():
            state.seats[name] = Seat(name, handle, m.RoleView(name, RoleStatus.IDLE,
                                                              ready=True))
        self.checkpointer = Recorder()
        state.checkpointer = self.checkpointer
        self.state = state
        self.core = CoreActor(state)

    def _heard(self, item: Any) -> None:
        self.news[0] += 1
        self.news[1] += len(repr(item))

    def send(self, message: Any) -> Any:
        answer = self.core.on_receive(message)
        if type(answer).__name__ == "Crashed":
            raise SystemExit(f"the core crashed on {message!r}: {answer}")
        return answer

    def typed(self, role: str) -> m.Injection:
        """The line the core has told ``role`` to type (after the journal's sync)."""
        handle = self.roles[role]
        deadline = time.monotonic() + 5
        while not handle.told:
            if time.monotonic() > deadline:
                raise SystemExit(f"nothing was typed into {role}")
            time.sleep(0.0005)
        return handle.told.pop().injection

    def cycle(self, n: int) -> None:
        """One task: delegated, checkpointed, typed, reported, the report typed."""
        ack = self.send(m.Dispatch({"cmd": "delegate", "to": ["coder"], "task": f"job {n}",
                                    "brief": None, "caller": None}))
        task_id = ack["tasks"][0]["id"]
        snap = self.checkpointer.told.pop()
        self.send(m.CheckpointDone(snap.task_id, ref=f"refs/choragos/cp/{task_id}",
                                   seconds=0.01))
        self.send(m.InjectionOutcome("coder", self.typed("coder"), True, "ok"))
        self.send(m.Dispatch({"cmd": "work-done", "id": task_id, "task": "done it",
                              "done": True, "caller": "coder"}))
        self.send(m.InjectionOutcome("lead", self.typed("lead"), True, "ok"))

    def close(self) -> None:
        self.journal.close()
        self.events.close()


class CountedWalks:
    """Counts walks of the live board's tasks while installed."""

    def __init__(self, rig: Rig) -> None:
        self.rig, self.walks = rig, 0
        tasks = rig.state.board.tasks
        counter = self

        class Counted(type(tasks)):
            def values(self):
                counter.walks += 1
                return super().values()

            def items(self):
                counter.walks += 1
                return super().items()

            def __iter__(self):
                counter.walks += 1
                return super().__iter__()

        rig.state.board.tasks = Counted(tasks)


class CountedWrites:
    """Counts the bytes the journal (its records and its compactions'
    snapshots) and the event log write while installed."""

    def __init__(self, rig: Rig) -> None:
        self.journal = self.events = self.snapshots = self.compactions = 0
        self._undo = [(rig.journal, "_write", rig.journal._write),
                      (rig.events, "_write_whole", rig.events._write_whole),
                      (journal_mod, "write_atomic", journal_mod.write_atomic)]
        rig.journal._write = self._counting("journal", rig.journal._write)
        rig.events._write_whole = self._counting("events", rig.events._write_whole)
        journal_mod.write_atomic = self._counting("snapshots", journal_mod.write_atomic)

    def _counting(self, name: str, write: Any) -> Any:
        def counted(*args: Any) -> Any:
            setattr(self, name, getattr(self, name) + len(args[-1]))
            if name == "snapshots":
                self.compactions += 1
            return write(*args)
        return counted

    def remove(self) -> None:
        for owner, name, original in self._undo:
            setattr(owner, name, original)


def measure(rig: Rig, first: int, window: int, profile: bool) -> dict:
    walks = CountedWalks(rig)
    news_before = list(rig.news)
    writes = CountedWrites(rig)
    profiler = cProfile.Profile() if profile else None
    cpu = time.process_time()
    if profiler:
        profiler.enable()
    for n in range(first, first + window):
        rig.cycle(n)
    if profiler:
        profiler.disable()
    cpu = time.process_time() - cpu
    writes.remove()
    figures = {"walks": walks.walks / window,
               "news_items": (rig.news[0] - news_before[0]) / window,
               "news_bytes": (rig.news[1] - news_before[1]) / window,
               "journal_bytes": writes.journal / window, "event_bytes": writes.events / window,
               "snapshot_bytes": writes.snapshots / window, "compactions": writes.compactions,
               "cpu_ms": cpu * 1000 / window}
    if profiler:
        stats = pstats.Stats(profiler)
        figures["calls"] = stats.total_calls / window
        figures["by_function"] = {f"{Path(k[0]).name}:{k[1]}:{k[2]}": v[1] / window
                                  for k, v in stats.stats.items()}
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--levels", default="0,1000,10000")
    parser.add_argument("--window", type=int, default=200)
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    tmp = Path(tempfile.mkdtemp(prefix="chg-core-", dir="/tmp"))
    rig = Rig(tmp)
    whole = CountedWrites(rig)  # over the whole history
    done, results = 0, []
    try:
        for level in levels:
            while done < level:
                rig.cycle(done)
                done += 1
            counted = measure(rig, done, args.window, profile=True)
            done += args.window
            # The CPU figure without the profiler, best of two windows.
            cpu = []
            for _ in range(2):
                cpu.append(measure(rig, done, args.window, profile=False)["cpu_ms"])
                done += args.window
            results.append({"history": level, **counted, "profiled_ms": counted["cpu_ms"],
                            "cpu_ms": min(cpu), "snapshot_bytes_so_far": whole.snapshots / done})
        first, last = results[0], results[-1]
        grown = sorted(((last["by_function"].get(k, 0) - v, k)
                        for k, v in first["by_function"].items()), reverse=True)
        new = [(v, k) for k, v in last["by_function"].items() if k not in first["by_function"]]
        print("calls per task, most grown from the first level to the last:")
        for delta, name in sorted(grown + new, reverse=True)[:args.top]:
            print(f"  {delta:+10.2f}  {name}")
        for r in results:
            r.pop("by_function")
            print({k: (round(v, 2) if isinstance(v, float) else v) for k, v in r.items()})
        emit("core_growth", {"calls last/first": round(last["calls"] / first["calls"], 3),
                             "cpu last/first": round(last["cpu_ms"] / first["cpu_ms"], 3)},
             window=args.window, levels=[{k: (round(v, 3) if isinstance(v, float) else v)
                                          for k, v in r.items()} for r in results])
    finally:
        rig.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
