"""How much of the CPU an agent wants while its screen is quiet: the share
of the wall clock its session's threads spend on a CPU or waiting on a run
queue (choragos.terminal.runqueue), over the windows the boot check
measures before it briefs a role.

Each agent (Claude Code, Gemini CLI, Codex against the tests' fake model
servers, the fixture agent, the fixture's spin-then-menu mode) runs in a
real PTY for ``--seconds``; its session's wanted time is read every 0.1 s
and its output times kept.  A window is what the boot check would take:
it opens once the output has been quiet for ``--quiet`` minus ``--window``
seconds and lasts ``--window`` seconds with no output in it.  Printed per
agent: the first such window after its first drawing (what decides its
brief), the largest of those in the first 10 s, and the largest, 95th
percentile and median of those after 15 s (at rest).  Run it idle and
beside CPU burners.  Not part of the test suite.

    .venv/bin/python bench/rest_demand.py [--seconds 30] [--agents claude,gemini,...]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from choragos.agents import seatsetup  # noqa: E402
from choragos.terminal import runqueue  # noqa: E402
from choragos.terminal.ptyproc import PtyChild, Reader, session_members  # noqa: E402
from tests.e2e.claudeenv import (  # noqa: E402
    CLAUDE_BIN,
    claude_env,
    prepare_home,
    prepare_workspace,
)
from tests.e2e.fakegemini import FakeGemini  # noqa: E402
from tests.e2e.fakemodel import FakeModel  # noqa: E402
from tests.e2e.fakeopenai import FakeOpenAI  # noqa: E402
from tests.e2e.seats import (  # noqa: E402
    CODEX_BIN,
    FAKE_GEMINI_KEY,
    FAKE_OPENAI_KEY,
    GEMINI_BIN,
    prepare_codex_home,
    prepare_gemini_home,
)

AGENT = REPO / "tests" / "fixtures" / "agent.py"
TICK = 0.1


def argv_for(name: str, spin: float) -> list[str]:
    return {"claude": [str(CLAUDE_BIN)], "gemini": [str(GEMINI_BIN)],
            "codex": [str(CODEX_BIN), *seatsetup.CODEX_ARGS],
            "fixture": [sys.executable, str(AGENT)],
            "spin": [sys.executable, str(AGENT), "--spin-then-menu", "--starve", str(spin)],
            "starved": [sys.executable, str(AGENT), "--spin-then-menu", "--starved",
                        "--starve", str(spin)]}[name]


def environment(root: Path, fakes: tuple[FakeModel, FakeGemini, FakeOpenAI]) -> dict[str, str]:
    """One isolated HOME and trusted workspace for every CLI, keys fake."""
    workspace = prepare_workspace(root / "ws")
    home = prepare_home(root / "home", workspace)
    seatsetup.write_for(workspace, ["claude", "gemini"])
    prepare_gemini_home(home, workspace)
    prepare_codex_home(home, fakes[2].api_base, workspace)
    env = claude_env(home, fakes[0].base_url)
    env.update({"GEMINI_API_KEY": FAKE_GEMINI_KEY,
                "GOOGLE_GEMINI_BASE_URL": fakes[1].base_url,
                "OPENAI_API_KEY": FAKE_OPENAI_KEY, "AGENT_LOG": str(root / "agent.log")})
    return env


def run(argv: list[str], env: dict[str, str], cwd: Path, seconds: float) -> tuple[list, list]:
    """(t, wanted ns) every TICK, and the output times, from the spawn."""
    outputs: list[float] = []
    start = time.monotonic()
    child = PtyChild.spawn(argv, cwd, env, 120, 40)
    done = threading.Event()
    reader = Reader(child, lambda data: outputs.append(time.monotonic() - start),
                    lambda status: done.set())
    reader.start()
    samples = []
    try:
        while (now := time.monotonic() - start) < seconds and not done.is_set():
            samples.append((now, runqueue.wanted_ns(session_members(child.pid))))
            time.sleep(TICK - (time.monotonic() - start) % TICK)
    finally:
        child.terminate(2.0)
        reader.join(3.0)
    return samples, outputs


def windows(samples: list, outputs: list, quiet: float, window: float) -> list[tuple]:
    """(start, fraction) of every window the boot check could take."""
    found = []
    for i, (t0, n0) in enumerate(samples):
        before = [o for o in outputs if o <= t0]
        if not before or t0 - before[-1] < quiet - window or n0 is None:
            continue
        end = next((s for s in samples[i:] if s[0] >= t0 + window - 1e-6), None)
        if end is None or end[1] is None or any(t0 < o <= end[0] for o in outputs):
            continue
        found.append((t0, (end[1] - n0) / 1e9 / (end[0] - t0)))
    return found


def report(name: str, found: list[tuple]) -> None:
    boot = [f for t, f in found if t < 10]
    rest = sorted(f for t, f in found if t >= 15)
    line = f"{name:8} first {found[0][1]:.3f} at {found[0][0]:.1f}s" if found else f"{name:8} -"
    if boot:
        line += f"  boot max {max(boot):.3f}"
    if rest:
        p95 = rest[min(len(rest) - 1, int(0.95 * len(rest)))]
        line += (f"  rest max {rest[-1]:.3f} p95 {p95:.3f} "
                 f"median {statistics.median(rest):.3f} (n={len(rest)})")
    print(line, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--agents", default="fixture,spin,starved,claude,gemini,codex")
    parser.add_argument("--quiet", type=float, default=1.2)
    parser.add_argument("--window", type=float, default=0.6)
    parser.add_argument("--spin", type=float, default=4.0)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}; window {args.window}s "
          f"after {args.quiet - args.window:.1f}s quiet", flush=True)
    with FakeModel() as claude, FakeGemini() as gemini, FakeOpenAI() as openai, \
            tempfile.TemporaryDirectory(prefix="rest") as tmp:
        env = environment(Path(tmp), (claude, gemini, openai))
        for name in args.agents.split(","):
            seconds = args.seconds if name not in ("spin", "starved") else args.spin + 4
            with contextlib.suppress(KeyboardInterrupt):
                samples, outputs = run(argv_for(name, args.spin), env, Path(tmp) / "ws",
                                       seconds)
                report(name, windows(samples, outputs, args.quiet, args.window))


if __name__ == "__main__":
    main()
