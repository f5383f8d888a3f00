"""Control-plane latency: `choragos delegate` against a bare socket client.

Both run as fresh Python processes against the same ControlServer on a
temporary socket, interleaved so machine noise hits both alike.  What is
compared is the whole wall time an agent waits per call: interpreter start,
imports, argument checks, the exchange.  Absolute numbers vary between
machines and runs; the ratio is the result.

    .venv/bin/python bench/delegate_latency.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
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
from choragos import wire  # noqa: E402
from choragos.ctlserver import ControlServer  # noqa: E402

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


def timed(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=30)
    elapsed = time.perf_counter() - started
    if done.returncode != 0 or not done.stdout.startswith("delegated T1"):
        raise SystemExit(f"benchmark run failed: {argv[:3]}: {done.stderr.strip()}")
    return elapsed


def measure(runs: int, sock: Path) -> tuple[list[float], list[float]]:
    env = {**os.environ, "CHORAGOS_SOCK": str(sock), "PYTHONPATH": str(REPO)}
    choragos = [sys.executable, "-m", "choragos", "delegate", "--to", "coder", "--task", "bench"]
    bare = [sys.executable, "-c", BARE_CLIENT]
    for argv in (choragos, bare):  # warm the page cache before timing
        timed(argv, env)
    ours, floor = [], []
    for _ in range(runs):
        ours.append(timed(choragos, env))
        floor.append(timed(bare, env))
    return ours, floor


def report(ours: list[float], floor: list[float]) -> None:
    def line(name: str, samples: list[float]) -> str:
        q = statistics.quantiles(samples, n=10)
        return (f"{name:<18} median {statistics.median(samples) * 1e3:7.1f} ms"
                f"   p10 {q[0] * 1e3:6.1f}   p90 {q[-1] * 1e3:6.1f}")

    print(f"runs: {len(ours)} each, interleaved; python {sys.version.split()[0]}")
    if sys.flags.dont_write_bytecode or os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print("note: bytecode caching is off here, so every run compiles choragos' modules")
    print(line("choragos delegate", ours))
    print(line("bare socket client", floor))
    ratio = statistics.median(ours) / statistics.median(floor)
    print(f"ratio (median): {ratio:.2f}x")
    emit("delegate_latency", {"delegate/bare client": ratio}, runs=len(ours),
         median_ms={"delegate": round(statistics.median(ours) * 1e3, 2),
                    "bare client": round(statistics.median(floor) * 1e3, 2)})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30, help="runs per client (default 30)")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="chg-bench-", dir="/tmp"))
    try:
        with ControlServer(tmp / "c.sock", handler):
            ours, floor = measure(max(args.runs, 2), tmp / "c.sock")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    report(ours, floor)
    return 0


if __name__ == "__main__":
    sys.exit(main())
