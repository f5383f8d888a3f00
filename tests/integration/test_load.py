"""Nothing is dropped at the door: bursts of clients and idle connections."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pytest

from tests.integration.harness import role_toml

WORKERS = [f"w{n}" for n in range(8)]
TEAM = (role_toml("orchestrator", start=True) + "".join(role_toml(w) for w in WORKERS)
        + "[checkpoints]\nenabled = false\n")

# One client process: three delegations at once through the verbs' own client
# code (connect, retry with back-off until the deadline), then one JSON line.
# Every client waits at a barrier (EOF on an inherited pipe) after starting
# up, so all 600 requests go out together rather than spread over the
# seconds 200 interpreters take to start.
CLIENT = """
import json, os, sys, threading
from choragos.cli import _client
n, roles, gate = int(sys.argv[1]), sys.argv[2].split(","), int(sys.argv[3])
print("ready", flush=True)
os.read(gate, 1)
results = []
def one(k):
    payload = {"cmd": "delegate", "to": [roles[(n * 3 + k) % len(roles)]],
               "task": f"load task {n}.{k}", "brief": None}
    try:
        ack = _client.send(None, payload)
        results.append(ack["tasks"][0]["id"])
    except _client.Failure as failure:
        results.append("FAILED " + failure.message)
threads = [threading.Thread(target=one, args=(k,)) for k in range(3)]
for t in threads: t.start()
for t in threads: t.join()
print(json.dumps(results))
"""


@pytest.mark.slow
@pytest.mark.alone
@pytest.mark.timeout(400)
def test_600_concurrent_delegations_from_200_processes_all_acked_and_delivered(serve):
    s = serve(TEAM)
    s.wait_booted(["orchestrator", *WORKERS], timeout=60)
    gate_r, gate_w = os.pipe()
    procs = [subprocess.Popen([sys.executable, "-c", CLIENT, str(n), ",".join(WORKERS),
                               str(gate_r)], pass_fds=(gate_r,),
                              cwd=s.workdir, env=s.env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for n in range(200)]
    os.close(gate_r)
    for proc in procs:
        assert proc.stdout.readline() == "ready\n", proc.stderr.read()
    os.close(gate_w)  # go
    ids, failures = [], []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        for result in (json.loads(out) if out.strip() else [f"FAILED {err[-300:]}"]):
            (failures if result.startswith("FAILED") else ids).append(result)
    assert failures == [], f"{len(failures)} of 600 not acked: {failures[:3]}"
    assert len(set(ids)) == 600
    s.wait(lambda: all(t["state"] == "delivered" for t in s.board().values()), 300,
           message="all 600 delivered", interval=1.0)
    board = s.board()
    assert len(board) == 600
    typed = sum(len([x for x in s.submitted(w) if "New task" in x]) for w in WORKERS)
    assert typed == 600, f"{typed} task lines typed"


def test_200_idle_connections_do_not_stop_a_ping(serve):
    s = serve(role_toml("orchestrator", start=True))
    idle = [socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) for _ in range(200)]
    try:
        for conn in idle:
            conn.connect(str(s.sock))
        for _ in range(3):
            started = time.monotonic()
            out = s.cli("ping")
            # The CLI's own start-up is inside the measured time.
            assert out.returncode == 0, out.stderr
            assert time.monotonic() - started < 1.0 + _cli_startup(s)
    finally:
        for conn in idle:
            conn.close()


def _cli_startup(s) -> float:
    """How long a verb takes to start and fail against nothing, on this machine."""
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "choragos", "ping", "--sock", "/nonexistent.sock"],
                   env=s.env, capture_output=True, timeout=30)
    return time.monotonic() - started
