"""A big crew: how long ``serve`` takes to the first frame, and what five
roles' scrollback costs in memory, next to tmux doing the same in one run.

* first frame: from typing ``choragos serve`` in a terminal (it starts the
  server and attaches, as ``tmux new-session`` plus the splits and an
  ``attach`` do) with ``--roles`` roles running the fixture agent until the
  terminal shows the prompt in every pane the deck shows.
  tmux tiles all of them; the deck shows the start role and six more
  stacked beside it and keeps the rest hidden (their agents spawn once
  its first frame is out), so for 12 roles it waits for 7 prompts, which come before the
  agents are briefed (a briefed agent shows a second prompt: the JSON line
  says whether a briefing was already on the first frame).
  ``serve --detach`` is not what is timed: it returns only once the start
  role is briefed, which tmux has no counterpart for.
* memory: ``--flooders`` roles each print ``--lines`` log lines (coloured,
  test-runner style) and go quiet; the server's resident memory once all
  output is taken, against the tmux server with the same panes and the same
  history limit (5,000 lines, the pane scrollback choragos keeps).  Beside
  the resident total, where it lies (``/proc/PID/smaps_rollup``): anonymous
  (the heap and the allocators' other memory) and file-backed (the program
  and its libraries, shared with other processes running them).

The keystroke latency of a big crew with floods is ``attach_latency.py
--roles 12 --flooders 3``.  Not part of the test suite.

    .venv/bin/python bench/big_crew.py [--roles 12] [--flooders 5] [--lines 100000] [--pairs 1]
                                       [--memory-only]

``--agent-boot S`` gives every agent a start that waits S seconds (the
fixture's ``--boot``), as an agent CLI's start waits on its disk and network.
``--memory-only`` measures the memory alone (no first frame on either side).
``--pairs N`` times N first frames, choragos and tmux back to back (the
memory with the last; ``--flooders 0`` skips it); the JSON line has every
pair's figures, the headline ratio the last pair's, and the CPU seconds the
``serve`` client and the server had used when the frame was seen (the
server's also in ms from the scheduler's count, finer than clock ticks).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.attach_latency import AGENT, COLS, ROWS, Screen, environment  # noqa: E402
from bench.common import (  # noqa: E402
    NO_CHECKPOINTS,
    crew_repo,
    emit,
    need_tmux,
    process_cpu,
    process_rss_mb,
    scratch,
    served,
    tmux_tiled,
)
from choragos.session.daemon import sidecar_for  # noqa: E402
from choragos.ui.layout import Layout  # noqa: E402

HISTORY = 5000
# The fixture agent's words: ``--agent-boot S`` adds ``--boot S``, an agent
# whose start waits S seconds (as an agent CLI waits on its disk and network).
AGENT_ARGS: list[str] = []
LOGGER = r"""
import os, sys
lines = int(sys.argv[1])
colours = ("\x1b[32mPASSED\x1b[0m", "\x1b[33mSKIPPED\x1b[0m", "\x1b[1;31mFAILED\x1b[0m")
batch = []
for n in range(lines):
    batch.append(f"tests/test_mod{n % 97}.py::test_case_{n} {colours[n % 3]} [{n % 100:3d}%]\n")
    if len(batch) == 500:
        os.write(1, "".join(batch).encode())
        batch = []
os.write(1, "".join(batch).encode())
print("LOGGER-DONE", flush=True)
import time
time.sleep(3600)
"""


def quiet(pid: int, still: float = 1.0, timeout: float = 600) -> None:
    """Wait until ``pid`` used (almost) no CPU for ``still`` seconds."""
    end = time.monotonic() + timeout
    before = process_cpu(pid)
    while time.monotonic() < end:
        time.sleep(still)
        now = process_cpu(pid)
        if now - before < 0.05 * still:
            return
        before = now
    raise SystemExit(f"process {pid} never went quiet")


def choragos(root: Path, roles: int, flooders: int, lines: int,
             marks: dict | None = None) -> dict[str, float]:
    """One first frame (and the memory, with ``flooders``); ``marks`` gets the
    start's and the frame's ``perf_counter`` times, the wall time at the start
    and the client's and the server's pids (``start_timeline.py``)."""
    work = root / "w"
    work.mkdir()
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    python, agent = json.dumps(sys.executable), json.dumps([str(AGENT), *AGENT_ARGS])
    parts = [f'[[roles]]\nname = "r0"\ncommand = {python}\nargs = {agent}\nstart = true\n\n']
    parts += [f'[[roles]]\nname = "r{i}"\ncommand = {python}\nargs = {agent}\n\n'
              for i in range(1, roles)]
    (work / ".choragos.toml").write_text(
        "".join(parts) + "[ui]\nauto_focus = false\nsidebar = false\n"
        "[checkpoints]\nenabled = false\n")
    env = environment(root)
    shown = len(Layout.main_vertical(f"r{i}" for i in range(roles)).visible())
    with killed(work, env):
        started = time.perf_counter()
        screen = Screen([sys.executable, "-m", "choragos", "serve"], env, work)
        try:
            screen.wait_for(lambda text: text.count("agent>") >= shown, 120)
            first_frame = time.perf_counter() - started
            # CPU to the first frame moves less with the machine's load than the wall time.
            server = _server_pid(Path(env["CHORAGOS_SOCK"]))
            if marks is not None:
                marks.update(t0=started, t1=started + first_frame, client=screen.proc.pid,
                             server=server, wall0=time.time() - (time.perf_counter() - started))
            cpu = {"client": process_cpu(screen.proc.pid), "server": process_cpu(server)}
            server_ms = threads_cpu_ms(server)
            briefed = "you said" in screen.text()
        finally:
            screen.close()
    memory = choragos_memory(root, flooders, lines) if flooders else {"rss_mb": 0.0}
    return {"first_frame_s": first_frame, "first_frame_cpu_s": cpu,
            "first_frame_server_cpu_ms": server_ms,
            "briefed_at_first_frame": briefed, **memory}


def threads_cpu_ms(pid: int) -> float:
    """The CPU time of a process's live threads in ms, from the scheduler's
    nanosecond count (``/proc/PID/task/*/schedstat``): finer than the clock
    ticks of ``process_cpu``, which round a start's 0.13 s to 10 ms; a thread
    that already ended is not counted."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError):
            total += int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[0])
    return total / 1e6


def _server_pid(control: Path) -> int:
    """The session server's pid, from the sidecar next to its socket."""
    return json.loads(sidecar_for(control).read_text())["pid"]


@contextlib.contextmanager
def killed(work: Path, env: dict[str, str]) -> Iterator[None]:
    """The session started in ``work`` by the block, killed with its agents
    however the block ends."""
    try:
        yield
    finally:
        subprocess.run([sys.executable, "-m", "choragos", "kill", "--all"], cwd=work, env=env,
                       capture_output=True, timeout=60)


def choragos_memory(root: Path, flooders: int, lines: int) -> dict[str, float]:
    (root / "log.py").write_text(LOGGER)
    logger = [sys.executable, str(root / "log.py"), str(lines)]
    work = crew_repo(root / "m", [(f"log{i}", logger) for i in range(flooders)], "log0",
                     NO_CHECKPOINTS)
    with served(work, environment(root), timeout=120) as pid:
        quiet(pid)
        return {"rss_mb": process_rss_mb(pid), **rss_parts(pid)}


def rss_parts(pid: int) -> dict[str, float]:
    """Where a process's resident memory lies, in MB: anonymous (the heap
    and the allocators' other memory) and file-backed (the program, its
    libraries, mapped files)."""
    fields = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        name, _, value = line.partition(":")
        fields[name] = int(value.split()[0]) / 1024
    anonymous = fields.get("Anonymous", 0.0)
    return {"anon_mb": anonymous, "file_mb": fields.get("Rss", 0.0) - anonymous}


def tmux(root: Path, roles: int, flooders: int, lines: int, binary: str,
         marks: dict | None = None) -> dict[str, float]:
    env = environment(root)
    server = [binary, "-L", f"crew-{os.getpid()}", "-f", "/dev/null"]
    started = time.perf_counter()
    pid = tmux_tiled(server, env, [" ".join([sys.executable, str(AGENT), *AGENT_ARGS])] * roles)
    screen = Screen([*server, "attach"], env, root)
    try:
        screen.wait_for(lambda text: text.count("agent>") >= roles, 120)
        first_frame = time.perf_counter() - started
        if marks is not None:
            marks.update(t0=started, t1=started + first_frame, client=screen.proc.pid, server=pid)
    finally:
        screen.close()
        subprocess.run([*server, "kill-server"], env=env, capture_output=True)
    if not flooders:
        return {"first_frame_s": first_frame, "rss_mb": 0.0}
    return {"first_frame_s": first_frame, **tmux_memory(root, flooders, lines, binary)}


def tmux_memory(root: Path, flooders: int, lines: int, binary: str) -> dict[str, float]:
    env = environment(root)
    (root / "log.py").write_text(LOGGER)
    logger = f"{sys.executable} {root / 'log.py'} {lines}"
    server = [binary, "-L", f"crew-memory-{os.getpid()}", "-f", "/dev/null"]
    subprocess.run([*server, "new-session", "-d", "-x", str(COLS), "-y", str(ROWS), "sleep 3600"],
                   env=env, check=True)
    subprocess.run([*server, "set-option", "-g", "history-limit", str(HISTORY)], env=env,
                   check=True)
    for _ in range(flooders):
        subprocess.run([*server, "new-window", "-d", logger], env=env, check=True)
    pid = int(subprocess.run([*server, "display-message", "-p", "#{pid}"], env=env, check=True,
                             capture_output=True, text=True).stdout.strip())
    try:
        quiet(pid)
        return {"rss_mb": process_rss_mb(pid), **rss_parts(pid)}
    finally:
        subprocess.run([*server, "kill-server"], env=env, capture_output=True)


def _pair(roles: int, flooders: int, lines: int, binary: str, before: dict) -> dict:
    """One run of each side, back to back; the first frames of the pairs
    ``before`` are kept beside this pair's (the memory is this run's, if any)."""
    results = {}
    with scratch("chc-") as root:
        results["choragos"] = choragos(root, roles, flooders, lines)
    with scratch("chc-") as root:
        results["tmux"] = tmux(root, roles, flooders, lines, binary)
    for side, found in results.items():
        print(f"  {side}: first frame {found['first_frame_s']:.2f} s, load "
              f"{os.getloadavg()[0]:.1f}", file=sys.stderr)
        if side in before:
            found["first_frames_s"] = [*before[side].get("first_frames_s", [
                before[side]["first_frame_s"]]), found["first_frame_s"]]
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--roles", type=int, default=12)
    parser.add_argument("--flooders", type=int, default=5)
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--pairs", type=int, default=1,
                        help="first frames timed, choragos and tmux back to back")
    parser.add_argument("--agent-boot", type=float, default=0.0, metavar="S",
                        help="each agent waits S seconds before its prompt (default 0)")
    parser.add_argument("--memory-only", action="store_true",
                        help="measure the memory alone, no first frame")
    args = parser.parse_args()
    if args.memory_only:
        memory_only(args)
        return
    if args.agent_boot:
        AGENT_ARGS.extend(["--boot", str(args.agent_boot)])
    binary = need_tmux()
    results = {}
    for _ in range(args.pairs - 1):  # the memory only once, with the last pair
        results = _pair(args.roles, 0, 0, binary, results)
    results = _pair(args.roles, args.flooders, args.lines, binary, results)
    ours, theirs = results["choragos"], results["tmux"]
    print(f"a crew of {args.roles} panes; {args.flooders} roles x {args.lines} lines of log")
    print(f"  {'':10} {'first frame s':>14} {'server RSS MB':>14}")
    for name, found in results.items():
        print(f"  {name:10} {found['first_frame_s']:14.2f} {found['rss_mb']:14.1f}")
    memory = ours["rss_mb"] / theirs["rss_mb"] if theirs["rss_mb"] else None
    emit("big_crew", {"first frame choragos/tmux": ours["first_frame_s"] / theirs["first_frame_s"],
                      "memory choragos/tmux": memory},
         first_frame_s={k: round(v["first_frame_s"], 2) for k, v in results.items()},
         first_frames_s={k: [round(t, 2) for t in v.get("first_frames_s", [])]
                          for k, v in results.items()},
         first_frame_cpu_s=ours["first_frame_cpu_s"],
         first_frame_server_cpu_ms=round(ours["first_frame_server_cpu_ms"], 1),
         **_memory_figures(results),
         briefed_at_first_frame=ours["briefed_at_first_frame"],
         roles=args.roles, flooders=args.flooders, lines=args.lines, history=HISTORY,
         agent_boot_s=args.agent_boot)


def memory_only(args: argparse.Namespace) -> None:
    binary = need_tmux()
    results = {}
    with scratch("chc-") as root:
        results["choragos"] = choragos_memory(root, args.flooders, args.lines)
    with scratch("chc-") as root:
        results["tmux"] = tmux_memory(root, args.flooders, args.lines, binary)
    print(f"{args.flooders} roles x {args.lines} lines of log")
    print(f"  {'':10} {'server RSS MB':>14} {'anonymous':>10} {'files':>6}")
    for name, found in results.items():
        print(f"  {name:10} {found['rss_mb']:14.1f} {found['anon_mb']:10.1f} "
              f"{found['file_mb']:6.1f}")
    emit("big_crew", {"memory choragos/tmux": results["choragos"]["rss_mb"]
                      / results["tmux"]["rss_mb"]},
         **_memory_figures(results), flooders=args.flooders, lines=args.lines, history=HISTORY)


def _memory_figures(results: dict[str, dict]) -> dict[str, dict[str, float]]:
    """The JSON line's memory figures: the total and where it lies, per side."""
    return {key: {k: round(v[key], 1) for k, v in results.items() if key in v}
            for key in ("rss_mb", "anon_mb", "file_mb")}


if __name__ == "__main__":
    main()
