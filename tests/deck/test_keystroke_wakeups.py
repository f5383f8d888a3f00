"""What a keystroke costs the session in wake-ups: the real deck attached in
tmux, keys typed at an echoing agent one at a time.  Counted (the kernel's
voluntary context switches of every server thread), not timed."""

from __future__ import annotations

import os

import pytest

from bench.common import process_wakeups
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


def test_a_keystroke_wakes_the_session_a_few_times(deck):
    d = deck(role_toml("orchestrator", start=True) + "\n[ui]\nauto_focus = false\n")
    d.serve()
    d.wait_booted(["orchestrator"])
    d.wait_screen("you said: You are the orchestrator")
    pid = next(iter(d.server_pids))

    def settled() -> int:
        """The count, once a whole second passed without a wake-up."""
        seen: list[int] = []

        def still() -> bool:
            seen.append(process_wakeups(pid))
            return len(seen) > 1 and seen[-1] == seen[-2]
        wait_until(still, 60, interval=1.0, message="the session to settle")
        return seen[-1]

    before = settled()
    typed = ""
    for i in range(KEYS):
        typed += "abcdefgh"[i % 8]
        d.type(typed[-1])
        d.wait_screen(lambda screen, t=typed: t in screen)
    # Everything the keys set off counts: the status checks after the last one too.
    per_key = (settled() - before) / KEYS
    assert per_key <= MOST_PER_KEY, per_key
