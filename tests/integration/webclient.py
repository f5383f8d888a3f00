"""A small HTTP client for the web view's tests: real sockets, no redirects
followed, and a server-sent events reader on a thread of its own."""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
import time
from dataclasses import dataclass, field

from tests.integration.harness import Serve

WEB = '[web]\nlisten = "127.0.0.1:0"\n'


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> dict:
        return json.loads(self.body)


class Web:
    """The web view of one test session, found with ``choragos web --json``."""

    def __init__(self, session: Serve) -> None:
        done = session.cli("web", "--json")
        assert done.returncode == 0, done.stdout + done.stderr
        info = json.loads(done.stdout)
        self.url, self.token, self.addr = info["url"], info["token"], info["addr"]
        self.host, _, port = self.addr.rpartition(":")
        self.port = int(port)
        self.origin = f"http://{self.addr}"

    def request(self, method: str, path: str, body: object = None, *, token: str | None = "",
                cookie: str | None = None, origin: str | None = None,
                timeout: float = 15) -> Answer:
        """``token=""``: this session's token as a Bearer header; None: no header."""
        headers = {}
        if token is not None:
            headers["Authorization"] = f"Bearer {token or self.token}"
        if cookie is not None:
            headers["Cookie"] = cookie
        if origin is not None:
            headers["Origin"] = origin
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            conn.request(method, path, body=data, headers=headers)
            response = conn.getresponse()
            return Answer(response.status, dict(response.getheaders()), response.read())
        finally:
            conn.close()

    def get(self, path: str, **kwargs: object) -> Answer:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, body: object = None, **kwargs: object) -> Answer:
        return self.request("POST", path, body if body is not None else {}, **kwargs)

    def events(self) -> Events:
        return Events(self)


@dataclass
class Event:
    kind: str
    data: object
    at: float  # time.time() when it was read


@dataclass
class Events:
    """``/api/events``, read on a thread: every frame with the time it arrived."""

    web: Web
    got: list[Event] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.conn = http.client.HTTPConnection(self.web.host, self.web.port, timeout=60)
        self.conn.request("GET", "/api/events",
                          headers={"Authorization": f"Bearer {self.web.token}"})
        self.response = self.conn.getresponse()
        assert self.response.status == 200
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        kind, data = "message", ""
        try:
            for raw in self.response:
                line = raw.decode().rstrip("\r\n")
                if line.startswith("event: "):
                    kind = line[7:]
                elif line.startswith("data: "):
                    data += line[6:]
                elif not line and data:
                    self.got.append(Event(kind, json.loads(data), time.time()))
                    kind, data = "message", ""
        except (OSError, ValueError, http.client.HTTPException):
            return

    def first(self, kind: str, match=lambda data: True) -> Event | None:
        return next((e for e in list(self.got) if e.kind == kind and match(e.data)), None)

    def close(self) -> None:
        sock = self.conn.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        self.thread.join(5)
        self.conn.close()
