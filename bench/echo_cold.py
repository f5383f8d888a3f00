"""An echo's way through the deck on a core that comes to it cold.

A keystroke's echo reaches the session while other work (floods, agents,
other programs) has had the caches, so its Python runs several times
slower than the same code run in a loop.  This bench feeds echoes to a
real deck in-process (real terminals, the echo lane, the row diff, the
frame handed to a sink), and before each one evicts the caches by writing
a buffer larger than them; it times the whole feed and each part.  Two
kinds of echo: a character typed at a prompt (a shell, the benches' echo
agent), and an agent's input box drawn again for every key, as Claude
Code, Gemini CLI and Codex draw theirs (rows erased, a coloured box, a
hint under it).  Its reference is one hop of the kernel after the same
eviction: a byte written to a PTY and read back on the other side.

    .venv/bin/python bench/echo_cold.py [--echoes 150]
"""

from __future__ import annotations

import argparse
import functools
import os
import pty
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.common import emit  # noqa: E402
from choragos.terminal.emulator import Terminal  # noqa: E402
from choragos.terminal.vtparse import VTParser  # noqa: E402
from choragos.ui import deckdraw, deckecho, pane, ptyscreen  # noqa: E402
from tests.ui.test_redraw import _running_deck  # noqa: E402

EVICT = 48 << 20  # bytes written between echoes: more than the caches hold
SKIP = 20  # first echoes left out (the harness warming up)

# Parts timed inside the feed: (name, class, method).
PARTS = (("parse", VTParser, "feed"), ("lane", deckecho.EchoLane, "draw"),
         ("pane rows", pane.PaneView, "content"), ("row swap", deckdraw.Renderer, "swap_row"),
         ("paint", ptyscreen.PtyScreen, "paint"))


class Evictor:
    """Writes a buffer bigger than the caches, freshly allocated each time
    (new pages, as the session's churn gives): what was cached is gone."""

    def __init__(self) -> None:
        self.junk = bytearray(EVICT)

    def __call__(self) -> None:
        step = 1 << 20
        for off in range(0, EVICT, step):
            self.junk[off:off + step] = bytes(step) if off % (2 * step) else b"\1" * step


def _timed(spent: dict[str, int], name: str, method: Callable) -> Callable:
    @functools.wraps(method)
    def run(*args, **kwargs):
        started = time.perf_counter_ns()
        try:
            return method(*args, **kwargs)
        finally:
            spent[name] = spent.get(name, 0) + time.perf_counter_ns() - started
    return run


_GREY, _PLAIN = "\x1b[38;2;153;153;153m", "\x1b[39m"


def _box(typed: str) -> bytes:
    """An agent's input box with ``typed`` in it, drawn over the last one."""
    rows = [f"{_GREY}╭{'─' * 60}╮{_PLAIN}",
            f"{_GREY}│{_PLAIN} > {typed:<57}{_GREY}│{_PLAIN}",
            f"{_GREY}╰{'─' * 60}╯{_PLAIN}", f"  {_GREY}? for shortcuts{_PLAIN}"]
    return ("\x1b[2K\x1b[1A" * 3 + "\x1b[2K\x1b[G" + "\r\n".join(rows)).encode()


def _prompt_echo(terminal: Terminal, deck, i: int) -> bytes:
    """The next key typed at a prompt, its line erased every seventh key."""
    if i % 7 == 0:
        deck.feed_input(b"\x7f" * 7)
        terminal.feed(b"\x08 \x08" * 7)
    return b"abcdefg"[i % 7:i % 7 + 1]


def _box_echo(terminal: Terminal, deck, i: int) -> bytes:
    """The box drawn again with one more key typed in it."""
    if i == 0:
        terminal.feed(b"\r\n" * 3 + _box(""))
    return _box("abcdefghijklmnopqrstuvwxyz"[:i % 26 + 1])


KINDS = {"prompt": _prompt_echo, "agent box": _box_echo}


def echoes(count: int, evict: Callable[[], None] | None, parts: bool,
           kind: str = "prompt") -> dict[str, list[float]]:
    """Microseconds per echo fed to the focused pane of a running deck: the
    whole feed, and with ``parts`` each part of it."""
    spent: dict[str, int] = {}
    saved = []
    if parts:
        for name, owner, attr in PARTS:
            saved.append((owner, attr, getattr(owner, attr)))
            setattr(owner, attr, _timed(spent, name, getattr(owner, attr)))
    workdir = tempfile.TemporaryDirectory(prefix="chb-echo-")
    deck, port = _running_deck(Path(workdir.name))
    try:
        terminal: Terminal = port.terminals["orchestrator"]
        deck.screen.set_sink(lambda frame: None)  # as the attach server takes frames
        out: dict[str, list[float]] = {"feed": []}
        for i in range(count + SKIP):
            echo = KINDS[kind](terminal, deck, i)
            deck.feed_input(b"k")
            if evict is not None:
                evict()
            spent.clear()
            started = time.perf_counter_ns()
            terminal.feed(echo)
            if i >= SKIP:
                out["feed"].append((time.perf_counter_ns() - started) / 1000)
                for name, ns in spent.items():
                    out.setdefault(name, []).append(ns / 1000)
        return out
    finally:
        deck.stop()
        deck.screen.close()
        workdir.cleanup()  # six runs a `make bench`: none left in /tmp
        for owner, attr, method in saved:
            setattr(owner, attr, method)


def pty_hops(count: int, evict: Callable[[], None]) -> list[float]:
    """Microseconds for a byte written to a PTY's master to be read on its
    slave, after the same eviction."""
    master, slave = pty.openpty()
    try:
        import termios
        attrs = termios.tcgetattr(slave)
        attrs[3] &= ~(termios.ICANON | termios.ECHO)
        termios.tcsetattr(slave, termios.TCSANOW, attrs)
        out = []
        for i in range(count + SKIP):
            evict()
            started = time.perf_counter_ns()
            os.write(master, b"k")
            os.read(slave, 16)
            if i >= SKIP:
                out.append((time.perf_counter_ns() - started) / 1000)
        return out
    finally:
        os.close(master)
        os.close(slave)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--echoes", type=int, default=150)
    args = parser.parse_args()
    evict = Evictor()
    median = statistics.median
    hop = median(pty_hops(args.echoes, evict))
    print(f"an echo fed to a running deck, {args.echoes} echoes, caches evicted before each")
    ratios, figures = {}, {"pty_hop": round(hop, 1)}
    for kind in KINDS:
        cold = median(echoes(args.echoes, evict, parts=False, kind=kind)["feed"])
        warm = median(echoes(args.echoes, None, parts=False, kind=kind)["feed"])
        parts = echoes(args.echoes, evict, parts=True, kind=kind)
        print(f"  {kind}: whole feed, cold median {cold:7.1f} us, warm {warm:7.1f} us")
        print("    parts, cold (timed apart; they nest: the lane holds the rest):")
        for name, _, _ in PARTS:
            print(f"      {name:10s} median {median(parts[name]):7.1f} us")
        ratios[f"{kind}: echo/pty_hop"] = cold / hop
        ratios[f"{kind}: cold/warm"] = cold / warm
        figures[kind] = {"cold": round(cold, 1), "warm": round(warm, 1),
                         **{name: round(median(parts[name]), 1) for name, _, _ in PARTS}}
    print(f"  reference: a PTY hop, cold median {hop:7.1f} us")
    print(f"ratio (cold echo at a prompt / cold PTY hop): {ratios['prompt: echo/pty_hop']:.2f}")
    emit("echo_cold", ratios, median_us=figures, echoes=args.echoes)


if __name__ == "__main__":
    main()
