"""The CPU a session has wanted, read from /proc's per-thread schedstat:
parsed from fake lines, and read for real from processes that sleep, spin
or are stopped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from choragos.terminal import runqueue
from choragos.terminal.ptyproc import process_state
from tests.conftest import wait_until

HAS_SCHEDSTAT = runqueue.wanted_ns([os.getpid()]) is not None


@pytest.mark.parametrize(("line", "expected"), [
    (b"150786949 54182524 2102\n", 150786949 + 54182524),
    (b"0 59490 1\n", 59490),  # never on a CPU yet, but waited for one
    (b"0 0 0\n", None),  # a kernel that keeps no scheduler statistics
    (b"", None), (b"12\n", None), (b"a b c\n", None),
])
def test_a_schedstat_line_is_read_or_unknown(line, expected):
    assert runqueue.parse(line) == expected


def test_no_process_no_figures():
    assert runqueue.wanted_ns([]) is None
    assert runqueue.wanted_ns([2 ** 22 + 12345]) is None  # above any pid_max default


def test_the_system_keeping_figures_is_told_from_a_process_gone():
    """A pid gone gives no figures; whether the system keeps them at all
    is read from this process's own thread, the same answer every time."""
    assert runqueue.kept_here() is HAS_SCHEDSTAT
    assert runqueue.wanted_ns([2 ** 22 + 12345]) is None


def share(pid: int, seconds: float) -> float:
    before, start = runqueue.wanted_ns([pid]), time.monotonic()
    time.sleep(seconds)
    return (runqueue.wanted_ns([pid]) - before) / 1e9 / (time.monotonic() - start)


@pytest.mark.skipif(not HAS_SCHEDSTAT, reason="no per-thread schedstat on this system")
@pytest.mark.timeout(30)
def test_a_spinner_wants_the_whole_window_a_sleeper_and_a_stopped_one_nothing():
    spin = "import time\nwhile True: time.monotonic()\n"
    sleep = "import time\nwhile True: time.sleep(0.1)\n"
    procs = [subprocess.Popen([sys.executable, "-c", code]) for code in (spin, sleep)]
    try:
        spinner, sleeper = (p.pid for p in procs)
        wait_until(lambda: (runqueue.wanted_ns([spinner]) or 0) > 50_000_000, 10,
                   message="the spinner at work")
        assert share(spinner, 0.6) > 0.8  # on a CPU, or waiting on the run queue for one
        assert share(sleeper, 0.6) < 0.2
        os.kill(spinner, signal.SIGSTOP)
        wait_until(lambda: process_state(spinner) == b"T", 5, message="the spinner stopped")
        assert share(spinner, 0.3) < 0.05  # stopped: neither on a CPU nor waiting
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
