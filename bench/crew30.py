"""A crew of 30: one session, thirty roles, attached, next to tmux with the
same thirty programs in one run.

The crew: the start role is the echo agent the keystrokes are typed to;
``--flooders`` roles print coloured log lines at ``--rate`` MB/s each while
the bench lets them (a file they watch); ``--workers`` roles do each task
they are given and run ``choragos work-done`` (the fixture agent's whole
loop); the rest are idle fixture agents.  ``choragos attach`` (or ``tmux
attach``) runs in a PTY of this script.  In order:

* idle CPU: every agent up and briefed, nothing printing, the client
  attached: the server's CPU over ``--idle-window`` seconds, as CPU s/min.
* keystroke latency under load: the flooders on, ``--probes`` markers typed
  to the echo agent through the client, timed until they are in the
  client's output (``attach_latency.py``'s probe); the server's CPU while
  they ran, as % of a core.
* memory: the server's resident memory once the floods have filled the
  scrollback, divided by the roles (what one more role costs the server, at
  most: the interpreter and the deck are shared by all).
* delegate → delivered (choragos only): ``--history`` tasks are first piled
  on the board (delegated to a paused role and closed at once, as
  ``board_growth.py`` does) and their checkpoints are waited for (they are
  taken one after another, after the acks: a delegation behind them waits
  for them; the wait is printed), then ``--samples`` tasks go one at a time, round
  robin, to the workers: from just before the ``delegate`` request to the
  ``delivered`` event's stamp (the task typed in and taken by the agent),
  checkpoint included, and the Enter's wait for the text's echo and a
  quiet pane (an agent's TUI takes text and Enter in one read as a paste).
  The start role is paused meanwhile, so the workers' reports queue for it.

The machine's load average is printed with the figures: on a shared
machine compare the ratios, not the times.  Not part of the test suite.

    .venv/bin/python bench/crew30.py [--roles 30] [--flooders 3] [--workers 6]
        [--rate 1] [--probes 30] [--idle-window 30] [--history 10000] [--samples 100]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.attach_latency import AGENT, ECHO_PROMPT, Screen, _attached, environment, probe  # noqa: E402
from bench.common import (  # noqa: E402
    QUIET_DECK,
    crew_repo,
    emit,
    machine,
    need_tmux,
    process_cpu,
    process_rss_mb,
    scratch,
    served,
    tmux_tiled,
)
from choragos.control import wire  # noqa: E402
from choragos.session import hopstamps  # noqa: E402

attached = contextlib.contextmanager(_attached)
SLOW = 1.0  # a delivery slower than this is explained on stderr

# attach_latency's flooder, printing only while the file named by argv[2]
# exists; otherwise an agent like the fixture's (a prompt, its keys echoed),
# so it is briefed and idle like the rest of the crew.
FLOODER = r"""
import itertools, os, sys, termios, threading, time
rate, gate = float(sys.argv[1]) * 1e6, sys.argv[2]
colours = itertools.cycle([31, 32, 33, 34, 35, 36])
line_no = sent = 0
started = time.monotonic()
""" + ECHO_PROMPT + r"""while True:
    if not os.path.exists(gate):
        time.sleep(0.2)
        started, sent = time.monotonic(), 0
        continue
    batch = []
    for _ in range(50):
        line_no += 1
        batch.append(f"\x1b[{next(colours)}m[{line_no:08d}]\x1b[0m compiling module_{line_no % 997}"
                     f".py ... ok {'.' * (line_no % 60)}\r\n")
    data = "".join(batch).encode()
    os.write(1, data)
    sent += len(data)
    ahead = sent / rate - (time.monotonic() - started)
    if ahead > 0:
        time.sleep(ahead)
"""


class Crew:
    def __init__(self, args: argparse.Namespace, root: Path) -> None:
        self.roles, self.rate = args.roles, args.rate
        self.flooders, self.workers = args.flooders, args.workers
        self.gate = root / "flood-on"
        self.agent_log = root / "agents.jsonl"  # the fixture agents' record
        self.flood = root / "flood.py"
        self.flood.write_text(FLOODER)

    def members(self) -> list[tuple[str, list[str]]]:
        """(name, argv) of every role, the echo agent first."""
        agent = [sys.executable, str(AGENT)]
        out = [("echo", agent)]
        out += [(f"flood{i}", [sys.executable, str(self.flood), str(self.rate), str(self.gate)])
                for i in range(self.flooders)]
        out += [(f"work{i}", [*agent, "--worker"]) for i in range(self.workers)]
        out.append(("backlog", agent))
        out += [(f"idle{i}", agent) for i in range(self.roles - len(out))]
        return out[:self.roles]

    def flooding(self, on: bool) -> None:
        if on:
            self.gate.touch()
        else:
            self.gate.unlink(missing_ok=True)


# -- the measurements, the same for both -----------------------------------------------

def idle_cpu(pid: int, window: float) -> float:
    """The server's CPU seconds per minute over ``window`` seconds of nothing."""
    before = process_cpu(pid)
    time.sleep(window)
    return (process_cpu(pid) - before) * 60 / window


def under_load(screen: Screen, crew: Crew, probes: int) -> dict:
    crew.flooding(True)
    time.sleep(1.5)  # the floods get going
    screen.probing()
    pid = screen.server_pid
    cpu, wall = process_cpu(pid), time.monotonic()
    samples = [seen - typed for n in range(1, probes + 1)
               if (span := probe(screen, n)) is not None for typed, seen in [span]]
    load_pct = 100 * (process_cpu(pid) - cpu) / (time.monotonic() - wall)
    crew.flooding(False)
    if not samples:
        raise SystemExit("no probe came back")
    return {"keystroke_ms": round(statistics.median(samples) * 1000, 2),
            "keystroke_p90_ms": round(_pct(samples, 0.9) * 1000, 2),
            "missed": screen.missed, "load_cpu_pct": round(load_pct, 1)}


def measure(screen: Screen, crew: Crew, args: argparse.Namespace) -> dict:
    pid = screen.server_pid
    found = {"idle_cpu_s_per_min": round(idle_cpu(pid, args.idle_window), 3)}
    found.update(under_load(screen, crew, args.probes))
    time.sleep(1.0)  # the last flood output taken
    rss = process_rss_mb(pid)
    found.update(rss_mb=round(rss, 1), rss_per_role_mb=round(rss / crew.roles, 2))
    return found


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


# -- choragos --------------------------------------------------------------------------

def ask(sock: Path, payload: dict) -> dict:
    ack = wire.request(sock, payload, 60)
    if ack["status"] != "ok":
        raise SystemExit(f"{payload['cmd']} refused: {ack.get('error')}")
    return ack


def wait_all_ready(sock: Path, timeout: float) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        roles = ask(sock, {"cmd": "status"})["roles"]
        if all(r["ready"] for r in roles):
            return
        time.sleep(0.5)
    raise SystemExit(f"not every role was up and briefed in time: {roles}")


@contextlib.contextmanager
def choragos_crew(root: Path, crew: Crew, hops: bool = False
                  ) -> Iterator[tuple[Screen, Path, Path]]:
    work = crew_repo(root / "w", crew.members(), "echo", QUIET_DECK)
    env = {**environment(root), "AGENT_LOG": str(crew.agent_log)}
    if hops:
        env["CHORAGOS_HOPSTAMPS"] = str(root / "hops.txt")
    sock = root / "s.sock"
    with served(work, env, timeout=180) as pid:
        wait_all_ready(sock, 240)
        with attached([sys.executable, "-m", "choragos", "attach"], env, work,
                      lambda text: "you said: You are the echo role" in text, 60, pid) as screen:
            yield screen, sock, work


def build_history(sock: Path, work: Path, count: int, threads: int = 4) -> tuple[float, float]:
    """``count`` tasks delegated to the paused backlog role and closed at once,
    several clients at a time, as a crew's agents would; then the wait for
    their checkpoints, taken one after another behind the acks.  The seconds
    each took."""
    events = Tail(work / ".choragos" / "logs" / "events.jsonl")
    started = time.perf_counter()
    made: list[int] = []

    def pile(n: int) -> None:
        for _ in range(n):
            task = ask(sock, {"cmd": "delegate", "to": ["backlog"], "task": "history"})
            made.append(int(task["tasks"][0]["id"][1:]))
            ask(sock, {"cmd": "work-done", "id": task["tasks"][0]["id"], "task": "closed",
                       "done": True})

    share = [count // threads + (i < count % threads) for i in range(threads)]
    workers = [threading.Thread(target=pile, args=(n,)) for n in share]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    built = time.perf_counter() - started
    if made:
        last = f"T{max(made)}"
        events.wait(lambda e: e["event"].startswith("checkpoint") and e.get("task") == last,
                    max(600.0, count * 0.2))
    return built, time.perf_counter() - started - built


class Tail:
    """A JSON-lines file (the session's event log, the agents' log), read as it
    grows and followed across a rotation (the event log rotates at 5 MB)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.file = None
        self.rest = b""
        self.seen: list[dict] = []
        if path.exists():
            self._open()
            self.file.seek(0, os.SEEK_END)

    def wait(self, match, timeout: float) -> dict:
        end = time.monotonic() + timeout
        checked = 0
        while True:
            for event in self.seen[checked:]:
                if match(event):
                    return event
            checked = len(self.seen)
            self._read()
            if time.monotonic() > end:
                raise SystemExit("an event the bench waited for never came")
            time.sleep(0.005)

    def _open(self) -> None:
        self.file = self.path.open("rb")
        self.rest = b""

    def _read(self) -> None:
        if self.file is None:
            if not self.path.exists():
                return
            self._open()
        self._take(self.file.read())
        try:
            rotated = os.stat(self.path).st_ino != os.fstat(self.file.fileno()).st_ino
        except FileNotFoundError:
            return
        if rotated:  # the old file is read to its end; the new one from its start
            self._take(self.file.read())
            self.file.close()
            self._open()

    def _take(self, data: bytes) -> None:
        data = self.rest + data
        cut = data.rfind(b"\n") + 1
        self.rest = data[cut:]
        self.seen += [json.loads(line) for line in data[:cut].splitlines()]


def deliveries(sock: Path, work: Path, crew: Crew, samples: int,
               spans: list[tuple[str, int]] | None = None,
               snapped: list[float] | None = None) -> list[float]:
    """Seconds from the delegate request to the ``delivered`` stamp, per task;
    with ``spans``, each request's (role, perf_counter_ns) appended to it,
    with ``snapped`` the seconds each task's checkpoint took (its event says)."""
    events = Tail(work / ".choragos" / "logs" / "events.jsonl")
    agents = Tail(crew.agent_log)
    last: dict[str, str] = {}
    out = []
    for n in range(samples):
        role = f"work{n % crew.workers}"
        if role in last:
            # Its previous task is over, and its agent back at its prompt (the
            # fixture reads no keys while its work-done runs, where a real
            # agent would show it is busy): no waiting in the figure.
            previous = last[role]
            agents.wait(lambda e, t=previous: e["kind"] == "work-done"
                        and e["text"].startswith(f"{t} "), 60)
        sent = time.time()
        if spans is not None:
            spans.append((role, time.perf_counter_ns()))
        task = ask(sock, {"cmd": "delegate", "to": [role], "task": f"job {n}"})["tasks"][0]["id"]
        done = events.wait(lambda e, t=task: e["event"] == "delivered" and e.get("task") == t,
                           60)
        out.append(done["t"] - sent)
        if snapped is not None:
            snapped += [e["seconds"] for e in events.seen if e["event"] == "checkpoint"
                        and e.get("task") == task and "seconds" in e]
        last[role] = task
        if out[-1] > SLOW:  # say what held it up
            why = [e for e in events.seen if e.get("role") == role and e["t"] >= sent - 0.001]
            print(f"slow delivery of {task} to {role}: {out[-1]:.2f} s: "
                  + "; ".join(f"{e['event']} {e.get('detail') or e.get('state') or ''}"
                              for e in why), file=sys.stderr)
    return out


# A delivery's hops (``choragos/session/hopstamps.py``): (name, the stamp,
# whose: the request's verb or the worker, the hop it follows: None for the
# request's start).  The core may answer before or after it queues the line.
DELIVERY_HOPS = (
    ("request read", "req-in", "delegate", None),
    ("core answered", "core-answered", "delegate", "request read"),
    ("injection queued", "inject-queued", "role", "request read"),
    ("acknowledged", "req-acked", "delegate", "request read"),
    ("role actor has it", "inject-in", "role", "injection queued"),
    ("text written", "typed", "role", "role actor has it"),
    ("echo read", "out-read", "role", "text written"),
    ("echo seen", "echo-shown", "role", "text written"),
    ("Enter written", "enter", "role", "echo seen"),
    ("redraw read", "out-read", "role", "Enter written"),
    ("taken", "taken", "role", "Enter written"),
    ("delivered", "delivered", "role", "taken"),
)


def delivery_hops(stamps: Path, spans: list[tuple[str, int]]) -> list[dict[str, float]]:
    """Per request, the ms from its start to each hop's first stamp after the
    hop it follows (a request missing a hop has none of the later ones)."""
    marks: dict[tuple[str, str], list[int]] = {}
    for line in stamps.read_text().splitlines():
        ns, _thread, _cpu, hop, who = hopstamps.parse(line)
        marks.setdefault((hop, who), []).append(ns)
    found: list[dict[str, float]] = []
    ends = [ns for _role, ns in spans[1:]] + [2**63]
    for (role, sent), end in zip(spans, ends, strict=True):
        at: dict[str | None, int] = {None: sent}
        for name, hop, whose, after in DELIVERY_HOPS:
            start = at.get(after)
            stamps_of = marks.get((hop, role if whose == "role" else whose), [])
            t = None if start is None else next((t for t in stamps_of if start <= t < end), None)
            if t is not None:
                at[name] = t
        found.append({name: round((t - sent) / 1e6, 1) for name, t in at.items() if name})
    return found


def hop_figures(per_request: list[dict[str, float]], took: list[float]) -> dict:
    """Each hop's p50 / p99 over the requests, and the three slowest requests whole."""
    figures: dict = {}
    for name, *_ in DELIVERY_HOPS:
        values = [hops[name] for hops in per_request if name in hops]
        if values:
            figures[name] = {"p50": round(statistics.median(values), 1),
                             "p99": round(_pct(values, 0.99), 1)}
    slowest = sorted(range(len(took)), key=took.__getitem__)[-3:]
    return {"hops_ms": figures, "slowest_ms": [per_request[i] for i in reversed(slowest)]}


def run_choragos(args: argparse.Namespace) -> dict:
    with scratch("chx-") as root:
        crew = Crew(args, root)
        with choragos_crew(root, crew, args.hops) as (screen, sock, work):
            found = {} if args.deliveries_only else measure(screen, crew, args)
            for role in ("echo", "backlog"):
                ask(sock, {"cmd": "pause", "role": role})
            found["history"] = args.history
            built, settled = build_history(sock, work, args.history)
            found.update(history_s=round(built, 1), checkpoints_settled_s=round(settled, 1))
            spans: list[tuple[str, int]] = []
            snapped: list[float] = []
            took = deliveries(sock, work, crew, args.samples, spans, snapped)
            if args.hops:
                found.update(hop_figures(delivery_hops(root / "hops.txt", spans), took))
            if snapped:
                found["checkpoint_ms"] = {"p50": round(statistics.median(snapped) * 1000, 1),
                                          "p99": round(_pct(snapped, 0.99) * 1000, 1)}
            found.update(delivered_p50_ms=round(statistics.median(took) * 1000, 1),
                         delivered_p95_ms=round(_pct(took, 0.95) * 1000, 1),
                         delivered_p99_ms=round(_pct(took, 0.99) * 1000, 1),
                         delivered_max_ms=round(max(took) * 1000, 1))
            found["rss_after_history_mb"] = round(process_rss_mb(screen.server_pid), 1)
            return found


# -- tmux ------------------------------------------------------------------------------

def run_tmux(args: argparse.Namespace, binary: str) -> dict:
    with scratch("chx-") as root:
        crew = Crew(args, root)
        env = environment(root)
        server = [binary, "-L", f"crew30-{os.getpid()}", "-f", "/dev/null"]
        try:
            commands = [" ".join(argv) for _name, argv in crew.members()]
            pid = tmux_tiled(server, env, commands)
            subprocess.run([*server, "set", "-g", "status", "off"], env=env, check=True)
            with attached([*server, "attach"], env, root,
                          lambda text: text.count("agent>") >= 2, 60, pid) as screen:
                time.sleep(2.0)  # every agent drew its prompt
                return measure(screen, crew, args)
        finally:
            subprocess.run([*server, "kill-server"], env=env, capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--roles", type=int, default=30)
    parser.add_argument("--flooders", type=int, default=3)
    parser.add_argument("--workers", type=int, default=6)
    parser.add_argument("--rate", type=float, default=1.0, help="MB/s per flooder")
    parser.add_argument("--probes", type=int, default=30)
    parser.add_argument("--idle-window", type=float, default=30.0)
    parser.add_argument("--history", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--hops", action="store_true",
                        help="split each delivery into the session's hops "
                        "(choragos/session/hopstamps.py; the stamps cost a write each)")
    parser.add_argument("--deliveries-only", action="store_true",
                        help="only the crew's deliveries: no idle CPU, keystrokes, memory "
                        "or tmux")
    args = parser.parse_args()
    if args.roles < args.flooders + args.workers + 2:
        raise SystemExit("--roles must leave room for the echo agent and the backlog role")
    if args.deliveries_only:
        ours = run_choragos(args)
        _print_deliveries(args, ours)
        emit("crew30", {}, deliveries_only=True, choragos=ours)
        return
    binary = need_tmux()
    results = {"choragos": run_choragos(args), "tmux": run_tmux(args, binary)}
    ours, theirs = results["choragos"], results["tmux"]
    print(f"a crew of {args.roles}: {args.flooders} flooding at {args.rate:g} MB/s each, "
          f"{args.workers} workers, load average {machine()['load']}")
    print(f"  {'':10} {'idle CPU s/min':>15} {'keystroke ms':>13} {'p90 ms':>8} "
          f"{'load CPU %':>11} {'RSS MB':>8} {'MB/role':>8}")
    for name, found in results.items():
        print(f"  {name:10} {found['idle_cpu_s_per_min']:15.3f} {found['keystroke_ms']:13.1f} "
              f"{found['keystroke_p90_ms']:8.1f} {found['load_cpu_pct']:11.1f} "
              f"{found['rss_mb']:8.1f} {found['rss_per_role_mb']:8.2f}")
    _print_deliveries(args, ours)
    emit("crew30", {"keystroke choragos/tmux": ours["keystroke_ms"] / theirs["keystroke_ms"],
                    "load CPU choragos/tmux": _ratio(ours["load_cpu_pct"], theirs["load_cpu_pct"]),
                    "memory choragos/tmux": ours["rss_mb"] / theirs["rss_mb"]},
         setup={"roles": args.roles, "flooders": args.flooders, "workers": args.workers,
                "rate_mbps": args.rate, "probes": args.probes, "samples": args.samples},
         **{name: found for name, found in results.items()})


def _print_deliveries(args: argparse.Namespace, ours: dict) -> None:
    print(f"  delegate -> delivered with {ours['history']} tasks of history: "
          f"p50 {ours['delivered_p50_ms']:.1f} ms, p95 {ours['delivered_p95_ms']:.1f} ms, "
          f"p99 {ours['delivered_p99_ms']:.1f} ms, "
          f"max {ours['delivered_max_ms']:.1f} ms ({args.samples} tasks; history built in "
          f"{ours['history_s']:.0f} s, its checkpoints done {ours['checkpoints_settled_s']:.0f} s "
          f"later; server RSS then {ours['rss_after_history_mb']:.1f} MB; "
          f"load average {machine()['load']})")
    if "checkpoint_ms" in ours:
        print(f"    (each task's checkpoint took p50 {ours['checkpoint_ms']['p50']:.1f} ms, "
              f"p99 {ours['checkpoint_ms']['p99']:.1f} ms)")
    for name, at in ours.get("hops_ms", {}).items():
        print(f"    {name:20} at p50 {at['p50']:7.1f} ms, p99 {at['p99']:7.1f} ms")
    for hops in ours.get("slowest_ms", []):
        print("    a slow one: " + ", ".join(f"{name} {ms:g}" for name, ms in hops.items()))


def _ratio(ours: float, theirs: float) -> float | None:
    return ours / theirs if theirs else None


if __name__ == "__main__":
    main()
