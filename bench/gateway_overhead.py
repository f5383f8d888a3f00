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
  at that moment;
- with ``--splice`` (Linux), a bare splice relay beside it: the answers'
  bytes moved by the kernel (``splice`` from the upstream's socket into a
  pipe, ``tee`` to a second pipe, ``splice`` on to the agent's socket) and
  the tee'd copy read into a buffer, as a relay that reads the stream on the
  way would: one copy to userspace where the copying relay makes two.

Absolute numbers vary between machines and runs; the differences and the
ratio are the result.

    .venv/bin/python bench/gateway_overhead.py [--runs N] [--mib M] [--state FILE] [--splice]
"""

from __future__ import annotations

import argparse
import ctypes
import fcntl
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
SPLICES = sys.platform == "linux" and hasattr(os, "splice")  # the splice relay can run
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


PIECE = 1 << 18  # a relay's read


def copy_pump(source: socket.socket, sink: socket.socket) -> None:
    """Copy one way until the source closes: ``recv_into`` a buffer, ``sendall``."""
    buf = bytearray(PIECE)
    with memoryview(buf) as view:
        while got := source.recv_into(buf):
            sink.sendall(view[:got])


def splice_pump(source: socket.socket, sink: socket.socket) -> None:
    """Move the bytes one way through the kernel until the source closes: splice
    into a pipe, tee it to a second, read that copy, splice the first on."""
    libc = ctypes.CDLL(None, use_errno=True)
    tee = libc.tee
    tee.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.c_size_t, ctypes.c_uint)
    tee.restype = ctypes.c_ssize_t
    pipes = [os.pipe(), os.pipe()]
    for _, end in pipes:
        fcntl.fcntl(end, fcntl.F_SETPIPE_SZ, PIECE)
    (out_a, in_a), (out_b, in_b) = pipes
    buf = bytearray(PIECE)
    src, dst = source.fileno(), sink.fileno()
    with memoryview(buf) as view:
        while got := os.splice(src, in_a, PIECE):
            # The second pipe is empty and as large: the tee takes all of it.
            if tee(out_a, in_b, got, 0) != got:
                raise OSError(ctypes.get_errno(), "tee fell short")
            read = 0
            while read < got:
                read += os.readv(out_b, [view[read:got]])
            # (here a gateway reads view[:got]: the framing, the meter)
            sent = 0
            while sent < got:
                sent += os.splice(out_a, dst, got - sent)
    for fd in (out_a, in_a, out_b, in_b):
        os.close(fd)


def bare_relay(upstream_port: int, answers=copy_pump) -> None:
    """Relay every connection to the upstream byte for byte (the reference): the
    requests copied, the answers by ``answers``."""
    listener = socket.create_server(("127.0.0.1", 0))
    print("listening", listener.getsockname()[1], flush=True)

    def serve(agent: socket.socket) -> None:
        upstream = socket.create_connection(("127.0.0.1", upstream_port))
        for sock in (agent, upstream):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=copy_pump, args=(agent, upstream), daemon=True).start()
        answers(upstream, agent)

    while True:
        threading.Thread(target=serve, args=(listener.accept()[0],), daemon=True).start()


def start_bare_relay(upstream_port: int,
                     kind: str = "--bare-relay") -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen([sys.executable, __file__, kind, str(upstream_port)],
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
    parser.add_argument("--splice", action="store_true",
                        help="also measure a bare splice relay (Linux)")
    parser.add_argument("--splice-relay", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bare_relay:
        bare_relay(args.bare_relay)
        return
    if args.splice_relay:
        bare_relay(args.splice_relay, splice_pump)
        return
    upstream = start_upstream()
    upstream_port = upstream.server_address[1]
    proc, port = start_gateway(f"http://127.0.0.1:{upstream_port}", args.state)
    children = [proc]
    try:
        relay, relay_port = start_bare_relay(upstream_port)
        children.append(relay)
        relays = [("bare relay", relay, relay_port)]
        if args.splice and SPLICES:
            spliced, spliced_port = start_bare_relay(upstream_port, "--splice-relay")
            children.append(spliced)
            relays.append(("splice relay", spliced, spliced_port))
    except SystemExit:
        for child in children:
            child.terminate()
        raise
    try:
        direct = Client(upstream_port, "/v1/messages")
        gateway = Client(port, "/agent/bench/v1/messages")
        measured = [("gateway", gateway, proc.pid)]
        for path, child, relay_port in relays:
            measured.append((path, Client(relay_port, "/v1/messages"), child.pid))
            measured[-1][1].first_byte()
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
        rates: dict[str, list[float]] = {"direct": [], **{path: [] for path, _, _ in measured}}
        spent = {path: 0.0 for path, _, _ in measured}
        for _ in range(args.streams):
            rates["direct"].append(direct.throughput(events))
            for path, client, pid in measured:
                before = cpu_seconds(pid)
                rates[path].append(client.throughput(events))
                after = cpu_seconds(pid)
                spent[path] += after - before if None not in (before, after) else float("nan")
    finally:
        for child in children:
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
    if "splice relay" in mbs:
        print(f"and a bare splice relay (splice, tee, the copy read): "
              f"{mbs['splice relay']:.1f} MiB/s, {mbs['splice relay'] / mbs['direct']:.0%} of "
              f"direct, its CPU {cpu_ms_per_mib['splice relay']:.2f} ms per MiB")
    spliced = {}
    if "splice relay" in mbs:
        spliced = {"splice_relay_ratio": round(mbs["splice relay"] / mbs["direct"], 3),
                   "splice_relay_cpu_ms_per_mib": round(cpu_ms_per_mib["splice relay"], 3)}
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
                      **spliced,
                      "load": [round(x, 2) for x in os.getloadavg()]}))


if __name__ == "__main__":
    main()
