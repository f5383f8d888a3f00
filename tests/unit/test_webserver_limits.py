"""The web server against hostile or careless clients, over real sockets: one
that never reads its event stream, too many connections, one that sends a
byte at a time, a rotated token with pages still open, two sessions' cookies
in one browser, a proxy that speaks TLS in front, bytes that are not text."""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from choragos.session import news
from choragos.web import access
from choragos.web.news import QUEUE_LIMIT, NewsHub
from choragos.web.server import WebServer
from tests.conftest import wait_until

DEADLINE = 20.0


class Session:
    """What the server asks of a session: a directory and a status answer."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir

    def dispatch(self, parsed: dict, peer_pid: int | None) -> dict:
        return {"status": "ok", "roles": []}


@contextlib.contextmanager
def served(workdir: Path, **options: object) -> Iterator[tuple[WebServer, NewsHub, str]]:
    token = access.ensure_token(workdir)
    hub = NewsHub()
    server = WebServer(Session(workdir), hub, **options)
    server.start("127.0.0.1:0")
    try:
        yield server, hub, token
    finally:
        server.close()
        assert not server.serving


def port_of(addr: str) -> int:
    return int(addr.rpartition(":")[2])


def raw(addr: str, data: bytes, *, rcvbuf: int | None = None) -> socket.socket:
    sock = socket.socket()
    if rcvbuf:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.settimeout(DEADLINE)
    sock.connect(("127.0.0.1", port_of(addr)))
    sock.sendall(data)
    return sock


def events_request(token: str) -> bytes:
    return (f"GET /api/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n"
            ).encode()


def read_until(sock: socket.socket, marker: bytes) -> bytes:
    got = b""
    while marker not in got:
        chunk = sock.recv(65536)
        if not chunk:
            break
        got += chunk
    return got


def drained(sock: socket.socket) -> bool:
    """Read what is left; True once the server closed (EOF or reset), False at the deadline."""
    try:
        while sock.recv(1 << 20):
            pass
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    return True


def test_a_page_that_never_reads_is_cut_and_what_waits_for_it_stays_bounded(tmp_path):
    with served(tmp_path) as (server, hub, token):
        sock = raw(server.addr, events_request(token), rcvbuf=4096)
        with sock:
            assert b"event: hello" in read_until(sock, b"event: hello")
            wait_until(lambda: hub.count() == 1, DEADLINE, message="the stream on the hub")
            stream = next(iter(server._streams))
            most = 0
            padding = "x" * 4000
            # Far more than the kernel's buffers and the queue's limit, never read.
            for n in range(QUEUE_LIMIT * 2):
                hub.publish(news.EventLogged("note", float(n), {"text": padding}))
                most = max(most, stream.queue.qsize())
            wait_until(lambda: hub.count() == 0, DEADLINE, message="the stream cut")
            assert stream.ended and most <= QUEUE_LIMIT + 1
            assert drained(sock)  # the connection itself was closed, not left stuck


def test_connections_beyond_the_limit_get_one_sentence_and_the_rest_go_on(tmp_path):
    with served(tmp_path, max_connections=4) as (server, _hub, token):
        host, port = "127.0.0.1", port_of(server.addr)
        held = []
        for _ in range(4):  # each answered once, then held open (keep-alive)
            conn = http.client.HTTPConnection(host, port, timeout=DEADLINE)
            conn.request("GET", "/api/status", headers={"Authorization": f"Bearer {token}"})
            conn.getresponse().read()
            held.append(conn)
        over = raw(server.addr, b"")
        with over:
            answer = read_until(over, b"}")
        assert answer.startswith(b"HTTP/1.1 503 ")
        body = json.loads(answer.split(b"\r\n\r\n", 1)[1])
        assert body["ok"] is False and "too many open connections" in body["error"]
        held.pop().close()

        def served_again() -> bool:
            conn = http.client.HTTPConnection(host, port, timeout=DEADLINE)
            try:
                conn.request("GET", "/api/status", headers={"Authorization": f"Bearer {token}"})
                return conn.getresponse().status == 200
            except (OSError, http.client.HTTPException):
                return False
            finally:
                conn.close()

        wait_until(served_again, DEADLINE, message="a connection served once one closed")
        for conn in held:
            conn.close()


def test_a_client_sending_a_byte_at_a_time_is_closed_and_holds_up_no_one(tmp_path):
    with served(tmp_path, idle_timeout=1.0) as (server, _hub, token):
        slow = raw(server.addr, b"G")
        closed = threading.Event()

        def dribble() -> None:
            with contextlib.suppress(OSError):
                for byte in b"ET /api/status HTTP/1.1\r\nX-Pad: " + b"a" * 10_000:
                    if closed.wait(0.1):
                        return
                    slow.send(bytes([byte]))

        thread = threading.Thread(target=dribble, daemon=True)
        thread.start()
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port_of(server.addr), timeout=5)
            conn.request("GET", "/api/status", headers={"Authorization": f"Bearer {token}"})
            assert conn.getresponse().status == 200
            conn.close()
            slow.settimeout(DEADLINE)
            assert drained(slow)  # closed by the server while it still dribbled
        finally:
            closed.set()
            thread.join(5)
            slow.close()


def test_a_rotated_token_ends_the_streams_signed_in_with_the_old_one(tmp_path):
    with served(tmp_path) as (server, hub, token):
        sock = raw(server.addr, events_request(token))
        with sock:
            assert b"event: hello" in read_until(sock, b"event: hello")
            wait_until(lambda: hub.count() == 1, DEADLINE, message="the stream on the hub")
            new = access.rotate(tmp_path)
            hub.publish(news.Bell("coder", "on_gate"))  # news after the rotation
            rest = b""
            with contextlib.suppress(ConnectionResetError):
                while chunk := sock.recv(65536):
                    rest += chunk
            assert b"event: bell" not in rest  # it ended without hearing it
        assert hub.count() == 0
        fresh = raw(server.addr, events_request(new))
        with fresh:
            assert b"event: hello" in read_until(fresh, b"event: hello")


def sign_in(addr: str, token: str, headers: dict | None = None) -> http.client.HTTPResponse:
    conn = http.client.HTTPConnection("127.0.0.1", port_of(addr), timeout=DEADLINE)
    conn.request("GET", f"/?token={token}", headers=headers or {})
    answer = conn.getresponse()
    answer.read()
    conn.close()
    return answer


def test_two_sessions_on_one_host_keep_their_own_cookies(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    with served(first) as (one, _, token_one), served(second) as (two, _, token_two):
        jar = {}  # a browser's cookies for 127.0.0.1: ports are not told apart
        for addr, token in ((one.addr, token_one), (two.addr, token_two)):
            name, _, value = sign_in(addr, token).headers["Set-Cookie"].split(";")[0].partition(
                "=")
            jar[name] = value
        cookie = "; ".join(f"{name}={value}" for name, value in jar.items())
        for addr in (one.addr, two.addr):
            conn = http.client.HTTPConnection("127.0.0.1", port_of(addr), timeout=DEADLINE)
            conn.request("GET", "/api/status", headers={"Cookie": cookie})
            assert conn.getresponse().status == 200, addr
            conn.close()


def test_behind_a_tls_proxy_the_cookie_is_secure(tmp_path):
    with served(tmp_path) as (server, _, token):
        plain = sign_in(server.addr, token).headers["Set-Cookie"]
        assert "Secure" not in plain and "HttpOnly" in plain and "Path=/" in plain
        for header in ({"X-Forwarded-Proto": "https"}, {"Forwarded": "for=1.2.3.4;proto=https"}):
            cookie = sign_in(server.addr, token, header).headers["Set-Cookie"]
            assert "Secure" in cookie and "SameSite=Lax" in cookie, header


@pytest.mark.parametrize("credential", [b"Authorization: Bearer \xff\xfe", b"Cookie: x=\xff"])
def test_bytes_that_are_not_text_in_a_credential_are_a_plain_401(tmp_path, credential):
    with served(tmp_path) as (server, _, _token):
        sock = raw(server.addr, b"GET /api/status HTTP/1.1\r\nHost: x\r\n" + credential
                   + b"\r\nConnection: close\r\n\r\n")
        with sock:
            answer = read_until(sock, b"}")
        assert answer.startswith(b"HTTP/1.1 401 "), answer[:200]


def test_unreadable_requests_put_no_token_and_no_flood_into_the_log(tmp_path, caplog):
    caplog.set_level(logging.INFO)
    with served(tmp_path) as (server, _, token):
        for n in range(30):
            line = (f"GET /?token={token}\x00 HTTP/1.1\r\nHost: x\r\n\r\n" if n % 2
                    else f"GET /?token={token} HTTP/1.1\r\nBad Header\r\n\r\n")
            with raw(server.addr, line.encode()) as sock:
                assert read_until(sock, b"\r\n\r\n").startswith(b"HTTP/1.0 400 ")
    said = [r for r in caplog.records if r.name.startswith(("aiohttp", "choragos.web"))]
    # One line at most (none if another test's came within the minute), naming no request.
    assert len(said) <= 1 and all("could not read" in r.getMessage() for r in said), [
        r.getMessage() for r in said]
    assert not [r for r in caplog.records if token in r.getMessage() or r.exc_info]


def test_head_on_the_event_stream_is_refused_not_held_open(tmp_path):
    with served(tmp_path) as (server, _, token):
        with raw(server.addr, (f"HEAD /api/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                               f"{token}\r\nConnection: close\r\n\r\n").encode()) as sock:
            answer = read_until(sock, b"\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 405 ")
