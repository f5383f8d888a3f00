"""An idle session sleeps: with nothing to do, no thread of the server wakes
on a clock of its own (counted wake-ups, not time), and the "alive"
heartbeat runs only while a timeout clock does."""

from __future__ import annotations

import os
import time

import pytest

from choragos.board import journal
from tests.integration.harness import role_toml

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/task"),
                                reason="counts wake-ups in /proc")


def _wakeups(pid: int) -> dict[int, int]:
    """Each thread's count of going to sleep and waking again (the kernel's
    voluntary switches; a preemption while it runs says nothing about
    wake-ups, and a busy machine makes many)."""
    counts = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as status:
                fields = dict(line.split(":", 1) for line in status if ":" in line)
        except OSError:
            continue  # a thread that just ended
        counts[int(tid)] = int(fields["voluntary_ctxt_switches"])
    return counts


def _alive_records(workdir) -> int:
    path = journal.state_dir(workdir) / journal.JOURNAL
    return sum(1 for r in journal.read_records(path) if r["kind"] == "alive")


def test_an_idle_session_does_not_wake(serve):
    s = serve(role_toml("lead", start=True) + role_toml("coder", "--worker")
              + role_toml("tester", "--worker"))
    s.wait_booted(["lead"])
    pid = s.proc.pid
    seen: list[dict[int, int]] = []

    def settled() -> bool:  # two looks a second apart with no wake-up between
        seen.append(_wakeups(pid))
        return len(seen) > 1 and seen[-1] == seen[-2]
    # The accept loop looks at its socket every 5 s, so a window of 1 s
    # between two looks can be settled only once the rest sleeps for good.
    s.wait(settled, 30, "the server to settle", interval=1.0)
    before = seen[-1]
    time.sleep(3)  # the span watched
    after = _wakeups(pid)
    woke = {tid: after[tid] - before.get(tid, 0) for tid in after if after[tid] != before.get(tid)}
    # One look of the accept loop may fall in the span; a timed wait of the
    # main thread (4 a second) or a heartbeat (1 a second) would add more.
    assert sum(woke.values()) <= 1, woke
    assert _alive_records(s.workdir) == 0


def test_the_heartbeat_beats_only_while_a_timeout_clock_runs(serve):
    s = serve(role_toml("lead", start=True) + role_toml("slow", "--worker", "--work", "5",
                                                        timeout="60s"))
    s.wait_booted(["slow"])
    out = s.cli("delegate", "--to", "slow", "--task", "take your time")
    assert out.returncode == 0, out.stderr
    task = out.stdout.split()[1]
    s.wait(lambda: _alive_records(s.workdir) >= 2, 15, "two heartbeats while the clock runs")
    s.wait(lambda: s.board()[task]["state"] == "done", 20, "the work-done")
    stopped = _alive_records(s.workdir)
    time.sleep(2.5)  # the span watched: two beats, if it still beat
    assert _alive_records(s.workdir) <= stopped + 1  # one already armed may land
