"""A built-in gateway in the test process, and upstreams the fake model servers lack.

``running_gateway`` starts the real :class:`~choragos.gateway.proxy.ProxyServer`
on a loopback port; ``ScriptedUpstream`` answers with exactly the bytes a
test gives it (HTTP/1.1, chunked, paced by the test), for what the fake
Anthropic, OpenAI Responses and Gemini servers do not cover: Chat
Completions, gzip bodies, garbage, silence.
"""

from __future__ import annotations

import contextlib
import gzip
import http.client
import json
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from urllib.parse import urlsplit

from choragos.gateway.budgetgate import BudgetGate
from choragos.gateway.client import Totals, parse_metrics
from choragos.gateway.metrics import Tally
from choragos.gateway.proxy import ProxyServer
from choragos.gateway.roles import Roles
from choragos.gateway.watch import AnswerWatch
from tests.loopback import FakeHandler, Loopback

UNUSED = "http://127.0.0.1:9"  # discard port: nothing listens there


@contextlib.contextmanager
def running_gateway(upstreams: dict[str, str], timeout: float = 30.0,
                    tally: Tally | None = None, roles: Roles | None = None,
                    record=None, watch: AnswerWatch | None = None,
                    gate: BudgetGate | None = None) -> Iterator[ProxyServer]:
    full = {"anthropic": UNUSED, "openai": UNUSED, "gemini": UNUSED, **upstreams}
    server = ProxyServer(("127.0.0.1", 0), full, tally or Tally(), timeout, record, roles,
                         watch=watch, gate=gate)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def base_url(server: ProxyServer) -> str:
    host, port = server.server_address[:2]
    return f"http://{host}:{port}"


def request(url: str, method: str = "POST", body: bytes | dict | None = None,
            headers: dict[str, str] | None = None, timeout: float = 20
            ) -> tuple[int, dict[str, str], bytes]:
    """One HTTP request; (status, lower-cased headers, whole body)."""
    parts = urlsplit(url)
    data = json.dumps(body).encode() if isinstance(body, dict) else body
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    try:
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        conn.request(method, path, body=data, headers={"Content-Type": "application/json",
                                                       **(headers or {})})
        response = conn.getresponse()
        return (response.status, {k.lower(): v for k, v in response.getheaders()},
                response.read())
    finally:
        conn.close()


def tokens(server_or_url: ProxyServer | str) -> Totals:
    """The token counters on ``/metrics``, read with the session's own parser."""
    url = server_or_url if isinstance(server_or_url, str) else base_url(server_or_url)
    status, _, body = request(f"{url}/metrics", "GET")
    assert status == 200
    return parse_metrics(body)


def metric(server: ProxyServer | str, name: str, **labels: str) -> float:
    """One sample of any family on ``/metrics`` (0 when absent)."""
    from prometheus_client.parser import text_string_to_metric_families

    url = server if isinstance(server, str) else base_url(server)
    _, _, body = request(f"{url}/metrics", "GET")
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v
                                           for k, v in labels.items()):
                return sample.value
    return 0.0


class ScriptedUpstream(Loopback):
    """An HTTP/1.1 server answering every request with the test's script.

    ``pieces`` are written one chunk each; ``hold`` (an Event) is waited for
    after the first piece, so a test can prove the first one went through
    before the rest existed.  ``silent`` never answers at all.
    """

    def __init__(self, pieces: list[bytes], content_type: str = "text/event-stream",
                 status: int = 200, gzipped: bool = False, silent: bool = False,
                 truncate: bool = False, tls: ssl.SSLContext | None = None) -> None:
        self.pieces, self.content_type, self.status = pieces, content_type, status
        self.gzipped, self.silent, self.truncate = gzipped, silent, truncate
        self.hold: threading.Event | None = None
        self.seen: list[tuple[str, str, dict[str, str], bytes]] = []
        self.peers: list[tuple[str, int]] = []  # the connection each request came on
        super().__init__(self._handler(), tls=tls)

    def close(self) -> None:
        if self.hold is not None:
            self.hold.set()
        super().close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        upstream = self

        class Handler(FakeHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.read_body()
                upstream.seen.append((self.command, self.path,
                                      {k.lower(): v for k, v in self.headers.items()}, body))
                upstream.peers.append(self.client_address)
                if upstream.silent:
                    threading.Event().wait(30)
                    return
                upstream.answer(self)

        return Handler

    def answer(self, handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(self.status)
        handler.send_header("Content-Type", self.content_type)
        if self.gzipped:
            data = gzip.compress(b"".join(self.pieces))
            handler.send_header("Content-Encoding", "gzip")
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)
            return
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        with contextlib.suppress(OSError):
            for number, piece in enumerate(self.pieces):
                handler.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                handler.wfile.flush()
                if number == 0 and self.hold is not None:
                    self.hold.wait(20)
            if self.truncate:  # gone before the last chunk: the stream is broken
                handler.close_connection = True
                return
            handler.wfile.write(b"0\r\n\r\n")


def self_signed(folder: Path) -> tuple[Path, ssl.SSLContext]:
    """A certificate for 127.0.0.1 (made with openssl) and a server context using it."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=localhost", "-addext",
                    "subjectAltName=IP:127.0.0.1,DNS:localhost",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    return cert, context


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Canned:
    """One canned answer: ``body`` under ``headers``; ``short_by`` bytes of it are never
    sent (the connection closes first, its Content-Length promised them)."""

    body: bytes
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    short_by: int = 0


class CannedUpstream(Loopback):
    """An HTTP/1.1 server answering each ``(method, path)`` with its :class:`Canned`."""

    def __init__(self, answers: dict[tuple[str, str], Canned]) -> None:
        self.answers = answers
        self.seen: list[tuple[str, str]] = []
        super().__init__(self._handler())

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        upstream = self

        class Handler(FakeHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                self.read_body()
                upstream.seen.append((self.command, self.path))
                canned = upstream.answers.get((self.command, self.path))
                status = 200 if canned else 404
                canned = canned or Canned(b'{"error":"no such thing"}')
                self.send_head(status, len(canned.body), canned.content_type, canned.headers)
                self.wfile.write(canned.body[:len(canned.body) - canned.short_by])
                if canned.short_by:
                    self.wfile.flush()
                    self.close_connection = True

            do_POST = do_DELETE = do_GET

        return Handler
