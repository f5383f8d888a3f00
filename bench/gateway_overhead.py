"""Built-in gateway overhead: first byte and throughput, against a direct connection.

One local upstream streams server-sent events (HTTP/1.1, chunked, kept
alive), as a model API does.  The same requests go to it directly and
through a real ``choragos gateway`` process, interleaved so machine noise
hits both alike, each client on one kept-alive connection as agents do.

- first byte: from sending a streaming request to holding the first event;
- whole answer: the same short stream read to its end (the gateway counts
  it, and with ``--state`` journals it, before sending the end);
- throughput: a long stream of 1 KiB events read to its end (usage counted
  by the gateway on the way, as in real use), and the gateway process's CPU
  time per MiB it relayed (steadier than the rate on a loaded machine: on
  two cores the gateway competes with this process, which plays both the
  upstream and the agent);
- a bare relay, for reference: a process of its own that only copies bytes
  each way (``recv_into`` a buffer, ``sendall``; no HTTP, no meter), read
  the same way between the same two.  What it reaches, of direct and in CPU
  per MiB, is the most any relay in Python gets from the machine as loaded
  at that moment.

Absolute numbers vary between machines and runs; the differences and the
ratio are the result.

    .venv/bin/python bench/gateway_overhead.py [--runs N] [--mib M] [--state FILE]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIRST = b'event: message_start\ndata: {"type":"message_start","message":{"model":"bench",' \
        b'"usage":{"input_tokens":10,"output_tokens":1}}}\n\n'
LAST = b'event: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":5}}\n\n'
EVENT = b"event: content_block_delta\ndata: " + json.dumps(
    {"type": "content_block_delta", "delta": {"type": "text_delta", "text": "x" * 940}}
).encode() + b"\n\n"


class Upstream(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # as a tuned API server: no 40 ms delayed-ACK stalls

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self._chunk(FIRST)
        events = int(body.get("events", 0))
        batch = EVENT * 16
        for _ in range(events // 16):
            self._chunk(batch)
        self._chunk(LAST)
        self.wfile.write(b"0\r\n\r\n")

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))


def start_upstream() -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_gateway(upstream: str, state: str | None) -> tuple[subprocess.Popen, int]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "choragos", "gateway", "--addr", f"127.0.0.1:{port}",
         "--anthropic", upstream, *(["--state", state] if state else [])],
        cwd=REPO, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL)
    line = proc.stdout.readline()
    if not line.startswith(b"listening"):
        raise SystemExit(f"the gateway did not start: {line!r}")
    return proc, port


def bare_relay(upstream_port: int) -> None:
    """Relay every connection to the upstream byte for byte (the reference)."""
    listener = socket.create_server(("127.0.0.1", 0))
    print("listening", listener.getsockname()[1], flush=True)

    def pump(source: socket.socket, sink: socket.socket) -> None:
        buf = bytearray(1 << 18)
        with memoryview(buf) as view:
            while got := source.recv_into(buf):
                sink.sendall(view[:got])

    def serve(agent: socket.socket) -> None:
        upstream = socket.create_connection(("127.0.0.1", upstream_port))
        for sock in (agent, upstream):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=pump, args=(agent, upstream), daemon=True).start()
        pump(upstream, agent)

    while True:
        threading.Thread(target=serve, args=(listener.accept()[0],), daemon=True).start()


def start_bare_relay(upstream_port: int) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen([sys.executable, __file__, "--bare-relay", str(upstream_port)],
                            stdout=subprocess.PIPE)
    line = proc.stdout.readline()
    if not line.startswith(b"listening"):
        raise SystemExit(f"the bare relay did not start: {line!r}")
    return proc, int(line.split()[1])


class Client:
    """One kept-alive connection, as an agent holds one."""

    def __init__(self, port: int, path: str) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.conn.connect()
        # Node's HTTP client (every agent CLI here) sets TCP_NODELAY too.
        self.conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.path = path

    def first_byte(self) -> tuple[float, float]:
        """Seconds to the first event, and to the end of the answer."""
        started = time.perf_counter()
        response = self._ask(0)
        first = response.read1(65536)
        elapsed = time.perf_counter() - started
        assert first.startswith(b"event: message_start"), first[:60]
        response.read()
        return elapsed, time.perf_counter() - started

    def throughput(self, events: int) -> float:
        started = time.perf_counter()
        response = self._ask(events)
        size = 0
        while piece := response.read1(1 << 20):
            size += len(piece)
        return size / (time.perf_counter() - started) / (1 << 20)

    def _ask(self, events: int) -> http.client.HTTPResponse:
        self.conn.request("POST", self.path, body=json.dumps({"events": events}),
                          headers={"Content-Type": "application/json", "x-api-key": "bench"})
        return self.conn.getresponse()


def cpu_seconds(pid: int) -> float | None:
    """A process's CPU time (Linux's /proc; None elsewhere): the nanoseconds its
    threads have run (schedstat), else its user + system clock ticks (10 ms
    each, too coarse for a few MiB).  The threads measured here (the server's
    and its one connection's) live through the measurement, so none is lost."""
    try:
        return sum(int(Path(f"/proc/{pid}/task/{task}/schedstat").read_text().split()[0])
                   for task in os.listdir(f"/proc/{pid}/task")) / 1e9
    except (OSError, ValueError, IndexError):
        pass
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200, help="first-byte samples per path")
    parser.add_argument("--mib", type=int, default=64, help="size of each throughput stream")
    parser.add_argument("--streams", type=int, default=5, help="throughput samples per path")
    parser.add_argument("--state", metavar="FILE", help="run the gateway with --state FILE")
    parser.add_argument("--bare-relay", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bare_relay:
        bare_relay(args.bare_relay)
        return
    upstream = start_upstream()
    proc, port = start_gateway(f"http://127.0.0.1:{upstream.server_address[1]}", args.state)
    try:
        relay, relay_port = start_bare_relay(upstream.server_address[1])
    except SystemExit:
        proc.terminate()
        raise
    try:
        direct = Client(upstream.server_address[1], "/v1/messages")
        gateway = Client(port, "/agent/bench/v1/messages")
        bare = Client(relay_port, "/v1/messages")
        bare.first_byte()
        for client in (direct, gateway):  # warm both connections
            client.first_byte()
        firsts: dict[str, list[float]] = {"direct": [], "gateway": []}
        wholes: dict[str, list[float]] = {"direct": [], "gateway": []}
        for _ in range(args.runs):
            for path, client in (("direct", direct), ("gateway", gateway)):
                first, whole = client.first_byte()
                firsts[path].append(first)
                wholes[path].append(whole)
        events = args.mib * 1024
        rates: dict[str, list[float]] = {"direct": [], "gateway": [], "bare relay": []}
        spent = {"gateway": 0.0, "bare relay": 0.0}
        for _ in range(args.streams):
            rates["direct"].append(direct.throughput(events))
            for path, client, pid in (("gateway", gateway, proc.pid),
                                      ("bare relay", bare, relay.pid)):
                before = cpu_seconds(pid)
                rates[path].append(client.throughput(events))
                after = cpu_seconds(pid)
                spent[path] += after - before if None not in (before, after) else float("nan")
    finally:
        for child in (proc, relay):
            child.terminate()
            child.wait(5)
        upstream.shutdown()
    report(firsts, wholes, rates, args,
           {k: v * 1000 / (args.mib * args.streams) for k, v in spent.items()})


def report(firsts: dict[str, list[float]], wholes: dict[str, list[float]],
           rates: dict[str, list[float]], args, cpu_ms_per_mib: dict[str, float]) -> None:
    ms = {k: statistics.median(v) * 1000 for k, v in firsts.items()}
    whole = {k: statistics.median(v) * 1000 for k, v in wholes.items()}
    p90 = {k: percentile(v, 0.9) * 1000 for k, v in firsts.items()}
    mbs = {k: statistics.median(v) for k, v in rates.items()}
    print(f"{'path':<10}{'first byte p50':>16}{'p90':>10}{'throughput':>14}")
    for path in ("direct", "gateway"):
        print(f"{path:<10}{ms[path]:>13.3f} ms{p90[path]:>7.3f} ms{mbs[path]:>9.1f} MiB/s")
    overhead = ms["gateway"] - ms["direct"]
    print(f"first-byte overhead {overhead:.3f} ms (p50); whole short answer "
          f"{whole['gateway'] - whole['direct']:.3f} ms (p50); throughput through the gateway "
          f"{mbs['gateway'] / mbs['direct']:.0%} of direct; the gateway's CPU "
          f"{cpu_ms_per_mib['gateway']:.2f} ms per MiB relayed")
    print(f"for reference, a bare relay (no HTTP, no meter): {mbs['bare relay']:.1f} MiB/s, "
          f"{mbs['bare relay'] / mbs['direct']:.0%} of direct, its CPU "
          f"{cpu_ms_per_mib['bare relay']:.2f} ms per MiB")
    print(json.dumps({"bench": "gateway_overhead", "runs": args.runs, "stream_mib": args.mib,
                      "state": bool(args.state),
                      "whole_answer_ms": {k: round(v, 3) for k, v in whole.items()},
                      "first_byte_ms": {k: round(v, 3) for k, v in ms.items()},
                      "first_byte_p90_ms": {k: round(v, 3) for k, v in p90.items()},
                      "first_byte_overhead_ms": round(overhead, 3),
                      "throughput_mib_s": {k: round(v, 1) for k, v in mbs.items()},
                      "throughput_ratio": round(mbs["gateway"] / mbs["direct"], 3),
                      "gateway_cpu_ms_per_mib": round(cpu_ms_per_mib["gateway"], 3),
                      "bare_relay_ratio": round(mbs["bare relay"] / mbs["direct"], 3),
                      "bare_relay_cpu_ms_per_mib": round(cpu_ms_per_mib["bare relay"], 3),
                      "load": [round(x, 2) for x in os.getloadavg()]}))


if __name__ == "__main__":
    main()
