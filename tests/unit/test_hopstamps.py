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
