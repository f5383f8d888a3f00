"""A keystroke's way through the scheduler, choragos beside tmux.

``attach_latency.py``'s setups and probes, with ``perf`` recording the
scheduler's events (``sched_waking``, ``sched_wakeup``, ``sched_switch``,
``sched_migrate_task``, every CPU, on the probes' clock) while each round
probes.  Each probe is then followed backwards from the moment the bench's
reader saw the echo: the task that ran then was woken by some task, which
was woken by another, back to the bench's write of the key.  Each link of
that chain is a wake-up: who woke whom (the bench, the session's or tmux's
threads, the kworkers that move bytes through a PTY, the agent), on which
CPU each ran, whether the wakee's CPU was idle (a vCPU that may have
halted), the wake-up's latency (``sched_waking`` to the wakee on a CPU;
also over the wake-ups on the waker's own CPU alone, where the wakee
waits for the waker to give the CPU up), the waker's run from its own
switch-in to the wake-up it issued and its run on after it (until it
switched out), and for the wake-ups that waited over 15 µs, what their
CPU ran meanwhile (the last task switched in there before the wakee).
Printed: per link, the medians over the probes whose chains have that
link; the chains' length; migrations of the chain's tasks per probe.
Needs root (``perf``).  Not part of the test suite.

    .venv/bin/python bench/attach_sched.py [--probes N] [--rounds R] [--rate MBPS]
                                           [--idle] [--roles N] [--flooders K]
                                           [--checkout PATH] [--only choragos|tmux] [--hops]
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench import attach_latency as al  # noqa: E402
from bench.common import scratch  # noqa: E402

EVENTS = "sched:sched_waking,sched:sched_wakeup,sched:sched_switch,sched:sched_migrate_task"
LINE = re.compile(r"^\s*(?P<comm>.+?)\s+(?P<pid>\d+)/(?P<tid>\d+)\s+\[(?P<cpu>\d+)\]\s+"
                  r"(?P<t>[\d.]+):\s+sched:(?P<ev>\w+):\s+(?P<rest>.*)$")


class Ev(NamedTuple):
    t: float
    cpu: int
    tid: int  # the task current on the CPU (the waker, for sched_waking)
    ev: str
    rest: str


@contextlib.contextmanager
def recording(path: Path) -> Iterator[None]:
    """``perf record`` of the scheduler's events on every CPU meanwhile."""
    proc = subprocess.Popen(["perf", "record", "-q", "-e", EVENTS, "-a", "-k", "CLOCK_MONOTONIC",
                             "-o", str(path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)  # perf opens its events and maps its buffers first
    try:
        yield
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(30)


def events(path: Path) -> tuple[list[Ev], dict[int, int], dict[int, str]]:
    """The events in time order, each task's process (tgid) and name."""
    out = subprocess.run(["perf", "script", "-i", str(path), "-F",
                          "comm,pid,tid,cpu,time,event,trace", "--ns"],
                         capture_output=True, text=True, check=True).stdout
    evs, tgid, comm = [], {}, {}
    for line in out.splitlines():
        m = LINE.match(line)
        if m is None:
            continue
        tid = int(m["tid"])
        tgid[tid], comm[tid] = int(m["pid"]), m["comm"].strip()
        evs.append(Ev(float(m["t"]), int(m["cpu"]), tid, m["ev"], m["rest"]))
    return evs, tgid, comm


def _field(rest: str, name: str) -> str:
    m = re.search(rf"\b{name}=(\S+)", rest)
    return m[1] if m else ""


class Link(NamedTuple):
    waker: int
    wakee: int
    waking: float  # sched_waking, on the waker's CPU
    on_cpu: float  # the wakee switched in
    waker_cpu: int
    wakee_cpu: int
    idle: bool  # the wakee's CPU ran its idle task at the waking
    ran_from: float  # the waker's switch-in before it issued the waking
    ran_on: float  # the waker's switch-out after it (its run after handing on)
    behind: int  # what the wakee's CPU ran meanwhile (see Trace.ahead; 0: its idle task)


class Trace:
    """The events indexed for walking chains backwards."""

    def __init__(self, evs: list[Ev]) -> None:
        self.evs = evs
        self.switch_in: dict[int, list[tuple[float, int]]] = {}  # tid -> (t, cpu)
        self.switch_out: dict[int, list[float]] = {}
        self.waking: dict[int, list[tuple[float, int, int]]] = {}  # wakee -> (t, waker, cpu)
        self.migrations: dict[int, list[float]] = {}
        self.cpu_current: dict[int, list[tuple[float, int]]] = {}  # cpu -> (t, tid switched in)
        for e in evs:
            if e.ev == "sched_switch":
                nxt = int(_field(e.rest, "next_pid"))
                self.switch_out.setdefault(int(_field(e.rest, "prev_pid")), []).append(e.t)
                self.switch_in.setdefault(nxt, []).append((e.t, e.cpu))
                self.cpu_current.setdefault(e.cpu, []).append((e.t, nxt))
            elif e.ev == "sched_waking":
                self.waking.setdefault(int(_field(e.rest, "pid")), []).append((e.t, e.tid, e.cpu))
            elif e.ev == "sched_migrate_task":
                self.migrations.setdefault(int(_field(e.rest, "pid")), []).append(e.t)

    @staticmethod
    def _last_before(seq: list, t: float):
        found = None
        for item in seq:
            if item[0] > t:
                break
            found = item
        return found

    def current(self, cpu: int, t: float) -> int:
        got = self._last_before(self.cpu_current.get(cpu, []), t)
        return got[1] if got else -1

    def ahead(self, cpu: int, waking: float, on_cpu: float) -> int:
        """What ``cpu`` ran between a waking and its wakee's switch-in: the
        last task switched in there meanwhile, else the one running at the
        waking (the waker itself, when it woke a task onto its own CPU)."""
        between = [tid for t, tid in self.cpu_current.get(cpu, []) if waking < t < on_cpu]
        return between[-1] if between else self.current(cpu, waking)

    def chain(self, tid: int, at: float, start: float, stop: int) -> list[Link] | None:
        """The wake-ups that led to ``tid`` running at ``at``, back to ``stop``'s
        (the bench's main thread) after ``start``; None if it breaks."""
        links: list[Link] = []
        while tid != stop:
            sw = self._last_before(self.switch_in.get(tid, []), at)
            if sw is None or sw[0] < start:
                return None
            wk = self._last_before(self.waking.get(tid, []), sw[0])
            if wk is None or wk[0] < start:
                return None
            waker = wk[1]
            if waker == 0:  # woken from an interrupt on an idle CPU: a timer, not a chain
                return None
            ran = self._last_before(self.switch_in.get(waker, []), wk[0])
            out = next((t for t in self.switch_out.get(waker, []) if t >= wk[0]), wk[0])
            behind = self.ahead(sw[1], wk[0], sw[0])
            links.append(Link(waker, tid, wk[0], sw[0], wk[2], sw[1], behind == 0,
                              ran[0] if ran else wk[0], out, behind))
            tid, at = waker, wk[0]
            if len(links) > 30:
                return None
        return links[::-1]


def labeller(setup: str, server: int, bench: int, reader: int, main: int,
             tgid: dict[int, int], comm: dict[int, str], agents: set[int]):
    names: dict[int, str] = {}

    def label(tid: int) -> str:
        if tid == main:
            return "bench main"
        if tid == reader:
            return "bench reader"
        if tgid.get(tid) == server:
            if tid not in names:
                names[tid] = f"{setup} thread {len(names) + 1}"
            return names[tid]
        if tgid.get(tid) in agents:
            return "agent"
        name = comm.get(tid, "?")
        if name.startswith("kworker") or name == "kthreadd":  # a kworker just forked
            return "kworker"
        if tgid.get(tid) == bench:
            return "bench other"
        return name
    return label


def descendants(pid: int) -> set[int]:
    """``pid``'s processes below it (the agents), from /proc."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                stat = Path(f"/proc/{entry}/stat").read_text()
                parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, pp in parents.items() if pp in frontier} - found
        found |= frontier
    return found


def run_round(setup: str, crew: al.Crew, probes: int, number: int, hops: bool,
              rows: list[tuple[str, list[Link], int]], label_of: dict,
              inside: dict[str, list[float]]) -> int:
    with scratch("chsched-") as root:
        if setup == "tmux":
            context = al.tmux_screen(root, crew, shutil.which("tmux") or "tmux")
        else:
            context = al.choragos_screen(root, crew, hops=hops)
        with context as screen:
            screen.probing()
            agents = descendants(screen.server_pid)
            data = root / "perf.data"
            spans = []
            with recording(data):
                for _ in range(probes):
                    number += 1
                    span = al.probe(screen, number)
                    if span is not None:
                        spans.append(span)
            server, reader = screen.server_pid, screen.thread.native_id
        evs, tgid, comm = events(data)
        marks = al._marks(root / "hops.txt") if hops and setup != "tmux" else []
    trace = Trace(evs)
    main = threading.get_native_id()
    label = labeller(setup, server, os.getpid(), reader, main, tgid, comm, agents)
    for typed, seen in spans:
        links = trace.chain(reader, seen, typed, main)
        if links is None:
            rows.append((setup, [], 0))
            continue
        tids = {ln.wakee for ln in links}
        moved = sum(typed <= t <= seen for tid in tids for t in trace.migrations.get(tid, []))
        rows.append((setup, links, moved))
        _inside(links, marks, label, inside)
        for ln in links:
            label_of[(setup, ln.waker)] = label(ln.waker)
            label_of[(setup, ln.wakee)] = label(ln.wakee)
            label_of[(setup, ln.behind)] = "idle" if ln.behind == 0 else label(ln.behind)
    return number


def _inside(links: list[Link], marks: list[al.Mark], label, inside: dict[str, list[float]]) -> None:
    """The session's hop stamps taken by a chain's task between its switch-in
    and the wake-up it issued: µs after the switch-in, and the wake-up's."""
    for ln, nxt in itertools.pairwise(links):
        own = [m for m in marks if m.thread == ln.wakee and ln.on_cpu <= m.t <= nxt.waking]
        for m in own:
            inside.setdefault(f"{label(ln.wakee)}: {m.hop}", []).append((m.t - ln.on_cpu) * 1e6)
        if own:
            inside.setdefault(f"{label(ln.wakee)}: (its waking)", []).append(
                (nxt.waking - ln.on_cpu) * 1e6)


def report(rows: list[tuple[str, list[Link], int]], label_of: dict, setup: str) -> None:
    mine = [(links, moved) for s, links, moved in rows if s == setup]
    whole = [links for links, _ in mine if links]
    print(f"\n{setup}: {len(whole)} of {len(mine)} probes followed back to the key's write")
    if not whole:
        return
    print(f"  links a probe: median {statistics.median(len(x) for x in whole)}, "
          f"{Counter(len(x) for x in whole).most_common(4)}")
    print(f"  migrations of the chain's tasks a probe: "
          f"{statistics.mean(m for (links, m) in mine if links):.2f}")
    span = [(x[-1].on_cpu - x[0].waking) * 1e6 for x in whole]
    print(f"  first waking -> last on CPU: median {statistics.median(span):.0f} µs")
    by: dict[str, list[Link]] = {}
    order: dict[str, list[int]] = {}
    for links in whole:
        for i, ln in enumerate(links):
            key = f"{label_of[(setup, ln.waker)]} -> {label_of[(setup, ln.wakee)]}"
            by.setdefault(key, []).append(ln)
            order.setdefault(key, []).append(i)
    print(f"  {'link (waker -> wakee)':<44} {'n':>4} {'waker ran µs':>12} {'ran on':>6} "
          f"{'latency µs':>10} {'p90':>6} {'same CPU':>8} {'idle CPU':>8} {'cross-CPU':>9}")
    for key in sorted(by, key=lambda k: statistics.median(order[k])):
        lns = by[key]
        lat = sorted((ln.on_cpu - ln.waking) * 1e6 for ln in lns)
        ran = statistics.median((ln.waking - ln.ran_from) * 1e6 for ln in lns)
        on = statistics.median((ln.ran_on - ln.waking) * 1e6 for ln in lns)
        same = [(ln.on_cpu - ln.waking) * 1e6 for ln in lns if ln.waker_cpu == ln.wakee_cpu]
        print(f"  {key:<44} {len(lns):>4} {ran:>12.0f} {on:>6.0f} "
              f"{statistics.median(lat):>10.0f} "
              f"{lat[int(len(lat) * 0.9) - 1] if len(lat) >= 10 else lat[-1]:>6.0f} "
              f"{statistics.median(same) if same else float('nan'):>8.0f} "
              f"{sum(ln.idle for ln in lns) / len(lns):>8.0%} "
              f"{sum(ln.waker_cpu != ln.wakee_cpu for ln in lns) / len(lns):>9.0%}")
        slow = Counter(label_of[(setup, ln.behind)] for ln in lns if ln.on_cpu - ln.waking > 15e-6)
        if slow:
            print(f"  {'':<6}waited over 15 µs in {sum(slow.values())}, its CPU running meanwhile: "
                  + ", ".join(f"{name} {n}" for name, n in slow.most_common(3)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--probes", type=int, default=40, help="probes per round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--rate", type=float, default=0.0)
    parser.add_argument("--idle", action="store_true")
    parser.add_argument("--roles", type=int, default=2)
    parser.add_argument("--flooders", type=int, default=1)
    parser.add_argument("--only", choices=("choragos", "tmux"))
    parser.add_argument("--checkout", type=Path, help="run choragos from this checkout")
    parser.add_argument("--hops", action="store_true",
                        help="with the session's hop stamps (a write each): where in a "
                        "thread's run after its wake-up each stamp fell")
    args = parser.parse_args()
    if args.checkout is not None:
        al.REPO = args.checkout.resolve()
    crew = al.Crew(args.rate, args.idle, max(args.roles, 2), args.flooders)
    rows: list[tuple[str, list[Link], int]] = []
    label_of: dict = {}
    inside: dict[str, list[float]] = {}
    number = 0
    setups = [args.only] if args.only else ["choragos", "tmux"]
    for r in range(args.rounds):
        for setup in setups if r % 2 == 0 else setups[::-1]:
            number = run_round(setup, crew, args.probes, number, args.hops, rows, label_of,
                               inside)
    print(f"load {os.getloadavg()[0]:.1f}, {crew.roles} panes, "
          f"{'idle' if args.idle else f'{args.rate:g} MB/s'} neighbours")
    for setup in setups:
        report(rows, label_of, setup)
    if inside:
        print("\nthe session's stamps, µs after their thread's switch-in (medians):")
        for key, got in sorted(inside.items(), key=lambda kv: (kv[0].split(":")[0],
                                                                statistics.median(kv[1]))):
            print(f"  {key:<44} {statistics.median(got):>6.0f}  ({len(got)})")


if __name__ == "__main__":
    main()
