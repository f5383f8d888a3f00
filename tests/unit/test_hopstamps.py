"""The keystroke's hop stamps the attach bench reads (``choragos/session/hopstamps.py``)."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from choragos.session import hopstamps

ROOT = Path(__file__).resolve().parents[2]
MARK = ("from choragos.session import hopstamps\n"
        "if hopstamps.ON:\n"
        "    hopstamps.mark('key-read')\n"
        "    hopstamps.mark('out-read', 'echo')\n"
        "print(hopstamps.ON)\n")


def _run(env: dict[str, str]) -> str:
    return subprocess.run([sys.executable, "-c", MARK], cwd=ROOT, env=env, text=True,
                          capture_output=True, timeout=60, check=True).stdout.strip()


@pytest.mark.timeout(90)
def test_stamps_are_lines_on_the_probes_clock(tmp_path: Path) -> None:
    stamps = tmp_path / "hops.txt"
    before = time.perf_counter_ns()
    assert _run({**os.environ, "CHORAGOS_HOPSTAMPS": str(stamps)}) == "True"
    after = time.perf_counter_ns()
    marks = [hopstamps.parse(line) for line in stamps.read_text().splitlines()]
    assert [(hop, role) for _ns, _thread, _cpu, hop, role in marks] == [
        ("key-read", ""), ("out-read", "echo")]
    assert all(before < ns < after for ns, *_ in marks)  # one clock, both sides
    # Both from one thread, its CPU clock going on: a step's CPU and its waiting tell apart.
    assert marks[0][1] == marks[1][1] > 0
    assert 0 < marks[0][2] <= marks[1][2]
    assert stamps.stat().st_mode & 0o777 == 0o600


@pytest.mark.timeout(90)
def test_without_the_variable_nothing_is_written(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "CHORAGOS_HOPSTAMPS"}
    assert _run(env) == "False"


def _bench(*names: str) -> tuple:
    """Functions of bench/attach_latency.py (the bench is not a package on the path)."""
    sys.path.insert(0, str(ROOT))
    try:
        module = importlib.import_module("bench.attach_latency")
    finally:
        sys.path.remove(str(ROOT))
    return tuple(getattr(module, name) for name in names)


def test_the_bench_splits_a_probe_into_steps_and_counts_its_detours(tmp_path: Path) -> None:
    detours, hop_steps = _bench("detours", "hop_steps")
    stamps = tmp_path / "hops.txt"
    # One probe typed at 1.000 s and seen at 1.010 s; a neighbour's read
    # between.  The pump (thread 7) used 0.4 ms of its 1 ms step, the reader
    # (thread 9) all of its 3 ms.
    stamps.write_text("1001000000 7 5000000 key-read \n1002000000 7 5400000 key-written echo\n"
                      "1002500000 8 100 out-read flood0\n1003000000 9 1000000 out-read echo\n"
                      "1004000000 9 1100000 lane-missed echo\n1006000000 9 4000000 frame-in \n"
                      "1007000000 9 4100000 frame-queued \n1008000000 3 100 pump-sent \n"
                      "1020000000 9 5000000 frame-in \n")
    steps = hop_steps(stamps, [(1.0, 1.010)])
    assert steps == {}  # no frame-written: the probe is left out of the steps
    assert detours(stamps, [(1.0, 1.010)]) == {"lane-missed": 1, "frame-queued": 1,
                                               "pump-sent": 1}
    stamps.write_text(stamps.read_text() + "1007500000 3 200 frame-written \n")
    cpu: dict[str, list[float]] = {}
    steps = hop_steps(stamps, [(1.0, 1.010)], cpu)
    assert {k: round(v[0]) for k, v in steps.items()} == {
        "typed -> key-read": 1000, "key-read -> key-written": 1000,
        "key-written -> out-read": 1000, "out-read -> frame-in": 3000,
        "frame-in -> frame-written": 1500, "frame-written -> seen": 2500}
    # Only the steps on one thread have a CPU figure.
    assert {k: round(v[0]) for k, v in cpu.items()} == {
        "key-read -> key-written": 400, "out-read -> frame-in": 3000}


def test_the_bench_tells_the_probes_a_neighbours_batch_overlapped(tmp_path: Path) -> None:
    neighbour_batches, split_by_batches = _bench("neighbour_batches", "split_by_batches")
    stamps = tmp_path / "hops.txt"
    # flood0: a piece held (50 µs of CPU), then a batch drawn at the lull
    # (1.5 ms); flood1: a feed that drew a batch (0.3 ms); the echo's own
    # feed never counts.
    stamps.write_text("1000000000 8 0 out-read flood0\n1000100000 8 50000 fed flood0\n"
                      "1010000000 8 50000 lull flood0\n1011600000 8 1550000 lull-drawn flood0\n"
                      "1030000000 5 0 out-read flood1\n1030400000 5 300000 fed flood1\n"
                      "1050000000 9 0 out-read echo\n1051000000 9 900000 fed echo\n")
    batches = neighbour_batches(stamps)
    assert [(start, end, round(cpu, 6)) for start, end, cpu in batches] == [
        (1.01, 1.0116, 0.0015), (1.03, 1.0304, 0.0003)]
    during, clear = split_by_batches([(1.0005, 1.0008), (1.011, 1.012), (1.0301, 1.031),
                                      (1.05, 1.0512)], batches)
    assert [round(ms, 1) for ms in during] == [1.0, 0.9]
    assert [round(ms, 1) for ms in clear] == [0.3, 1.2]


def test_the_bench_tells_a_wake_up_that_waited_for_a_neighbours_feed(tmp_path: Path) -> None:
    wake_steps, = _bench("wake_steps")
    stamps = tmp_path / "hops.txt"
    # Probe 1 (at 1.0 s): the pump wakes while flood0 feeds a piece (50 µs
    # of CPU), the echo's reader with nobody feeding.  Probe 2 (at 2.0 s):
    # the pump wakes free, the reader while flood1 draws a batch (1 ms).
    probe = ("{t}000000 7 0 key-read \n{t}100000 7 0 key-written echo\n"
             "{t}400000 9 0 out-read echo\n{t}450000 9 0 frame-in \n"
             "{t}460000 9 0 frame-written \n")
    stamps.write_text("999900000 8 0 out-read flood0\n1000020000 8 50000 fed flood0\n"
                      + probe.format(t="1000")
                      + "2000200000 5 0 out-read flood1\n2000500000 5 1000000 fed flood1\n"
                      + probe.format(t="2000")
                      + "2000600000 9 0 out-read echo\n")
    split = wake_steps(stamps, [(0.9998, 1.0005), (1.9998, 2.0005)])
    assert {k: [round(x) for x in v] for k, v in split.items()} == {
        "typed -> key-read, piece": [200], "key-written -> out-read, free": [300],
        "typed -> key-read, free": [200], "key-written -> out-read, batch": [300]}


def test_the_bench_gives_the_key_threads_their_clocks_per_probe(tmp_path: Path) -> None:
    key_threads, = _bench("key_threads")
    stamps = tmp_path / "hops.txt"
    # The pump is thread 7; the echo's reader moved from thread 9 to 10 (a
    # new turn); thread 8 is a neighbour's and does not count.
    stamps.write_text("1000000000 7 0 key-read \n1000300000 9 0 out-read echo\n"
                      "1000350000 8 0 out-read flood0\n2000300000 10 0 out-read echo\n")
    clocks = [({7: (0, 0), 8: (0, 0), 9: (1000, 0)}, {7: (60000, 5000), 8: (90000, 0),
                                                       9: (51000, 12000)}),
              ({7: (60000, 5000), 10: (0, 0)}, {7: (100000, 5000), 10: (70000, 0)})]
    assert key_threads(stamps, clocks) == {"pump": [(60.0, 5.0), (40.0, 0.0)],
                                           "echo reader": [(50.0, 12.0), (70.0, 0.0)]}
