"""The HTTP server under the tests' fake upstreams and endpoints.

One thread serving a loopback port (any free one unless told), no access
log on the test's output (a fake records what it needs itself), a short
poll so closing it, at every test's end, is quick.
"""

from __future__ import annotations

import ssl
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["FakeHandler", "Loopback"]


class FakeHandler(BaseHTTPRequestHandler):
    """A fake's request handler: no access log, and the request's body whole."""

    def log_message(self, *args: object) -> None:
        pass

    def read_body(self) -> bytes:
        """The request's body, sent chunked or with a Content-Length."""
        if "chunked" not in self.headers.get("Transfer-Encoding", ""):
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = b""
        while size := int(self.rfile.readline().split(b";")[0], 16):
            body += self.rfile.read(size)
            self.rfile.read(2)
        while self.rfile.readline() not in (b"\r\n", b""):  # the trailer
            pass
        return body

    def send_head(self, status: int, length: int, content_type: str = "application/json",
                  headers: Mapping[str, str] | None = None) -> None:
        """An answer's status line and headers, its Content-Length ``length``."""
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(length))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()


class Loopback:
    """``handler`` serving 127.0.0.1:``port`` (0: a free one) until :meth:`close`;
    ``tls`` makes it HTTPS.  Also a context manager."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], port: int = 0,
                 tls: ssl.SSLContext | None = None) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", port), handler)
        self.server.daemon_threads = True
        self.scheme = "https" if tls else "http"
        if tls is not None:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> Loopback:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
