"""What every bench shares: the machine it ran on, and its one JSON line.

Each bench prints its tables for people and, last, one line of JSON for
scripts (``make bench`` output can be grepped for ``{"bench":``), so figures
can be compared run to run.  Ratios are against a reference measured in the
same run (tmux, git, a bare client), because absolute times depend on the
machine and on whatever else runs on it; the load average is recorded
beside them for that reason.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from choragos.session.daemon import sidecar_for

COLS, ROWS = 160, 50
# A crew's deck kept still for the bench: no focus moves, no sidebar.
QUIET_DECK = "[ui]\nauto_focus = false\nsidebar = false\n"
NO_CHECKPOINTS = "[checkpoints]\nenabled = false\n"


def machine() -> dict[str, object]:
    """CPU count, model and the load averages at the time of the call."""
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = []
    return {"cpus": os.cpu_count(), "cpu": model, "load": load,
            "python": platform.python_version()}


def emit(bench: str, ratios: dict[str, float | None], **figures: object) -> None:
    """Print the bench's machine-readable line: its ratios and raw figures."""
    line = {"bench": bench,
            "ratios": {k: (round(v, 3) if isinstance(v, float) else v) for k, v in ratios.items()},
            **figures, "machine": machine()}
    print(json.dumps(line, sort_keys=False), flush=True)


def need_tmux() -> str:
    """tmux's path; the benches measure against it."""
    found = shutil.which("tmux")
    if found is None:
        raise SystemExit("tmux is needed for the reference measurement")
    return found


@contextlib.contextmanager
def scratch(prefix: str) -> Iterator[Path]:
    """A temp directory under /tmp (short: unix socket paths), removed after."""
    root = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def crew_repo(work: Path, members: Iterable[tuple[str, Sequence[str]]], start: str,
              extra: str = "") -> Path:
    """``work``, a new git repository whose ``.choragos.toml`` runs each (name,
    argv) of ``members`` as a role, ``start`` the start role, then ``extra``."""
    work.mkdir()
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    roles = "".join(f'[[roles]]\nname = "{name}"\ncommand = {json.dumps(argv[0])}\n'
                    f"args = {json.dumps(list(argv[1:]))}\nstart = {json.dumps(name == start)}\n\n"
                    for name, argv in members)
    (work / ".choragos.toml").write_text(roles + extra)
    return work


@contextlib.contextmanager
def served(work: Path, env: dict[str, str], timeout: float = 60) -> Iterator[int]:
    """A detached choragos session in ``work``, its server's pid, killed with its
    agents however the block ends (a failed start, a probe timing out, Ctrl-C,
    SIGTERM from ``timeout`` or a CI runner): a bench that fails must not leave a
    flooding crew to load the machine's next run."""
    with _term_unwinds():
        yield from _served(work, env, timeout)


@contextlib.contextmanager
def _term_unwinds() -> Iterator[None]:
    """SIGTERM raises SystemExit in the main thread for the block, so the
    ``finally`` clauses run; by default it ends the process without them."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def unwind(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, unwind)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _served(work: Path, env: dict[str, str], timeout: float) -> Iterator[int]:
    try:
        started = subprocess.run([sys.executable, "-m", "choragos", "serve", "--detach"],
                                 cwd=work, env=env, capture_output=True, text=True,
                                 timeout=timeout)
        if started.returncode != 0:
            raise SystemExit(f"choragos serve --detach failed: {started.stderr}")
        sidecar = sidecar_for(Path(env["CHORAGOS_SOCK"]))
        yield int(json.loads(sidecar.read_text())["pid"])
    finally:
        subprocess.run([sys.executable, "-m", "choragos", "kill", "--all"], cwd=work, env=env,
                       capture_output=True, timeout=60)


def tmux_tiled(server: list[str], env: dict[str, str], commands: list[str]) -> int:
    """A tmux session of COLS x ROWS with one tiled pane per command; the server's pid."""
    subprocess.run([*server, "new-session", "-d", "-x", str(COLS), "-y", str(ROWS),
                    commands[0]], env=env, check=True)
    for command in commands[1:]:
        subprocess.run([*server, "split-window", "-d", command], env=env, check=True)
        subprocess.run([*server, "select-layout", "tiled"], env=env, check=True)
    return int(subprocess.run([*server, "display-message", "-p", "#{pid}"], env=env,
                              check=True, capture_output=True, text=True).stdout.strip())


def process_cpu(pid: int) -> float:
    """User+system CPU seconds of a process (not its children), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def process_wakeups(pid: int) -> int:
    """How often the threads of a process went to sleep and woke again so
    far (the kernel's voluntary context switches, summed over its threads;
    threads that ended are not counted)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/task/{tid}/status").read_text().splitlines():
                if line.startswith("voluntary_ctxt_switches:"):
                    total += int(line.split()[1])
    return total


def thread_clocks(pid: int) -> dict[int, tuple[int, int]]:
    """Each thread of a process: (CPU ns, ns it waited on a run queue for a
    core) so far, from /proc's schedstat; threads gone meanwhile left out."""
    clocks = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError, ValueError):
            cpu, queued, _slices = Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()
            clocks[int(tid)] = (int(cpu), int(queued))
    return clocks


def process_rss_mb(pid: int) -> float:
    """Resident memory of a process in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0
