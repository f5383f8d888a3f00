"""Two checkouts' keystroke latency through ``choragos attach``, side by side.

On a shared machine the load moves between two runs more than a change of
ours moves the keystroke, so paired runs one after the other say little.
This bench starts two sessions at once, one from each checkout, each with
its echo agent and neighbours as in ``attach_latency.py`` (the same agent,
flooder and probe), and types its probes into the two clients in turn (the
order swapped every probe), so whatever the machine does meanwhile falls on
both alike.  It prints each one's median, quartiles and p90 and its server's
wake-ups per probe.  ``--block N`` types N probes into one session before
the other's turn (each block after a pause, the order swapped every block):
then between two probes of a block nothing of the other session runs, and
the probes show what a session's own work between two keys (its frames,
its classifications) costs its next key, which the probes alternating
every one hide behind the other session's work.  Both sessions'
neighbours run at once: with floods the machine carries twice the floods of
``attach_latency.py``, so the times are for comparing the two checkouts,
not for comparing with tmux.

    .venv/bin/python bench/attach_ab.py CHECKOUT_A CHECKOUT_B [--idle] [--rate MBPS]
                                        [--roles N] [--flooders K] [--probes N]
                                        [--block N]

A checkout is a directory with ``choragos/``, ``actors/`` and ``ui/`` side by
side, as this repository; run from an environment without choragos
installed, or give each checkout ``choragos/actors`` and ``choragos/ui``
links to its own, so that its session imports nothing from elsewhere.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench import attach_latency as al  # noqa: E402
from bench.common import (  # noqa: E402
    NO_CHECKPOINTS,
    QUIET_DECK,
    crew_repo,
    emit,
    process_wakeups,
    scratch,
    served,
)

# Before a block of probes (``--block``): long enough for the other session's
# work after its last keys (two classifications, 0.15 s apart, and the card's
# preview) to be over.
BLOCK_PAUSE = 0.6


@contextlib.contextmanager
def session(checkout: Path, root: Path, crew: al.Crew) -> Iterator[al.Screen]:
    """A session of ``checkout``'s code, attached on a screen of ours."""
    flood = root / "flood.py"
    flood.write_text(al.FLOODER)
    work = crew_repo(root / "w", [("echo", [sys.executable, str(al.AGENT)]),
                                  *crew.others(flood)], "echo", QUIET_DECK + NO_CHECKPOINTS)
    env = al.environment(root)
    env["PYTHONPATH"] = str(checkout)
    with served(work, env) as pid:
        yield from al._attached([sys.executable, "-m", "choragos", "attach"], env, work,
                                lambda text: "you said: You are the echo role" in text
                                and ("compiling" in text or not crew.flooders), 60, pid)


def turns(names: tuple[str, str], probes: int, block: int) -> Iterator[tuple[str, int]]:
    """(session, probes typed into it in a row), ``probes`` for each: ``block``
    at a time, the order of the two swapped every block."""
    for i, start in enumerate(range(0, probes, block)):
        for name in names if i % 2 else names[::-1]:
            yield name, min(block, probes - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("a", type=Path)
    parser.add_argument("b", type=Path)
    parser.add_argument("--idle", action="store_true")
    parser.add_argument("--rate", type=float, default=1.0)
    parser.add_argument("--roles", type=int, default=2)
    parser.add_argument("--flooders", type=int, default=1)
    parser.add_argument("--probes", type=int, default=100, help="probes for each checkout")
    parser.add_argument("--block", type=int, default=1,
                        help="probes typed into one session before the other's turn (1: "
                        "they alternate every probe); each block after a pause, so the "
                        "other session's work after its keys is over: between two probes "
                        "of a block only that session's own work runs")
    args = parser.parse_args()
    crew = al.Crew(args.rate, args.idle, max(args.roles, 2), args.flooders)
    names = ("A", "B")
    ms: dict[str, list[float]] = {name: [] for name in names}
    woke: dict[str, int] = {}
    with (scratch("chab-") as root_a, scratch("chab-") as root_b,
          session(args.a, root_a, crew) as a, session(args.b, root_b, crew) as b):
        screens = {"A": a, "B": b}
        time.sleep(1.0)  # let the floods get going
        for screen in screens.values():
            screen.probing()
        before = {name: process_wakeups(s.server_pid) for name, s in screens.items()}
        number = 0
        for name, count in turns(names, args.probes, args.block):
            if args.block > 1:
                time.sleep(BLOCK_PAUSE)
            for _ in range(count):
                number += 1
                span = al.probe(screens[name], number)
                if span is not None:
                    ms[name].append((span[1] - span[0]) * 1000)
        woke = {name: process_wakeups(s.server_pid) - before[name]
                for name, s in screens.items()}
    load = os.getloadavg()[0]
    flood = "idle" if args.idle else f"{args.rate:g} MB/s"
    order = "alternating" if args.block == 1 else f"in blocks of {args.block}"
    print(f"keystroke-to-screen latency, {crew.roles} panes, {crew.flooders} flooding each "
          f"({flood}), probes {order}; load {load:.1f}")
    for name, path in zip(names, (args.a, args.b), strict=True):
        got = sorted(ms[name])
        print(f"{name} {path}: median {statistics.median(got):.2f} ms, quartiles "
              f"{got[len(got) // 4]:.2f}-{got[3 * len(got) // 4]:.2f} ms, "
              f"p90 {got[9 * len(got) // 10]:.2f} ms ({len(got)} probes), "
              f"{woke[name] / args.probes:.1f} server wake-ups a probe")
    emit("attach_ab", {"b/a": statistics.median(ms["B"]) / statistics.median(ms["A"])},
         setup={"roles": crew.roles, "flooders": crew.flooders, "rate_mbps": args.rate,
                "idle": args.idle, "block": args.block},
         median_ms={name: round(statistics.median(v), 3) for name, v in ms.items()},
         p90_ms={name: round(sorted(v)[9 * len(v) // 10], 3) for name, v in ms.items()},
         probes={name: len(v) for name, v in ms.items()},
         wakeups_per_probe={name: round(woke[name] / args.probes, 1) for name in names})


if __name__ == "__main__":
    main()
