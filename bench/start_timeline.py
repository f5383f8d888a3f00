"""The whole machine over one start: ``big_crew.py``'s first frame (choragos,
then tmux) under ``perf sched record``, every thread's time from the start
to the frame split into running, waiting for a core (runnable) and asleep,
by process group: the ``serve`` client, the daemon's forks, the server's
main thread and its other threads, the agents (every process descended
from the server, or from tmux's), the bench, and the rest of the machine.

    sudo .venv/bin/python bench/start_timeline.py [--roles 12] [--bucket-ms 40] [--keep DIR]

Beside the groups' totals and a table of time slices: when the agents were
spawned and when each finished its start (its last run before a sleep of
60 ms or more: the fixture agent then polls every 100 ms), shown and hidden
apart (the roles' transcripts name each agent's pid), and the server log's
"session running" and held spawns.  Needs perf and the right to trace the
scheduler (root); one run, so read it beside the interleaved pairs of
``big_crew.py``.  Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench import big_crew  # noqa: E402
from bench.common import need_tmux, scratch  # noqa: E402

EVENTS = ("sched:sched_process_exec", "sched:sched_process_fork", "sched:sched_process_exit")
LINE = re.compile(r"^\s*(.*?)\s+(\d+)/(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+?):?\s+(.*)$")
SETTLED = 0.06  # a sleep this long ends an agent's start
SHOWN = 7  # the deck's first layout: the start role and six more


def record_sides(roles: int) -> None:
    """Under perf: one first frame each side, a JSON line of marks each."""
    binary = need_tmux()
    with scratch("chc-") as root:
        marks: dict = {"side": "choragos"}
        big_crew.choragos(root, roles, 0, 0, marks=marks)
        logs = root / "w" / ".choragos" / "logs"
        marks["log"] = (logs / "server.log").read_text()
        marks["roles"] = _agent_roles(logs)
        print(json.dumps(marks), flush=True)
    with scratch("chc-") as root:
        marks = {"side": "tmux"}
        big_crew.tmux(root, roles, 0, 0, binary, marks=marks)
        print(json.dumps(marks), flush=True)


def _agent_roles(logs: Path) -> dict[int, str]:
    """Each agent's pid and role, from the roles' transcripts' session lines."""
    found = {}
    for path in logs.glob("*.log"):
        for match in re.finditer(r"^=== \S+ pid (\d+) in ", path.read_text(errors="replace"),
                                 re.M):
            found[int(match.group(1))] = path.stem
    return found


class Machine:
    """What ``perf script`` says about each thread: its process, its
    parent, its execs, and its intervals (start, end, "run" or "wait")."""

    def __init__(self, data: Path) -> None:
        self.tgid: dict[int, int] = {}
        self.parent: dict[int, int] = {}
        self.execs: dict[int, float] = {}
        self.spans: dict[int, list[tuple[float, float, str]]] = defaultdict(list)
        self._state: dict[int, tuple[str, float]] = {}
        self._on_cpu: dict[int, int] = {}
        out = subprocess.run(["perf", "script", "-i", str(data), "-F",
                              "comm,pid,tid,cpu,time,event,trace"],
                             capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            match = LINE.match(line)
            if match:
                self._take(*match.groups())

    def _take(self, _comm: str, pid: str, tid: str, cpu: str, at: str, event: str,
              trace: str) -> None:
        t, tid_ = float(at), int(tid)
        if tid_:
            self.tgid[tid_] = int(pid)
        fields = dict(re.findall(r"(\w+)=(\S+)", trace))
        if event.endswith("sched_switch"):
            self._switch(int(cpu), t, int(fields["prev_pid"]), fields["prev_state"],
                         int(fields["next_pid"]))
        elif event.endswith(("sched_waking", "sched_wakeup_new")):
            woken = int(fields["pid"])
            if self._state.get(woken, ("",))[0] != "run":
                self._set(woken, "wait", t)
        elif event.endswith("sched_process_fork"):
            self.parent[int(fields["child_pid"])] = tid_
        elif event.endswith("sched_process_exec"):
            self.execs.setdefault(tid_, t)

    def _switch(self, cpu: int, t: float, prev: int, state: str, nxt: int) -> None:
        # A thread switched in whose switch out was not recorded is off the CPU now.
        last = self._on_cpu.get(cpu)
        if last and last != prev and self._state.get(last, ("",))[0] == "run":
            self._set(last, "sleep", t)
        self._on_cpu[cpu] = nxt
        if prev:
            self._set(prev, "wait" if state.startswith("R") else "sleep", t)
        if nxt:
            self._set(nxt, "run", t)

    def _set(self, tid: int, state: str, t: float) -> None:
        was, since = self._state.get(tid, ("sleep", t))
        if was in ("run", "wait"):
            self.spans[tid].append((since, t, was))
        self._state[tid] = (state, t)

    def process(self, tid: int) -> int:
        return self.tgid.get(tid, tid)

    def descends(self, process: int, root: int) -> bool:
        for _ in range(64):
            if process == root:
                return True
            parent = self.parent.get(process)
            if parent is None:
                return False
            process = self.process(parent)
        return False


def group_of(machine: Machine, marks: dict, bench: int):
    """A thread's group in one side's run."""
    server, client = marks["server"], marks["client"]
    ours = marks["side"] == "choragos"

    def group(tid: int) -> str:
        process = machine.process(tid)
        if ours and tid == server:
            return "server main"
        if process == server:
            return "server threads" if ours else "tmux server"
        if machine.descends(process, server):
            return "agents"
        if process == client:
            return "serve client" if ours else "tmux client"
        if machine.descends(process, client):
            return "daemon forks"
        if process == bench:
            return "bench"
        if machine.descends(process, bench):
            return "bench's commands" if ours else "tmux commands"
        return "rest of the machine"
    return group


def report(machine: Machine, marks: dict, bench: int, bucket: float) -> None:
    t0, t1 = marks["t0"], marks["t1"]
    group = group_of(machine, marks, bench)
    totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    slices: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(lambda: [0.0, 0.0]))
    for tid, spans in machine.spans.items():
        name = group(tid)
        for start, end, state in spans:
            _add(totals[name], slices[name], max(start, t0) - t0, min(end, t1) - t0,
                 state == "wait", bucket)
    print(f"== {marks['side']}: the frame at {1000 * (t1 - t0):.0f} ms")
    print(f"{'group':22} {'ran ms':>8} {'waited ms':>10}")
    order = sorted(totals, key=lambda name: -totals[name][0])
    for name in order:
        print(f"{name:22} {1000 * totals[name][0]:8.1f} {1000 * totals[name][1]:10.1f}")
    _agents(machine, marks, group)
    print("ms      " + "".join(f"{name[:16]:>18}" for name in order) + "   (ran/waited)")
    for index in range(int((t1 - t0) / bucket) + 1):
        print(f"{int(1000 * index * bucket):5d}+  " + "".join(
            f"{1000 * slices[n][index][0]:8.1f}/{1000 * slices[n][index][1]:<9.1f}"
            for n in order))


def _add(total: list[float], slices: dict[int, list[float]], start: float, end: float,
         waiting: bool, bucket: float) -> None:
    while start < end:
        index = int(start / bucket)
        cut = min(end, (index + 1) * bucket)
        total[int(waiting)] += cut - start
        slices[index][int(waiting)] += cut - start
        start = cut


def _agents(machine: Machine, marks: dict, group) -> None:
    """When the agents were spawned and finished their start, shown and hidden apart."""
    t0, names = marks["t0"], {int(k): v for k, v in marks.get("roles", {}).items()}
    shown = {f"r{i}" for i in range(SHOWN)}
    kinds: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for process, execed in machine.execs.items():
        if group(process) != "agents" or machine.process(process) != process:
            continue
        done = _start_done(machine.spans.get(process, []), t0)
        if done is not None and process in names:
            kinds["shown" if names[process] in shown else "hidden"].append((execed, done))
        elif done is not None and not names:
            kinds["all"].append((execed, done))
    for kind, found in kinds.items():
        execs, dones = [e for e, _ in found], [d for _, d in found]
        print(f"agents {kind}: spawned {_ms(min(execs), t0)}-{_ms(max(execs), t0)} ms, "
              f"their starts done {_ms(min(dones), t0)}-{_ms(max(dones), t0)} ms")
    for line in marks.get("log", "").splitlines():
        if "session running" in line or "spawned after" in line:
            at = datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()
            print(f"server log at {1000 * (at - marks['wall0']):.0f} ms: {line[24:100]}")


def _start_done(spans: list[tuple[float, float, str]], t0: float) -> float | None:
    """The end of a process's last run before its first long sleep (None
    for a process that ran under 10 ms: not an agent's start)."""
    spans = sorted(span for span in spans if span[0] >= t0)
    ran, end = 0.0, None
    for (start, stop, state), after in zip(spans, [*spans[1:], (float("inf"), 0.0, "")],
                                           strict=True):
        if state == "run":
            ran, end = ran + stop - start, stop
        if after[0] - stop >= SETTLED and ran > 0.01:
            return end
    return end if ran > 0.01 else None  # a shell or a helper, not an agent's start


def _ms(at: float, t0: float) -> str:
    return f"{1000 * (at - t0):.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--roles", type=int, default=12)
    parser.add_argument("--bucket-ms", type=float, default=40.0)
    parser.add_argument("--keep", type=Path, help="keep perf's data and the marks here")
    parser.add_argument("--record", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.record:  # the run perf watches
        record_sides(args.roles)
        return
    folder = args.keep or Path(tempfile.mkdtemp(prefix="timeline-"))
    folder.mkdir(parents=True, exist_ok=True)
    data, marks_path = folder / "sched.data", folder / "marks.jsonl"
    events = [arg for event in EVENTS for arg in ("-e", event)]
    with marks_path.open("w") as out:
        subprocess.run(
            ["perf", "sched", "record", "-q", "-k", "CLOCK_MONOTONIC", "-o", str(data), *events,
             "--", sys.executable, __file__, "--record", "--roles", str(args.roles)],
            stdout=out, check=True)
    machine = Machine(data)
    bench = min(machine.execs, key=machine.execs.get)  # the first exec: the run perf started
    for line in marks_path.read_text().splitlines():
        report(machine, json.loads(line), bench, args.bucket_ms / 1000)


if __name__ == "__main__":
    main()
