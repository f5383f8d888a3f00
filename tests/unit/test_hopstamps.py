"""The keystroke's hop stamps the attach bench reads (``choragos/session/hopstamps.py``)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

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
    lines = [line.split(" ") for line in stamps.read_text().splitlines()]
    assert [fields[1:] for fields in lines] == [["key-read", ""], ["out-read", "echo"]]
    assert all(before < int(fields[0]) < after for fields in lines)  # one clock, both sides
    assert stamps.stat().st_mode & 0o777 == 0o600


@pytest.mark.timeout(90)
def test_without_the_variable_nothing_is_written(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "CHORAGOS_HOPSTAMPS"}
    assert _run(env) == "False"


def test_the_bench_splits_a_probe_into_steps_and_counts_its_detours(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT))
    try:
        from bench.attach_latency import detours, hop_steps
    finally:
        sys.path.remove(str(ROOT))
    stamps = tmp_path / "hops.txt"
    # One probe typed at 1.000 s and seen at 1.010 s; a neighbour's read between.
    stamps.write_text("1001000000 key-read \n1002000000 key-written echo\n"
                      "1002500000 out-read flood0\n1003000000 out-read echo\n"
                      "1004000000 lane-missed echo\n1006000000 frame-in \n"
                      "1007000000 frame-queued \n1008000000 pump-sent \n"
                      "1020000000 frame-in \n")
    steps = hop_steps(stamps, [(1.0, 1.010)])
    assert steps == {}  # no frame-written: the probe is left out of the steps
    assert detours(stamps, [(1.0, 1.010)]) == {"lane-missed": 1, "frame-queued": 1,
                                               "pump-sent": 1}
    stamps.write_text(stamps.read_text() + "1007500000 frame-written \n")
    steps = hop_steps(stamps, [(1.0, 1.010)])
    assert {k: round(v[0]) for k, v in steps.items()} == {
        "typed -> key-read": 1000, "key-read -> key-written": 1000,
        "key-written -> out-read": 1000, "out-read -> frame-in": 3000,
        "frame-in -> frame-written": 1500, "frame-written -> seen": 2500}
