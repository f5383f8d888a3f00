"""Does a flooding pane delay another pane's injections?

Runs a real ``choragos serve --headless`` with a fixture worker and, in the
second run, a role that floods its pane (``yes``-style output as fast as the
PTY takes it).  Measures, per delegation, the time from the ``delegate``
event to the ``delivered`` event (text typed, its echo seen, the profile's
quiet, Enter, the input seen cleared) in both runs and prints the medians
and their difference: the delay the flood causes.  Target: under 100 ms.

    .venv/bin/python bench/flood_delay.py [--runs N]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.common import emit  # noqa: E402
from tests.integration.harness import Serve, role_toml  # noqa: E402

FLOOD = ('[[roles]]\nname = "flood"\ncommand = "sh"\n'
         'args = ["-c", "while :; do cat /usr/share/dict/words 2>/dev/null || '
         'seq 1 100000; done"]\n')


def measure(flood: bool, runs: int) -> list[float]:
    root = Path(tempfile.mkdtemp(prefix="chg-bench-", dir="/tmp"))
    work = root / "work"
    work.mkdir()
    config = role_toml("orchestrator", start=True) + role_toml("coder")
    serve = Serve(work, config + (FLOOD if flood else ""), sock=root / "s.sock").start()
    try:
        serve.wait_booted(["coder"], timeout=30)
        for n in range(runs):
            serve.cli("delegate", "--to", "coder", "--task", f"job {n}")
            serve.wait(lambda n=n: sum(e["event"] == "delivered" for e in serve.events())
                       > n, 30, "delivery")
        events = serve.events()
        created = {e["task"]: e["t"] for e in events if e["event"] == "delegate"}
        return [e["t"] - created[e["task"]] for e in events if e["event"] == "delivered"]
    finally:
        serve.stop()
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    quiet = measure(False, args.runs)
    flooded = measure(True, args.runs)
    q, f = statistics.median(quiet), statistics.median(flooded)
    print(f"delegate -> delivered, quiet neighbour:    median {q * 1000:7.1f} ms")
    print(f"delegate -> delivered, flooding neighbour: median {f * 1000:7.1f} ms")
    print(f"delay caused by the flood: {(f - q) * 1000:+.1f} ms (target < 100 ms)")
    emit("flood_delay", {"flooded/quiet": f / q},
         median_ms={"quiet": round(q * 1000, 1), "flooded": round(f * 1000, 1)},
         delay_ms=round((f - q) * 1000, 1), runs=args.runs)


if __name__ == "__main__":
    main()
