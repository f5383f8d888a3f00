"""Responsiveness: keystroke-to-screen latency through ``choragos attach``
while another pane floods output, next to the same measurement in tmux.

Both setups run the same two programs side by side: an echo agent (the test
fixture: it echoes every key it reads) and a flooder printing coloured log
lines as fast as its terminal takes them (``--rate``: at that many MB/s;
``--idle``: printing one screen, then nothing).  ``--roles N --flooders K``
makes it a bigger crew: N panes, K of them flooding, the others idle
agents.  The client -- ``choragos attach``
or ``tmux attach`` -- runs in a PTY owned by this script, whose output is
fed to a terminal emulator; a probe types four unique characters and times
until they are in the client's output.  The output is emulated only until
the setup is ready; the probes search it as bytes (the emulator is Python,
and with tmux relaying a flood at full rate it fell behind, so the probes
queued behind the bench's own parsing: medians of 4-78 ms).  Every few
probes the agent's line is erased, untimed.  Beside each median it prints
the server's CPU while the probes ran (the choragos session's, tmux's):
a flood's cost to the machine the echo shares; and the server's wake-ups
per probe (its threads' voluntary context switches while probing, over the
probes: with a neighbour idle, what one keystroke costs in wake-ups; with
floods, theirs meanwhile too).  Rounds alternate
between the two setups so machine noise hits both alike.  Absolute numbers
vary between machines and runs; the ratio is the result.  Not part of the
test suite.

    .venv/bin/python bench/attach_latency.py [--probes N] [--rounds R] [--rate MBPS]
                                             [--idle] [--roles N] [--flooders K]
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ptyprocess import PtyProcess  # noqa: E402

from bench.common import (  # noqa: E402
    NO_CHECKPOINTS,
    QUIET_DECK,
    crew_repo,
    emit,
    process_cpu,
    process_wakeups,
    scratch,
    served,
    thread_clocks,
)
from choragos.session import hopstamps  # noqa: E402
from choragos.terminal.emulator import Terminal  # noqa: E402

AGENT = REPO / "tests" / "fixtures" / "agent.py"
COLS, ROWS = 160, 50
TAIL = 8  # bytes kept from one read for the next, longer than a marker
ERASE_EVERY = 8  # probes typed before the agent's line is erased
# The server's threads' (CPU ns, run-queue ns) before and after one probe.
Clocks = tuple[dict[int, tuple[int, int]], dict[int, tuple[int, int]]]

# A prompt that echoes what is typed (no echo from the tty, so the screen
# shows only what the agent writes): the flooders of both benches start so.
ECHO_PROMPT = r"""
mode = termios.tcgetattr(0)
mode[3] &= ~(termios.ECHO | termios.ICANON)
termios.tcsetattr(0, termios.TCSANOW, mode)
os.write(1, b"agent> ")

def echo():
    while data := os.read(0, 4096):
        os.write(1, data.replace(b"\n", b"\r\nagent> "))  # the tty made Enter a newline

threading.Thread(target=echo, daemon=True).start()
"""

# An agent's neighbour: it reads its input and echoes it at a prompt, as an
# agent takes its brief (one that never read it would have the session
# watching the brief's Enter every 50 ms through the probes, which no crew
# of real agents does), and prints coloured log lines.
FLOODER = r"""
import itertools, os, sys, termios, threading, time
rate = float(sys.argv[1]) * 1e6  # bytes per second; 0 = as fast as the terminal takes
idle = len(sys.argv) > 2 and sys.argv[2] == "idle"
colours = itertools.cycle([31, 32, 33, 34, 35, 36])
line_no = 0
""" + ECHO_PROMPT + r"""started = time.monotonic()
sent = 0
while True:
    batch = []
    for _ in range(50):
        line_no += 1
        batch.append(f"\x1b[{next(colours)}m[{line_no:08d}]\x1b[0m compiling module_{line_no % 997}"
                     f".py ... ok {'.' * (line_no % 60)}\r\n")
    data = "".join(batch).encode()
    os.write(1, data)
    if idle:
        while True:
            time.sleep(3600)
    sent += len(data)
    if rate:
        ahead = sent / rate - (time.monotonic() - started)
        if ahead > 0:
            time.sleep(ahead)
"""


class Screen:
    """A client in a PTY of ours.  Until :meth:`probing` its output goes to an
    emulator (to see the setup is ready); from then on it is only searched,
    as bytes, for the probes' markers."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        self.terminal = Terminal(COLS, ROWS, scrollback=0)
        self.proc = PtyProcess.spawn(argv, env=env, cwd=str(cwd), dimensions=(ROWS, COLS))
        self.terminal.reply = self.proc.write
        self.changed = threading.Condition()
        self.alive = True
        self._raw = False  # probing: the output is searched, not emulated
        self._tail = b""  # the last bytes read, for a marker cut between two reads
        self._needle: bytes | None = None
        self._seen_at: float | None = None
        self.missed = 0  # probes whose marker never came as typed
        self.server_pid: int | None = None  # the session's or tmux's server
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        while self.alive:
            try:
                data = self.proc.read(1 << 16)
            except (EOFError, OSError):
                break
            if not self._raw:
                self.terminal.feed(data)
                with self.changed:
                    self.changed.notify_all()
                continue
            with self.changed:
                window, self._tail = self._tail + data, data[-TAIL:]
                if self._needle is not None and self._needle in window:
                    self._seen_at = time.perf_counter()
                    self._needle = None
                    self.changed.notify_all()
        self.alive = False

    def probing(self) -> None:
        """From now on only look for markers: the emulator is Python, and with
        tmux relaying a flood at full rate it fell behind, so the probes
        queued behind the bench's own parsing."""
        self._raw = True

    def arm(self, needle: bytes) -> None:
        with self.changed:
            self._needle, self._seen_at = needle, None

    def wait_seen(self, timeout: float) -> float | None:
        """When the armed marker came (perf_counter); None if it did not."""
        end = time.monotonic() + timeout
        with self.changed:
            while self._seen_at is None and self.alive and time.monotonic() < end:
                self.changed.wait(min(end - time.monotonic(), 0.05))
            seen, self._needle = self._seen_at, None
        return seen

    def text(self) -> str:
        return "\n".join(self.terminal.display())

    def wait_for(self, predicate, timeout: float) -> float:
        """Seconds until ``predicate(screen text)`` holds (before probing)."""
        started = time.perf_counter()
        end = time.monotonic() + timeout
        with self.changed:
            while not predicate(self.text()):
                remaining = end - time.monotonic()
                if remaining <= 0 or not self.alive:
                    raise TimeoutError(f"screen did not change as expected:\n{self.text()}")
                self.changed.wait(min(remaining, 0.05))
        return time.perf_counter() - started

    def close(self) -> None:
        self.alive = False
        if self.proc.isalive():
            self.proc.terminate(force=True)


def probe_round(screen: Screen, probes: int, number: int, latencies: list[float],
                busy: list[float], spans: list[tuple[float, float]] | None = None,
                clocks: list[Clocks] | None = None) -> int:
    """``probes`` keystrokes into ``screen``: their latencies go to ``latencies``
    (and their (typed, seen) clock readings to ``spans``, and the server's
    threads' clocks before and after each to ``clocks``), the server's CPU
    seconds, the wall seconds, the server's wake-ups and the probes typed
    are added to ``busy``; the last marker number used is returned."""
    screen.probing()
    woke = process_wakeups(screen.server_pid)
    cpu, wall = process_cpu(screen.server_pid), time.monotonic()
    for _ in range(probes):
        number += 1
        before = thread_clocks(screen.server_pid) if clocks is not None else {}
        span = probe(screen, number)
        if span is not None:
            latencies.append(span[1] - span[0])
            if spans is not None:
                spans.append(span)
            if clocks is not None:
                clocks.append((before, thread_clocks(screen.server_pid)))
    busy[0] += process_cpu(screen.server_pid) - cpu
    busy[1] += time.monotonic() - wall
    busy[2] += process_wakeups(screen.server_pid) - woke
    busy[3] += probes
    return number


def probe(screen: Screen, number: int) -> tuple[float, float] | None:
    """When a marker was typed and when it arrived in the client's output
    (perf_counter); None when it never came as typed (cut by escapes),
    counted apart."""
    marker = f"Q{number:03d}"
    screen.arm(marker.encode())
    started = time.perf_counter()
    screen.proc.write(marker.encode())
    seen = screen.wait_seen(5.0)
    if number % ERASE_EVERY == 0:
        # Keep the agent's line short of the pane's edge, where a marker
        # could be cut by the wrap; the erase is not timed.
        screen.proc.write(b"\x7f" * (4 * ERASE_EVERY))
        time.sleep(0.2)
    time.sleep(0.02)
    if seen is None:
        screen.missed += 1
        return None
    return started, seen


# The session's hops (``choragos/session/hopstamps.py``) in the order a key takes them.
HOPS = ("key-read", "key-written", "out-read", "frame-in", "frame-written")
# Stamps of an echo's detours: the deck's loop held the drawing lock (the
# loop draws the echo), a frame waited in the client's outbox, the pump sent it.
DETOURS = ("lane-missed", "frame-queued", "pump-sent")


# A neighbour's feed or lull that took more of its thread's CPU than this drew
# a held batch (a flood's lines parsed, scrolled, written to the transcript),
# holding the interpreter meanwhile; a piece only held takes tens of µs.
BATCH_CPU = 200e-6


class Mark(NamedTuple):
    t: float  # seconds, on the probes' clock
    thread: int
    cpu: float  # the thread's CPU seconds so far
    hop: str


def _marks(stamps: Path) -> list[Mark]:
    """The session's stamps, the echo agent's own where a hop names a role
    (the neighbours' reads and frames are stamped too)."""
    marks = [Mark(ns / 1e9, thread, cpu / 1e9, hop)
             for ns, thread, cpu, hop, role in map(hopstamps.parse, stamps.read_text().splitlines())
             if role in ("", "echo")]
    marks.sort()
    return marks


def detours(stamps: Path, spans: list[tuple[float, float]]) -> dict[str, int]:
    """How many probes took each detour (a stamp of it inside the probe's span)."""
    marks = _marks(stamps)
    return {name: sum(any(m.hop == name and typed <= m.t <= seen for m in marks)
                      for typed, seen in spans) for name in DETOURS}


def _probe_points(marks: list[Mark], typed: float, seen: float) -> list[Mark] | None:
    """The probe's hops in turn (each the first stamp of its hop after the
    previous one's inside the span), None when one is missing."""
    points, at = [], typed
    for hop in HOPS:
        found = next((m for m in marks if m.hop == hop and at <= m.t <= seen), None)
        if found is None:
            return None
        points.append(found)
        at = found.t
    return points


def hop_steps(stamps: Path, spans: list[tuple[float, float]],
              cpu: dict[str, list[float]] | None = None) -> dict[str, list[float]]:
    """Each probe split into the steps between the session's hops (µs); a
    probe missing a hop is left out.  With ``cpu``, a step taken on one
    thread also gets that thread's CPU µs there (the rest of it waited for
    a core or for the interpreter's lock)."""
    steps: dict[str, list[float]] = {}
    for a, b in _hop_pairs(stamps, spans):
        name = f"{a.hop} -> {b.hop}"
        steps.setdefault(name, []).append((b.t - a.t) * 1e6)
        if cpu is not None and a.thread and a.thread == b.thread:
            cpu.setdefault(name, []).append((b.cpu - a.cpu) * 1e6)
    return steps


def _hop_pairs(stamps: Path, spans: list[tuple[float, float]]) -> Iterator[tuple[Mark, Mark]]:
    """Each probe's consecutive hops, from the key typed to its echo seen; a
    probe missing a hop is left out."""
    marks = _marks(stamps)
    for typed, seen in spans:
        points = _probe_points(marks, typed, seen)
        if points is not None:
            yield from itertools.pairwise(
                [Mark(typed, 0, 0.0, "typed"), *points, Mark(seen, 0, 0.0, "seen")])


def neighbour_feeds(stamps: Path) -> list[tuple[float, float, float]]:
    """When the neighbours fed their terminals: (start, end, CPU seconds) of
    each feed or lull of another role (a piece held, or a batch drawn)."""
    began: dict[str, tuple[float, float]] = {}
    feeds = []
    for line in stamps.read_text().splitlines():
        ns, _thread, cpu, hop, role = hopstamps.parse(line)
        if role in ("", "echo"):
            continue
        if hop in ("out-read", "lull"):
            began[role] = (ns / 1e9, cpu / 1e9)
        elif hop in ("fed", "lull-drawn") and role in began:
            t, c = began.pop(role)
            feeds.append((t, ns / 1e9, cpu / 1e9 - c))
    return feeds


def neighbour_batches(stamps: Path) -> list[tuple[float, float, float]]:
    """When the neighbours drew held batches: the feeds and lulls of
    :func:`neighbour_feeds` that took ``BATCH_CPU`` or more of their thread."""
    return [feed for feed in neighbour_feeds(stamps) if feed[2] >= BATCH_CPU]


# The two steps that end in a wake-up of the key's threads: the pump's for
# the key, the echo's reader's for the agent's answer.
WAKE_STEPS = ("typed -> key-read", "key-written -> out-read")
# A neighbour's feed still running this long before such a step ended held
# the interpreter the woken thread asked for.
WAKE_WINDOW = 40e-6


def wake_steps(stamps: Path, spans: list[tuple[float, float]]) -> dict[str, list[float]]:
    """The two wake-up steps of each probe (µs), each under what a neighbour
    was doing ``WAKE_WINDOW`` before it ended: ``"<step>, batch"`` (drawing a
    held batch), ``"<step>, piece"`` (between reading a piece and having fed
    it, as a flood's reader is twice per 4 KB written: holding the
    interpreter, or waiting in the keys-first hold, which falls between the
    two stamps) or ``"<step>, free"``.  Tells what the floods' wake-ups cost
    a key from what their batches do."""
    feeds = neighbour_feeds(stamps)
    split: dict[str, list[float]] = {}
    for a, b in _hop_pairs(stamps, spans):
        step = f"{a.hop} -> {b.hop}"
        if step not in WAKE_STEPS:
            continue
        at = b.t - WAKE_WINDOW
        busy = [cpu for start, end, cpu in feeds if start <= at <= end]
        state = "free" if not busy else "batch" if max(busy) >= BATCH_CPU else "piece"
        split.setdefault(f"{step}, {state}", []).append((b.t - a.t) * 1e6)
    return split


def key_threads(stamps: Path, clocks: list[Clocks]) -> dict[str, list[tuple[float, float]]]:
    """Per probe, the key's two threads' (CPU µs, µs waiting on a run queue
    for a core): the pump (the thread that stamped ``key-read``) and the
    echo's reader (``out-read`` of the echo role; a reader's turn may move
    to a fresh thread, so each one seen counts)."""
    pump, reader = set(), set()
    for line in stamps.read_text().splitlines():
        _ns, thread, _cpu, hop, role = hopstamps.parse(line)
        if hop == "key-read":
            pump.add(thread)
        elif hop == "out-read" and role == "echo":
            reader.add(thread)
    out: dict[str, list[tuple[float, float]]] = {"pump": [], "echo reader": []}
    for before, after in clocks:
        for name, threads in (("pump", pump), ("echo reader", reader)):
            spent = [(after[t][0] - before[t][0], after[t][1] - before[t][1])
                     for t in threads if t in before and t in after]
            out[name].append((sum(c for c, _ in spent) / 1e3, sum(q for _, q in spent) / 1e3))
    return out


def split_by_batches(spans: list[tuple[float, float]],
                     batches: list[tuple[float, float, float]]) -> tuple[list[float], list[float]]:
    """The probes' latencies (ms): those during which a neighbour drew a
    batch, and the rest."""
    during: list[float] = []
    clear: list[float] = []
    for typed, seen in spans:
        hit = any(start < seen and end > typed for start, end, _cpu in batches)
        (during if hit else clear).append((seen - typed) * 1000)
    return during, clear


# -- the two setups ---------------------------------------------------------------------

def environment(root: Path) -> dict[str, str]:
    runtime = root / "run"
    runtime.mkdir(mode=0o700, exist_ok=True)
    return {"PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
            "HOME": os.environ.get("HOME", "/tmp"), "LANG": "C.UTF-8",
            "TERM": "xterm-256color", "PYTHONPATH": str(REPO),
            "CHORAGOS_SOCK": str(root / "s.sock"), "XDG_RUNTIME_DIR": str(runtime)}


class Crew:
    """Who shares the screen with the echo agent."""

    def __init__(self, rate: float, idle: bool, roles: int, flooders: int) -> None:
        self.rate, self.idle, self.roles, self.flooders = rate, idle, roles, flooders

    def others(self, flood: Path) -> list[tuple[str, list[str]]]:
        """(name, argv) of every pane but the echo agent's."""
        mode = ["idle"] if self.idle else []
        out = []
        for i in range(self.roles - 1):
            if i < self.flooders:
                out.append((f"flood{i}", [sys.executable, str(flood), str(self.rate), *mode]))
            else:
                out.append((f"idle{i}", [sys.executable, str(AGENT)]))
        return out


@contextlib.contextmanager
def choragos_screen(root: Path, crew: Crew, hops: bool = False) -> Iterator[Screen]:
    flood = root / "flood.py"
    flood.write_text(FLOODER)
    work = crew_repo(root / "w", [("echo", [sys.executable, str(AGENT)]), *crew.others(flood)],
                     "echo", QUIET_DECK + NO_CHECKPOINTS)
    env = environment(root)
    if hops:
        env["CHORAGOS_HOPSTAMPS"] = str(root / "hops.txt")
    with served(work, env) as pid:
        # Probe only once the session has briefed the echo agent (typed into its line).
        yield from _attached([sys.executable, "-m", "choragos", "attach"], env, work,
                             lambda text: "you said: You are the echo role" in text
                             and ("compiling" in text or not crew.flooders), 60, pid)


def _attached(argv: list[str], env: dict[str, str], cwd: Path, ready: Callable[[str], bool],
              timeout: float, server_pid: int) -> Iterator[Screen]:
    """The client ``argv`` on a screen of ours, once ``ready`` holds; closed after."""
    screen = Screen(argv, env, cwd)
    screen.server_pid = server_pid
    try:
        screen.wait_for(ready, timeout)
        yield screen
    finally:
        screen.close()


@contextlib.contextmanager
def tmux_screen(root: Path, crew: Crew, tmux: str) -> Iterator[Screen]:
    env = environment(root)
    flood = root / "flood.py"
    flood.write_text(FLOODER)
    server = [tmux, "-L", f"bench-{os.getpid()}", "-f", "/dev/null"]
    try:
        subprocess.run([*server, "new-session", "-d", "-x", str(COLS), "-y", str(ROWS),
                        f"{sys.executable} {AGENT}"], env=env, check=True)
        subprocess.run([*server, "set", "-g", "status", "off"], env=env, check=True)
        for _name, argv in crew.others(flood):
            subprocess.run([*server, "split-window", "-d", " ".join(argv)], env=env, check=True)
            subprocess.run([*server, "select-layout", "tiled"], env=env, check=True)
        pid = int(subprocess.run([*server, "display-message", "-p", "#{pid}"], env=env,
                                 check=True, capture_output=True, text=True).stdout.strip())
        yield from _attached([*server, "attach"], env, root,
                             lambda text: "agent>" in text
                             and ("compiling" in text or not crew.flooders), 30, pid)
    finally:
        subprocess.run([*server, "kill-server"], env=env, capture_output=True)


def summary(name: str, samples: list[float]) -> str:
    ms = sorted(s * 1000 for s in samples)
    p90 = ms[int(len(ms) * 0.9) - 1] if len(ms) >= 10 else ms[-1]
    return (f"{name:<10} median {statistics.median(ms):7.1f} ms   p90 {p90:7.1f} ms   "
            f"max {ms[-1]:7.1f} ms   ({len(ms)} probes)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--probes", type=int, default=15, help="probes per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--settle", type=float, default=1.0,
                        help="seconds from the setup to the first probe")
    parser.add_argument("--rate", type=float, default=0.0,
                        help="flood rate in MB/s (0: as fast as the terminal takes)")
    parser.add_argument("--idle", action="store_true",
                        help="the neighbours print one screen, then nothing")
    parser.add_argument("--roles", type=int, default=2, help="panes, the echo agent's included")
    parser.add_argument("--flooders", type=int, default=1)
    parser.add_argument("--hops", action="store_true",
                        help="split choragos's latency into the session's hops "
                        "(choragos/session/hopstamps.py; the stamps cost a write each), "
                        "and give the key's threads' CPU and waits for a core per probe")
    args = parser.parse_args()
    crew = Crew(args.rate, args.idle, max(args.roles, 2), args.flooders)
    tmux = shutil.which("tmux")
    if tmux is None:
        raise SystemExit("tmux is needed for the reference measurement")
    results: dict[str, list[float]] = {"choragos": [], "tmux": []}
    # While probing: server CPU s, wall s, server wake-ups, probes typed.
    busy = {"choragos": [0.0, 0.0, 0, 0], "tmux": [0.0, 0.0, 0, 0]}
    number = 0
    missed = {"choragos": 0, "tmux": 0}
    steps: dict[str, list[float]] = {}
    cpu: dict[str, list[float]] = {}  # the steps taken on one thread: its CPU µs
    during: list[float] = []  # probes (ms) while a neighbour drew a batch
    clear: list[float] = []  # the rest
    held: list[tuple[float, float]] = []  # the neighbours' batches: wall, CPU s
    woken: dict[str, list[float]] = {}  # the wake-up steps, by what a neighbour did then
    keyed: dict[str, list[tuple[float, float]]] = {}  # the key's threads: CPU, run queue
    took = dict.fromkeys(DETOURS, 0)
    for _ in range(args.rounds):
        for name in ("choragos", "tmux"):
            with scratch("chb-") as root:
                setup = choragos_screen(root, crew, args.hops) if name == "choragos" else \
                    tmux_screen(root, crew, tmux)
                spans: list[tuple[float, float]] = []
                clocks: list[Clocks] | None = [] if args.hops and name == "choragos" else None
                with setup as screen:
                    time.sleep(args.settle)  # let the flood get going
                    number = probe_round(screen, args.probes, number, results[name],
                                         busy[name], spans, clocks)
                    missed[name] += screen.missed
                if args.hops and name == "choragos":
                    for step, values in hop_steps(root / "hops.txt", spans, cpu).items():
                        steps.setdefault(step, []).extend(values)
                    for name, count in detours(root / "hops.txt", spans).items():
                        took[name] += count
                    batches = neighbour_batches(root / "hops.txt")
                    held += [(end - start, cpu) for start, end, cpu in batches]
                    hit, rest = split_by_batches(spans, batches)
                    during += hit
                    clear += rest
                    for step, values in wake_steps(root / "hops.txt", spans).items():
                        woken.setdefault(step, []).extend(values)
                    for thread, values in key_threads(root / "hops.txt", clocks or []).items():
                        keyed.setdefault(thread, []).extend(values)
    flood = f"{args.rate:g} MB/s" if args.rate else "as fast as the pane takes it"
    if args.idle:
        flood = "idle"
    print(f"keystroke-to-screen latency, {crew.roles} panes, {crew.flooders} neighbour(s) "
          f"flooding ({flood}), {COLS}x{ROWS}, {os.cpu_count()} CPUs")
    server_pct = {name: round(100 * b[0] / b[1], 1) for name, b in busy.items()}
    # Per probe: each probe's own wake-ups, and those of the floods meanwhile.
    woke = {name: round(b[2] / max(b[3], 1), 1) for name, b in busy.items()}
    for name, samples in results.items():
        print(f"{summary(name, samples)}   server CPU {server_pct[name]:.0f}% of a core, "
              f"{woke[name]:g} wake-ups a probe")
    ratio = statistics.median(results["choragos"]) / statistics.median(results["tmux"])
    print(f"ratio (median choragos / median tmux): {ratio:.2f}")
    for step, values in steps.items():
        on_cpu = (f", its thread's CPU {statistics.median(cpu[step]):4.0f} µs"
                  if step in cpu else "")
        print(f"  {step:<28} median {statistics.median(values):6.0f} µs{on_cpu}  "
              f"({len(values)} probes)")
    if args.hops:
        print("  detours (probes): " + ", ".join(f"{k} {v}" for k, v in took.items()))
        if held:
            walls, cpus = (sorted(x * 1e6 for x in v) for v in zip(*held, strict=True))
            print(f"  neighbours' batches: {len(held)}, CPU p50/p90 {cpus[len(cpus) // 2]:.0f}/"
                  f"{cpus[9 * len(cpus) // 10]:.0f} µs, wall p50/p90 {walls[len(walls) // 2]:.0f}/"
                  f"{walls[9 * len(walls) // 10]:.0f} µs")
        for label, values in (("while a neighbour drew a batch", during), ("the rest", clear)):
            if values:
                print(f"  probes {label}: {len(values)}, "
                      f"median {statistics.median(values):.2f} ms")
        for step in sorted(woken):
            print(f"  {step:<34} median {statistics.median(woken[step]):6.0f} µs  "
                  f"({len(woken[step])} probes)")
        for thread, values in keyed.items():
            if values:
                cpus, queued = zip(*values, strict=True)
                print(f"  {thread} a probe: CPU median {statistics.median(cpus):.0f} µs, "
                      f"waiting for a core median {statistics.median(queued):.0f} µs, "
                      f"mean {statistics.mean(queued):.0f} µs")
    emit("attach_latency", {"choragos/tmux": ratio},
         setup={"roles": crew.roles, "flooders": crew.flooders, "rate_mbps": args.rate,
                "idle": args.idle},
         median_ms={name: round(statistics.median(s) * 1000, 2) for name, s in results.items()},
         probes=len(results["tmux"]), missed=missed, server_cpu_pct=server_pct,
         server_wakeups_per_probe=woke,
         **({"hops_us": {k: round(statistics.median(v)) for k, v in steps.items()},
             "hops_cpu_us": {k: round(statistics.median(v)) for k, v in cpu.items()},
             "detours": took,
             "wake_steps_us": {k: round(statistics.median(v)) for k, v in sorted(woken.items())},
             "key_threads_us": {k: {"cpu": round(statistics.median(c for c, _ in v)),
                                    "run_queue": round(statistics.median(q for _, q in v))}
                                for k, v in keyed.items() if v},
             "batch_probes": {"during": len(during), "clear": len(clear),
                              "during_ms": round(statistics.median(during), 3) if during else None,
                              "clear_ms": round(statistics.median(clear), 3) if clear else None}}
            if steps else {}))


if __name__ == "__main__":
    main()
