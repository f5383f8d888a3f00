"""Pane ingestion: how fast a choragos pane takes an agent's output,
against tmux taking the same bytes on the same machine in the same run.

Four streams are generated: a plain log (timestamped lines, some wider than
the pane), a synthesised agent-TUI redraw stream (ink-style erase-and-redraw
frames: cursor up, erase line, 256/true-colour SGR, spinner, box drawing,
synchronised-output markers, a growing transcript above the live area), and
a test-runner log with a colour escape on every line, once with pytest's
words and once with the marks (✓ ○ ✕) other runners print.

Each stream goes through:
  * choragos -- a real PTY running ``cat FILE``, read by the role's own reader
    thread (``choragos.terminal.ptyproc.Reader``) and fed into a 120x40 Terminal;
    once with its fast paths (the block path for log lines, held back and
    drawn a batch at a time as in a role's pane, rows kept as text while a
    TUI redraws them), once without them ("no block path"), and once with
    the fast paths writing the lines that scroll off to a transcript, as a
    role's pane does ("+ its transcript");
  * tmux -- a 120x40 pane of a detached server on its own socket running
    ``cat FILE; tmux wait-for -S done``, timed until the signal;
  * pyte alone (``ByteStream`` + ``Screen``, in memory, on a prefix): the
    starting point this work is measured from.

    .venv/bin/python bench/pane_throughput.py [--plain-mb 20] [--tui-mb 10] [--colour-mb 5]
                                              [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import pyte  # noqa: E402  (needs the path set above)

from bench.common import emit, process_cpu  # noqa: E402
from choragos.actors.roleio import FLOOD_HOLD  # noqa: E402
from choragos.terminal.emulator import Terminal  # noqa: E402
from choragos.terminal.ptyproc import PtyChild, Reader  # noqa: E402
from choragos.terminal.transcript import Transcript  # noqa: E402

COLS, ROWS = 120, 40
WORDS = ("request", "handler", "cache", "miss", "retry", "upstream", "latency", "token",
         "budget", "checkpoint", "worker", "reviewer", "delegate", "session", "build",
         "passed", "failed")


# -- the streams -----------------------------------------------------------------

def plain_log(size: int, rng: random.Random) -> bytes:
    lines = []
    total = n = 0
    while total < size:
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 28)))
        line = f"2025-01-{n % 28 + 1:02d}T12:{n % 60:02d}:{n * 7 % 60:02d} INFO [{n}] {words}\n"
        lines.append(line)
        total += len(line)
        n += 1
    return "".join(lines).encode()


# pytest's outcome words, and the marks jest, mocha and vitest put in their place.
WORD_LEVELS = ("\x1b[32mPASSED\x1b[0m", "\x1b[33mSKIPPED\x1b[0m", "\x1b[1;31mFAILED\x1b[0m")
MARK_LEVELS = ("\x1b[32m✓\x1b[39m", "\x1b[33m○\x1b[39m", "\x1b[31m✕\x1b[39m")


def coloured_log(size: int, rng: random.Random, levels: tuple[str, ...] = WORD_LEVELS) -> bytes:
    """Test-runner style output: a colour escape on every line."""
    lines = []
    total = n = 0
    while total < size:
        name = "_".join(rng.choice(WORDS) for _ in range(rng.randint(2, 9)))
        where = f"tests/test_{rng.choice(WORDS)}.py::test_{name}"
        line = f"{where} {rng.choice(levels)} [{n % 100:3d}%]\n"
        lines.append(line)
        total += len(line)
        n += 1
    return "".join(lines).encode()


def _box(width: int, body: str) -> list[str]:
    inner = width - 2
    return ["\x1b[38;5;244m╭" + "─" * inner + "╮\x1b[39m",
            "\x1b[38;5;244m│\x1b[39m > " + body[:inner - 3].ljust(inner - 3)
            + "\x1b[38;5;244m│\x1b[39m",
            "\x1b[38;5;244m╰" + "─" * inner + "╯\x1b[39m"]


def _live_area(frame: int, rng: random.Random) -> list[str]:
    spinner = "·✢✳✶✻✽"[frame % 6]
    tokens = f"{frame * 37 % 9000 / 1000:.1f}k"
    typed = " ".join(rng.choice(WORDS) for _ in range(frame % 9))
    return [f"\x1b[38;2;215;119;87m{spinner}\x1b[39m \x1b[1mThinking…\x1b[22m "
            f"\x1b[2m({frame % 90}s · ↑ {tokens} tokens · esc to interrupt)\x1b[22m",
            "", *_box(COLS, typed),
            "  \x1b[38;5;135m⏵⏵ accept edits on\x1b[39m \x1b[2m(shift+tab to cycle)\x1b[22m"]


def _transcript_lines(rng: random.Random) -> list[str]:
    head = f"\x1b[38;2;255;255;255m⏺\x1b[39m \x1b[1m{rng.choice(WORDS).title()}\x1b[22m"
    body = []
    for _ in range(rng.randint(1, 6)):
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 30)))
        colour = rng.choice(("\x1b[48;2;20;60;20m+ ", "\x1b[48;2;70;20;20m- ", "  "))
        body.append(f"  ⎿  {colour}{words}\x1b[49m")
    return [head, *body, ""]


def tui_stream(size: int, rng: random.Random) -> bytes:
    """Frames the way ink's log-update draws them: erase the previous frame
    line by line, write the new one, inside synchronised-output markers."""
    out: list[str] = []
    total = frame = previous = 0
    while total < size:
        live = _live_area(frame, rng)
        static = _transcript_lines(rng) if frame % 12 == 0 else []  # joins above, stays
        erase = "\x1b[2K\x1b[1A" * max(previous - 1, 0) + ("\x1b[2K\x1b[G" if previous else "")
        chunk = "\x1b[?2026h\x1b[?25l" + erase + "\n".join(static + live) + "\x1b[?25h\x1b[?2026l"
        out.append(chunk)
        total += len(chunk.encode())
        previous = len(live)
        frame += 1
    return "".join(out).encode()


# -- the contestants ---------------------------------------------------------------

def choragos_pane(path: Path, fast_path: bool,
                  transcript: Path | None = None) -> tuple[float, float]:
    """Wall and CPU seconds for a pane to take ``cat path`` through a real PTY
    (with ``transcript``, writing the lines that scroll off there, as a
    role's pane does)."""
    # A role's terminal: with the fast paths it holds a flood's lines back
    # to draw them a batch at a time, as the session's panes do.
    terminal = Terminal(COLS, ROWS, fast_path=fast_path, hold=FLOOD_HOLD if fast_path else 0.0)
    if transcript is not None:
        log = Transcript(transcript)
        terminal.on_scrolled = lambda lines: log.append_lines(lines, terminal.cols)
    done = threading.Event()
    env = {"PATH": os.environ.get("PATH", os.defpath), "TERM": "xterm-256color"}
    cpu = time.process_time()
    started = time.perf_counter()
    child = PtyChild.spawn(["cat", str(path)], path.parent, env, COLS, ROWS)
    reader = Reader(child, terminal.feed, lambda status: done.set(), name="bench-pane",
                    on_lull=terminal.catch_up)
    reader.start()
    if not done.wait(600):
        raise SystemExit("the choragos pane did not finish in 10 minutes")
    wall = time.perf_counter() - started
    child.close()
    return wall, time.process_time() - cpu


class Tmux:
    """A detached tmux server on its own socket, killed on exit."""

    def __init__(self) -> None:
        self.socket = f"chg-bench-{os.getpid()}"
        self.base = ["tmux", "-L", self.socket, "-f", "/dev/null"]
        self.run("new-session", "-d", "-s", "idle", "-x", str(COLS), "-y", str(ROWS), "sleep 600")
        self.run("set-option", "-g", "history-limit", "5000")
        self.pid = int(self.run("display-message", "-p", "#{pid}").strip())

    def run(self, *args: str) -> str:
        return subprocess.run([*self.base, *args], check=True, capture_output=True,
                              text=True, timeout=600).stdout

    def pane(self, path: Path, name: str) -> tuple[float, float]:
        cpu = process_cpu(self.pid)
        started = time.perf_counter()
        self.run("new-session", "-d", "-s", name, "-x", str(COLS), "-y", str(ROWS),
                 f"cat {path}; tmux -L {self.socket} wait-for -S {name}-done")
        self.run("wait-for", f"{name}-done")
        return time.perf_counter() - started, process_cpu(self.pid) - cpu

    def close(self) -> None:
        subprocess.run([*self.base, "kill-server"], capture_output=True, timeout=30)


def pyte_alone(data: bytes) -> tuple[float, float]:
    """pyte's own stream and screen, fed in PTY-sized chunks from memory."""
    screen = pyte.Screen(COLS, ROWS)
    stream = pyte.ByteStream(screen)
    cpu = time.process_time()
    started = time.perf_counter()
    for i in range(0, len(data), 4095):
        stream.feed(data[i:i + 4095])
    return time.perf_counter() - started, time.process_time() - cpu


# -- report ------------------------------------------------------------------------

def report(name: str, size: int, timings: dict[str, tuple[float, float, int]]) -> None:
    print(f"\n{name}: {size / 1e6:.1f} MB")
    print(f"  {'':28} {'wall s':>8} {'cpu s':>8} {'MB/s':>8} {'tmux/x':>8}")
    tmux_rate = timings["tmux"][2] / timings["tmux"][0]
    for label, (wall, cpu, nbytes) in timings.items():
        rate = nbytes / wall
        print(f"  {label:28} {wall:8.2f} {cpu:8.2f} {rate / 1e6:8.2f} {tmux_rate / rate:8.2f}")


def measure(name: str, data: bytes, workdir: Path, tmux: Tmux, reference_bytes: int,
            repeat: int) -> dict[str, tuple[float, float, int]]:
    """Run every contestant ``repeat`` times, interleaved, and keep each one's
    fastest run: on a shared machine the slow runs measure the neighbours."""
    path = workdir / f"{name}.bin"
    path.write_bytes(data)
    onlcr = data.replace(b"\n", b"\r\n")[:reference_bytes]  # what cat sends through a PTY
    runs: dict[str, Callable[[str], tuple[float, float]]] = {
        "tmux": lambda tag: tmux.pane(path, f"{name}-{tag}"),
        "choragos": lambda tag: choragos_pane(path, True),
        "choragos, no block path": lambda tag: choragos_pane(path, False),
        # A role's pane also writes its transcript; a cost there escapes the
        # rows above (the width of every scrolled row summed per character
        # once cost a flood six times its parsing).
        "choragos + its transcript": lambda tag: choragos_pane(
            path, True, workdir / f"{name}-{tag}.log"),
    }
    best: dict[str, tuple[float, float, int]] = {}
    for attempt in range(repeat):
        for label, run in runs.items():
            wall, cpu = run(str(attempt))
            if label not in best or wall < best[label][0]:
                best[label] = (wall, cpu, len(data))
    wall, cpu = pyte_alone(onlcr)  # once: it is only the starting point
    best[f"pyte alone (first {len(onlcr) / 1e6:.0f} MB)"] = (wall, cpu, len(onlcr))
    report(name, len(data), best)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--plain-mb", type=float, default=20)
    parser.add_argument("--tui-mb", type=float, default=10)
    parser.add_argument("--colour-mb", type=float, default=5)
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs per contestant; the fastest is reported")
    parser.add_argument("--reference-mb", type=float, default=2,
                        help="how much of each stream pyte alone gets (it is slow)")
    args = parser.parse_args()
    if shutil.which("tmux") is None or shutil.which("cat") is None:
        raise SystemExit("this benchmark needs tmux and cat on PATH")
    rng = random.Random(20250101)
    streams = {"plain log": plain_log(int(args.plain_mb * 1e6), rng),
               "agent TUI redraw": tui_stream(int(args.tui_mb * 1e6), rng),
               "coloured test log": coloured_log(int(args.colour_mb * 1e6), rng),
               "marked test log": coloured_log(int(args.colour_mb * 1e6), rng, MARK_LEVELS)}
    print(f"pane {COLS}x{ROWS}; best of {args.repeat} interleaved runs; MB/s is megabytes "
          "of the file per wall second; tmux/x > 1 means slower than tmux")
    with tempfile.TemporaryDirectory(prefix="chg-bench-") as tmp:
        tmux = Tmux()
        ratios: dict[str, float] = {}
        cpu: dict[str, float] = {}
        rates: dict[str, dict[str, float]] = {}
        try:
            for name, data in streams.items():
                best = measure(name.replace(" ", "-"), data, Path(tmp), tmux,
                               int(args.reference_mb * 1e6), args.repeat)
                ratios[name] = best["choragos"][0] / best["tmux"][0]
                ratios[f"{name}, no block path"] = (best["choragos, no block path"][0]
                                                    / best["tmux"][0])
                ratios[f"{name}, with its transcript"] = (
                    best["choragos + its transcript"][0] / best["tmux"][0])
                # CPU seconds (ours against the tmux server's) vary less with
                # the machine's load than wall time does.
                cpu[name] = best["choragos"][1] / max(best["tmux"][1], 1e-3)
                cpu[f"{name}, with its transcript"] = (
                    best["choragos + its transcript"][1] / max(best["tmux"][1], 1e-3))
                rates[name] = {label: round(n / wall / 1e6, 2)
                               for label, (wall, _cpu, n) in best.items()}
        finally:
            tmux.close()
    emit("pane_throughput", {f"{k} (choragos/tmux wall)": v for k, v in ratios.items()},
         cpu_ratios={f"{k} (choragos/tmux cpu)": round(v, 3) for k, v in cpu.items()},
         mb_per_s=rates, repeat=args.repeat)


if __name__ == "__main__":
    main()
