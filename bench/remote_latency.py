"""Remote seats: keystroke-to-screen for a role on another machine, next to
the same program under tmux through ``ssh -tt`` to the same host, and
delegate to the task on the remote pane's screen.

The host is a private sshd on a loopback port logging in to an account of
its own (the remote-seat tests' server, ``tests/remote/sshd.py``; it needs
root), so what is measured is what ssh and choragos add, not a network.
Both setups run the echo agent (the test fixture, copied into that
account's home) over ssh; the client -- ``choragos attach`` or ``tmux
attach`` -- runs in a PTY of this script, and a probe types four unique
characters and times until they are in the client's output (the probes of
``attach_latency.py``).  Rounds alternate between the two setups so machine
noise hits both alike; the ratio is the result (goal: at most 1.3).

Then, in the choragos session, ``choragos delegate`` to the remote role and
to a local one beside it, timed from the call to the task's line (its
``Tn.md``) on the attached screen: what a remote seat adds to a delegation
(the mirror's commit pushed and the task file written there, over the
host's one connection).  Not part of the test suite.

    sudo .venv/bin/python bench/remote_latency.py [--probes N] [--rounds R]
                                                  [--delegations D]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.attach_latency import (  # noqa: E402
    AGENT,
    COLS,
    ROWS,
    Screen,
    _attached,
    environment,
    probe_round,
    summary,
)
from bench.common import NO_CHECKPOINTS, QUIET_DECK, emit, scratch, served  # noqa: E402
from tests.remote import sshd  # noqa: E402

ACCOUNT = "choragos-remote-bench"


@contextlib.contextmanager
def remote_host(root: Path) -> Iterator[sshd.Server]:
    """The loopback sshd and its account, with the echo agent in its home."""
    try:
        server = sshd.start(root / "sshd", ACCOUNT)
    except sshd.Unavailable as exc:
        raise SystemExit(f"no remote host for the bench: {exc}") from None
    try:
        copied = server.run("sh", "-c", "cat > ~/agent.py", stdin=AGENT.read_text())
        if copied.returncode != 0:
            raise SystemExit(f"cannot copy the agent there: {copied.stderr}")
        yield server
    finally:
        server.run("sh", "-c", "rm -rf ~/.choragos-remote ~/choragos-work", timeout=30)
        server.stop()


@contextlib.contextmanager
def choragos_screen(root: Path, server: sshd.Server) -> Iterator[Screen]:
    """A session whose ``echo`` role runs on the host (and ``here`` beside it), attached."""
    work = root / "w"
    work.mkdir()
    for args in (["init", "-q"], ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q",
                                  "--allow-empty", "-m", "init"]):
        subprocess.run(["git", *args], cwd=work, check=True)
    python = json.dumps(sys.executable)
    (work / ".choragos.toml").write_text(
        f"[hosts.box]\nssh = {json.dumps(server.destination)}\n"
        f"ssh_args = {json.dumps(server.ssh_args)}\n\n"
        f'[[roles]]\nname = "echo"\ncommand = "python3"\n'
        f"args = {json.dumps([str(server.home / 'agent.py')])}\n"
        f'host = "box"\nstart = true\nmerge = "never"\n\n'
        f'[[roles]]\nname = "here"\ncommand = {python}\nargs = [{json.dumps(str(AGENT))}]\n\n'
        + QUIET_DECK + NO_CHECKPOINTS)
    env = environment(root)
    with served(work, env, timeout=120) as pid:
        yield from _attached([sys.executable, "-m", "choragos", "attach"], env, work,
                             lambda text: "you said: You are the echo role" in text
                             and "you said: You are the here role" in text, 120, pid)


@contextlib.contextmanager
def tmux_screen(root: Path, server: sshd.Server, tmux: str) -> Iterator[Screen]:
    """The same agent in a tmux pane through ``ssh -tt`` to the same host."""
    env = environment(root)
    socket = [tmux, "-L", f"bench-{os.getpid()}", "-f", "/dev/null"]
    remote = shlex.join(["ssh", *server.ssh_args, "-tt", server.destination, "--",
                         f"python3 {server.home / 'agent.py'}"])
    try:
        subprocess.run([*socket, "new-session", "-d", "-x", str(COLS), "-y", str(ROWS),
                        remote], env=env, check=True)
        subprocess.run([*socket, "set", "-g", "status", "off"], env=env, check=True)
        pid = int(subprocess.run([*socket, "display-message", "-p", "#{pid}"], env=env,
                                 check=True, capture_output=True, text=True).stdout.strip())
        yield from _attached([*socket, "attach"], env, root, lambda text: "agent>" in text,
                             60, pid)
    finally:
        subprocess.run([*socket, "kill-server"], env=env, capture_output=True)


def delegations(screen: Screen, work: Path, env: dict[str, str],
                count: int) -> dict[str, list[float]]:
    """Seconds from ``choragos delegate`` to the task's line on the screen, per role."""
    took: dict[str, list[float]] = {"echo": [], "here": []}
    number = 0
    for _ in range(count):
        for role in took:
            number += 1
            started = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "choragos", "delegate", "--to", role,
                                   "--task", f"bench task {number}"], cwd=work, env=env,
                                  capture_output=True, text=True, timeout=60)
            if done.returncode != 0:
                raise SystemExit(f"delegate failed: {done.stderr}")
            screen.wait_for(lambda text, n=number: f"T{n}.md" in text, 30)
            took[role].append(time.perf_counter() - started)
            time.sleep(0.3)
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--probes", type=int, default=15, help="probes per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--delegations", type=int, default=5,
                        help="delegations per role, in a session of their own")
    args = parser.parse_args()
    tmux = shutil.which("tmux")
    if tmux is None:
        raise SystemExit("tmux is needed for the reference measurement")
    results: dict[str, list[float]] = {"choragos": [], "ssh+tmux": []}
    busy = {name: [0.0, 0.0, 0, 0] for name in results}  # probe_round's CPU, wall, wake-ups, probes
    missed = dict.fromkeys(results, 0)
    delegated: dict[str, list[float]] = {}
    number = 0
    with scratch("chr-") as base, remote_host(base) as server:
        for _ in range(args.rounds):
            for name in results:
                with scratch("chb-") as root:
                    setup = (choragos_screen(root, server) if name == "choragos"
                             else tmux_screen(root, server, tmux))
                    with setup as screen:
                        time.sleep(1.0)
                        number = probe_round(screen, args.probes, number, results[name],
                                             busy[name])
                        missed[name] += screen.missed
        with scratch("chb-") as root, choragos_screen(root, server) as screen:
            delegated = delegations(screen, root / "w", environment(root), args.delegations)
    print(f"keystroke-to-screen latency, a seat on a loopback ssh host, {COLS}x{ROWS}, "
          f"{os.cpu_count()} CPUs")
    server_pct = {name: round(100 * b[0] / b[1], 1) for name, b in busy.items()}
    for name, samples in results.items():
        print(f"{summary(name, samples)}   server CPU {server_pct[name]:.0f}% of a core")
    ratio = statistics.median(results["choragos"]) / statistics.median(results["ssh+tmux"])
    print(f"ratio (median choragos / median ssh -tt under tmux): {ratio:.2f}  (goal <= 1.3)")
    medians = {role: round(statistics.median(s) * 1000, 1) for role, s in delegated.items()}
    print(f"delegate -> task on the pane: remote {medians['echo']:.0f} ms, "
          f"local {medians['here']:.0f} ms (median of {args.delegations} each; "
          "the CLI's own start included)")
    emit("remote_latency", {"choragos/ssh+tmux": ratio},
         median_ms={name: round(statistics.median(s) * 1000, 2) for name, s in results.items()},
         probes=len(results["ssh+tmux"]), missed=missed, server_cpu_pct=server_pct,
         delegate_ms=medians)


if __name__ == "__main__":
    main()
