"""Control-plane latency: `choragos delegate` against a bare socket client.

Both run as fresh Python processes against the same ControlServer on a
temporary socket, interleaved so machine noise hits both alike.  What is
compared is the whole wall time an agent waits per call: interpreter start,
imports, argument checks, the exchange; and beside it the CPU time each
call took (steadier than wall time on a loaded machine).  Absolute numbers
vary between machines and runs; the ratio is the result.

choragos' modules are compiled to bytecode first, as an install compiles
them (pip does, and Python caches what it imports unless
``PYTHONDONTWRITEBYTECODE`` is set); with ``--source`` every run compiles
them from source instead, from a copy without bytecode, which is what a
checkout costs when bytecode caching is off.  With ``--no-site`` both
clients start without ``site``: a checkout's editable install has site
load pathlib, re and more before either client runs, which an installed
choragos does not.

    .venv/bin/python bench/delegate_latency.py [--runs N] [--durable] [--source] [--no-site]

With ``--durable`` the server behind ``choragos delegate`` journals each
delegation as the session core does (a task record and a queue record,
then an fsync before the ack), while the bare client still talks to the
plain server: the ratio then includes the whole cost of durability.
"""

from __future__ import annotations

import argparse
import compileall
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.common import emit  # noqa: E402  (needs the path set above)
from choragos.board.journal import Journal  # noqa: E402
from choragos.control import wire  # noqa: E402
from choragos.control.server import ControlServer  # noqa: E402

# The same exchange with nothing but socket and json: the floor for any
# Python client of the protocol.
BARE_CLIENT = """
import json, os, socket
conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
conn.settimeout(5)
conn.connect(os.environ["CHORAGOS_SOCK"])
conn.sendall(json.dumps({"cmd": "delegate", "to": ["coder"], "task": "bench"}).encode() + b"\\n")
conn.shutdown(socket.SHUT_WR)
data = b""
while chunk := conn.recv(65536):
    data += chunk
ack = json.loads(data)
print("delegated", ack["tasks"][0]["id"], "to", ack["tasks"][0]["role"])
"""


def handler(request: dict) -> dict:
    return wire.ok(tasks=[{"id": "T1", "role": role, "state": "queued"}
                          for role in request.get("to", [])])


class DurableHandler:
    """What the core writes for one delegation, synced before the ack."""

    def __init__(self, directory: Path) -> None:
        self.journal = Journal(directory)
        self.journal.start()  # group commit, as in the server
        self.costs: list[float] = []

    def __call__(self, request: dict) -> dict:
        started = time.perf_counter()
        for role in request.get("to", []):
            self.journal.append("task", task={"id": "T1", "role": role, "state": "queued",
                                              "text": request.get("task")})
            self.journal.append("enqueue", id=1, role=role, text="New task T1", what="task",
                                task="T1", front=False)
        self.journal.wait_synced()
        self.costs.append(time.perf_counter() - started)
        return handler(request)


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=30)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0 or not done.stdout.startswith("delegated T1"):
        raise SystemExit(f"benchmark run failed: {argv[:3]}: {done.stderr.strip()}")
    return elapsed, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def code_from(source: bool, tmp: Path) -> Path:
    """Where the runs import choragos from: this checkout, compiled; or with
    ``source`` a copy of it without bytecode, never cached."""
    if not source:
        compileall.compile_dir(REPO / "choragos", quiet=1)
        return REPO
    shutil.copytree(REPO / "choragos", tmp / "code" / "choragos",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return tmp / "code"


def measure(runs: int, sock: Path, floor_sock: Path, code: Path, source: bool,
            no_site: bool) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
    env = {**os.environ, "CHORAGOS_SOCK": str(sock), "PYTHONPATH": str(code)}
    if source:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    floor_env = {**env, "CHORAGOS_SOCK": str(floor_sock)}
    python = [sys.executable, *(["-S"] if no_site else [])]
    choragos = [*python, "-m", "choragos", "delegate", "--to", "coder", "--task", "bench"]
    bare = [*python, "-c", BARE_CLIENT]
    timed(choragos, env, code)  # warm the page cache before timing
    timed(bare, floor_env, code)
    ours, floor = [], []
    for _ in range(runs):
        ours.append(timed(choragos, env, code))
        floor.append(timed(bare, floor_env, code))
    return ours, floor


def report(ours: list[tuple[float, float]], floor: list[tuple[float, float]],
           source: bool, no_site: bool) -> None:
    def line(name: str, samples: list[tuple[float, float]]) -> str:
        walls = [wall for wall, _ in samples]
        q = statistics.quantiles(walls, n=10)
        return (f"{name:<18} median {statistics.median(walls) * 1e3:7.1f} ms"
                f"   p10 {q[0] * 1e3:6.1f}   p90 {q[-1] * 1e3:6.1f}"
                f"   CPU median {_median(samples, 1) * 1e3:6.1f} ms")

    print(f"runs: {len(ours)} each, interleaved; python {sys.version.split()[0]}; "
          + ("from source, no bytecode: every run compiles choragos' modules" if source
             else "choragos' modules compiled to bytecode first, as an install does")
          + ("; without site" if no_site else ""))
    print(line("choragos delegate", ours))
    print(line("bare socket client", floor))
    ratio = _median(ours, 0) / _median(floor, 0)
    cpu = _median(ours, 1) / _median(floor, 1)
    print(f"ratio (median): {ratio:.2f}x wall, {cpu:.2f}x CPU")
    emit("delegate_latency", {"delegate/bare client": ratio,
                              "delegate/bare client CPU": cpu}, runs=len(ours),
         source=source, no_site=no_site,
         median_ms={"delegate": round(_median(ours, 0) * 1e3, 2),
                    "bare client": round(_median(floor, 0) * 1e3, 2)},
         median_cpu_ms={"delegate": round(_median(ours, 1) * 1e3, 2),
                        "bare client": round(_median(floor, 1) * 1e3, 2)})


def _median(samples: list[tuple[float, float]], which: int) -> float:
    return statistics.median(sample[which] for sample in samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30, help="runs per client (default 30)")
    parser.add_argument("--durable", action="store_true",
                        help="journal and fsync each delegation before its ack")
    parser.add_argument("--source", action="store_true",
                        help="run choragos from a copy without bytecode, compiled every run")
    parser.add_argument("--no-site", action="store_true",
                        help="start both clients without site (python -S), as without an "
                             "editable install")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="chg-bench-", dir=os.environ.get("BENCH_DIR", "/tmp")))
    durable = DurableHandler(tmp / "state") if args.durable else None
    try:
        with ControlServer(tmp / "c.sock", durable or handler), \
                ControlServer(tmp / "f.sock", handler):
            ours, floor = measure(max(args.runs, 2), tmp / "c.sock", tmp / "f.sock",
                                  code_from(args.source, tmp), args.source, args.no_site)
    finally:
        if durable is not None:
            durable.journal.close()
        shutil.rmtree(tmp, ignore_errors=True)
    report(ours, floor, args.source, args.no_site)
    if durable is not None:
        print(f"journal append + fsync in the server: median "
              f"{statistics.median(durable.costs) * 1e3:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
