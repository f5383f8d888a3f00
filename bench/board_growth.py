"""Server CPU per delegation as the board's history grows from 0 to 5,000 tasks.

A real ``choragos serve --headless`` runs in a temporary git repository
(checkpoints on) with the fixture agents: an orchestrator, a worker that
does each task and runs ``choragos work-done`` (the whole loop), and a
"backlog" worker.  At each history level the script measures a window of
full-cycle delegations to the worker (delegate, checkpoint, typed in,
work-done, report queued) and reads the server's own CPU time
(utime + stime from /proc) before and after; a second figure counts from
before the window's ``delegate`` requests, so their own handling (the
acknowledgement, the task's file and journal record, the checkpoint sent
off) is in it too.  Between windows it builds
history quickly: delegations to the paused backlog worker, each closed at
once by an operator ``work-done``, so thousands of done tasks pile up
without being typed.  The orchestrator is paused throughout, so reports
queue for it instead of being typed (typing costs the same at any history).

Each level runs ``--repeats`` windows; on a shared machine other programs
only ever add CPU time (cache misses, contention), so the best window is the
figure compared and the median is shown next to it.  Prints one JSON line:
CPU ms per delegation at each level and the ratio of the last level to the
first (the target is at most 1.5).  Not part of the test suite; absolute
numbers vary between machines, the ratio is the result.

    .venv/bin/python bench/board_growth.py [--tasks 5000] [--levels 6] [--window 30]
                                           [--repeats 3]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.common import emit, process_cpu  # noqa: E402
from choragos.control import wire  # noqa: E402
from tests.integration.harness import Serve, role_toml  # noqa: E402

TEAM = (role_toml("orchestrator", start=True) + role_toml("worker", "--worker")
        + role_toml("backlog"))


def ask(s: Serve, payload: dict) -> dict:
    ack = wire.request(s.sock, payload, 30)
    if ack["status"] != "ok":
        raise SystemExit(f"{payload['cmd']} refused: {ack['error']}")
    return ack


def done_count(s: Serve) -> int:
    return sum(t["state"] == "done" for t in ask(s, {"cmd": "board"})["tasks"])


def build_history(s: Serve, count: int) -> None:
    """``count`` delegations to the paused backlog worker, each closed at once."""
    for _ in range(count):
        task = ask(s, {"cmd": "delegate", "to": ["backlog"], "task": "history"})
        task_id = task["tasks"][0]["id"]
        ask(s, {"cmd": "work-done", "id": task_id, "task": "closed", "done": True})


def window(s: Serve, size: int) -> tuple[float, float]:
    """CPU seconds of the server for ``size`` full-cycle delegations: from the
    last ``delegate`` answered (the figure this bench has always given), and
    from before the first (the requests themselves too)."""
    first = process_cpu(s.proc.pid)
    ids = [ask(s, {"cmd": "delegate", "to": ["worker"], "task": f"job {n}"})["tasks"][0]["id"]
           for n in range(size)]
    before = process_cpu(s.proc.pid)
    deadline = time.monotonic() + 60 + size * 3
    last = ids[-1]
    # Wait on the event log, not the board: asking for the board costs the
    # server CPU that grows with the board by design.
    while not any(e["event"] == "work-done" and e.get("task") == last for e in s.events()):
        if time.monotonic() > deadline:
            raise SystemExit(f"window did not finish: {s.diagnostics()}")
        time.sleep(0.2)
    after = process_cpu(s.proc.pid)
    return after - before, after - first


def _ratio(last: float, first: float) -> float | None:
    return round(last / first, 2) if first else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=5000)
    parser.add_argument("--levels", type=int, default=6)
    parser.add_argument("--window", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="chg-bench-", dir="/tmp"))
    work = tmp / "work"
    work.mkdir()
    s = Serve(work, TEAM, sock=tmp / "s.sock")
    try:
        s.start()
        s.wait_booted(["orchestrator", "worker", "backlog"], 60)
        for role in ("orchestrator", "backlog"):
            ask(s, {"cmd": "pause", "role": role})
        step = args.tasks // (args.levels - 1)
        levels, created = [], 0
        for level in range(args.levels):
            history = level * step
            build_history(s, max(history - created, 0))
            created = max(history, created) + args.window * args.repeats
            runs = [window(s, args.window) for _ in range(args.repeats)]
            per = sorted(after * 1000 / args.window for after, _ in runs)
            whole = sorted(both * 1000 / args.window for _, both in runs)
            levels.append({"history": history, "cpu_ms_best": round(per[0], 2),
                           "cpu_ms_median": round(statistics.median(per), 2),
                           "with_requests_best": round(whole[0], 2),
                           "with_requests_median": round(statistics.median(whole), 2)})
        first, last = levels[0], levels[-1]
        emit("board_growth",
             {"last/first": _ratio(last["cpu_ms_best"], first["cpu_ms_best"]),
              "last/first, medians": _ratio(last["cpu_ms_median"], first["cpu_ms_median"]),
              "last/first, with the requests": _ratio(last["with_requests_best"],
                                                      first["with_requests_best"])},
             tasks=args.tasks, window=args.window, repeats=args.repeats, levels=levels)
    finally:
        s.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
