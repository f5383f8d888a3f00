"""What an idle crew costs: CPU of the session server with five idle roles
and one client attached, against the tmux server with the same five
programs in five panes and a client attached, in the same run.

Each setup boots, draws, settles (``--settle`` seconds), then the server's
CPU time (utime + stime from /proc) is read over a window of ``--window``
seconds while nothing happens on any screen.  choragos is then measured
once more with the client gone (detached).  Figures are CPU seconds per
minute; an idle server should be near zero.  Not part of the test suite.

    .venv/bin/python bench/idle_cpu.py [--window 20] [--settle 3] [--rounds 1]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.attach_latency import AGENT, Screen, environment  # noqa: E402
from bench.common import (  # noqa: E402
    NO_CHECKPOINTS,
    crew_repo,
    emit,
    need_tmux,
    process_cpu,
    scratch,
    served,
    tmux_tiled,
)

ROLES = 5


def cpu_per_minute(pid: int, window: float) -> float:
    before = process_cpu(pid)
    time.sleep(window)
    return (process_cpu(pid) - before) * 60 / window


def choragos_round(root: Path, window: float, settle: float) -> tuple[float, float]:
    """(attached, detached) CPU s/min of the session server."""
    work = crew_repo(root / "w", [(f"r{i}", [sys.executable, str(AGENT)]) for i in range(ROLES)],
                     "r0", "[ui]\nauto_focus = false\n" + NO_CHECKPOINTS)
    env = environment(root)
    with served(work, env) as pid:
        screen = Screen([sys.executable, "-m", "choragos", "attach"], env, work)
        try:
            screen.wait_for(lambda text: text.count("agent>") >= ROLES
                            and "you said: You are the r0 role" in text, 60)
            time.sleep(settle)
            attached = cpu_per_minute(pid, window)
        finally:
            screen.close()
        time.sleep(settle)
        detached = cpu_per_minute(pid, window)
    return attached, detached


def tmux_round(root: Path, window: float, settle: float, tmux: str) -> float:
    env = environment(root)
    server = [tmux, "-L", f"idle-{os.getpid()}", "-f", "/dev/null"]
    pid = tmux_tiled(server, env, [f"{sys.executable} {AGENT}"] * ROLES)
    screen = Screen([*server, "attach"], env, root)
    try:
        screen.wait_for(lambda text: text.count("agent>") >= ROLES, 30)
        time.sleep(settle)
        return cpu_per_minute(pid, window)
    finally:
        screen.close()
        subprocess.run([*server, "kill-server"], env=env, capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--window", type=float, default=20.0)
    parser.add_argument("--settle", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    tmux = need_tmux()
    ours, detached, theirs = [], [], []
    for _ in range(args.rounds):
        with scratch("chi-") as root:
            a, d = choragos_round(root, args.window, args.settle)
            ours.append(a)
            detached.append(d)
        with scratch("chi-") as root:
            theirs.append(tmux_round(root, args.window, args.settle, tmux))
    a, d, t = (statistics.median(x) for x in (ours, detached, theirs))
    print(f"server CPU, {ROLES} idle roles, {args.window:g} s windows, {args.rounds} round(s)")
    print(f"  choragos, one client attached   {a:6.3f} CPU s/min")
    print(f"  choragos, detached              {d:6.3f} CPU s/min")
    print(f"  tmux, one client attached       {t:6.3f} CPU s/min")
    emit("idle_cpu", {"attached/detached": a / d if d else None},
         cpu_s_per_min={"choragos attached": round(a, 3), "choragos detached": round(d, 3),
                        "tmux attached": round(t, 3)},
         window_s=args.window, rounds=args.rounds)


if __name__ == "__main__":
    main()
