"""What a keystroke costs the session in wake-ups: the real deck attached in
tmux, keys typed at an echoing agent one at a time.  Counted (the kernel's
voluntary context switches of every server thread), not timed."""

from __future__ import annotations

import os
import time

import pytest

from tests.conftest import wait_until
from tests.integration.harness import role_toml

pytestmark = [pytest.mark.skipif(not os.path.exists("/proc/self/task"),
                                 reason="counts wake-ups in /proc"),
              pytest.mark.timeout(180)]

KEYS = 24
# Per key, measured 3.6-4.4 at load 3.5 (the attach pump, the pane's
# reader and its lull, the role actor's look at the new output and its
# status check, the core and the deck for a status that changed); a
# thread waiting for the interpreter counts too, so a busy machine adds
# some (8.2 in a full run beside another).  A poll of any kind would add
# far more.
MOST_PER_KEY = 12


def _wakeups(pid: int) -> int:
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as status:
                for line in status:
                    if line.startswith("voluntary_ctxt_switches:"):
                        total += int(line.split()[1])
        except OSError:
            continue  # a thread that just ended
    return total


def test_a_keystroke_wakes_the_session_a_few_times(deck):
    d = deck(role_toml("orchestrator", start=True) + "\n[ui]\nauto_focus = false\n")
    d.serve()
    d.wait_booted(["orchestrator"])
    d.wait_screen("you said: You are the orchestrator")
    pid = next(iter(d.server_pids))
    seen: list[int] = []

    def settled() -> bool:  # no wake-up for a whole second
        seen.append(_wakeups(pid))
        return len(seen) > 1 and seen[-1] == seen[-2]
    wait_until(settled, 60, interval=1.0, message="the session to settle")
    before = seen[-1]
    typed = ""
    for i in range(KEYS):
        typed += "abcdefgh"[i % 8]
        d.type(typed[-1])
        d.wait_screen(lambda screen, t=typed: t in screen)
    time.sleep(1.0)  # the status checks after the last key
    per_key = (_wakeups(pid) - before) / KEYS
    assert per_key <= MOST_PER_KEY, per_key
