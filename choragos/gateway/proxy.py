"""The built-in gateway: a streaming reverse proxy that counts tokens per role.

Agents reach it at ``http://<addr>/agent/<role>/<key>/<api path>`` (a
session's gateway; :mod:`choragos.gateway.roles` says whom a request is
charged to) or ``http://<addr>/agent/<role>/<api path>`` (one run on its
own).  The request
goes to the vendor's endpoint for that path with the agent's own headers
(its key included: the gateway keeps and logs none of them), and the answer
streams back as it arrives, one socket write per piece read (a chunked
answer with the upstream's own framing: :mod:`choragos.gateway.chunked`).  On the way
past, a :class:`~choragos.gateway.usage.UsageMeter` reads the usage, which lands in
a :class:`~choragos.gateway.metrics.Tally` served on ``/metrics``.

What is changed on the way, and why:

- hop-by-hop headers (``Connection``, ``Keep-Alive``, ``Transfer-Encoding``,
  ``TE``, ``Upgrade``, ``Proxy-*``) belong to one connection, not to the
  request, so each side gets its own;
- ``Host`` names the upstream; the role key header is the gateway's own;
- ``Accept-Encoding`` keeps only encodings the meter can read (gzip,
  deflate), so a brotli body never hides its usage;
- a body of unknown length is re-framed with chunked encoding for the agent.

One thread per agent connection (the standard library's threading server);
each keeps its own upstream connection alive between requests.
"""

from __future__ import annotations

import json
import logging
import re
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.client import HTTPConnection, HTTPException, HTTPResponse, HTTPSConnection
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import SplitResult, unquote, urlsplit

from choragos.fdwait import wait_ready
from choragos.gateway import budgetgate, streamcut
from choragos.gateway.budgetgate import BudgetGate
from choragos.gateway.chunked import BrokenFraming, ChunkedBody
from choragos.gateway.labels import UNKNOWN
from choragos.gateway.limits import BODY_KEEP
from choragos.gateway.metrics import CONTENT_TYPE, Tally, exposition
from choragos.gateway.roles import KEY_HEADER, Caller, Roles
from choragos.gateway.sockwait import kernel_timeout
from choragos.gateway.streamcut import Cut
from choragos.gateway.usage import ANTHROPIC, GEMINI, OPENAI, UsageMeter
from choragos.gateway.watch import AnswerWatch

log = logging.getLogger("choragos.gateway")

CONNECT_TIMEOUT = 10.0
READ_TIMEOUT = 600.0   # between two reads: a model may think for minutes
PIECE = 65536
RAW_PIECE = 1 << 18    # one read of a chunked answer passed on as it came (see _pass_chunked)
MAX_DRAIN = 16 << 20   # a refused request's body is read off up to this, else the line is closed
Reads = Callable[[memoryview], int]  # reads into a buffer: how many bytes came (0: the end)

DEFAULT_UPSTREAMS: Mapping[str, str] = {
    ANTHROPIC: "https://api.anthropic.com",
    OPENAI: "https://api.openai.com",
    GEMINI: "https://generativelanguage.googleapis.com",
}

_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "proxy-authenticate",
                  "proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade"})
_READABLE = frozenset({"gzip", "x-gzip", "deflate", "identity"})
_OWN = frozenset({"host", "content-length", "accept-encoding", KEY_HEADER.lower()})


@dataclass(frozen=True)
class Route:
    """Which API a path through the gateway reaches, and whether its answers are counted."""

    api: str
    counts: bool        # a successful answer may carry usage
    model: str = ""     # from the path (Gemini names the model there)
    expected: bool = True  # an answer without usage is an error


# (pattern, API, counted, usage expected).  An OpenAI response read back by its id
# (background mode: the POST answers "queued", the usage comes with the result) is
# counted there, once per response id (see Tally.first_time).
_ROUTES: tuple[tuple[re.Pattern[str], str, bool, bool], ...] = (
    (re.compile(r"/v1/messages"), ANTHROPIC, True, True),
    (re.compile(r"/v1/messages/count_tokens"), ANTHROPIC, False, False),
    (re.compile(r"/v1/responses"), OPENAI, True, True),
    (re.compile(r"/v1/responses/[^/]+"), OPENAI, True, False),
    (re.compile(r"/v1/responses/.+"), OPENAI, False, False),
    (re.compile(r"/v1/chat/completions"), OPENAI, True, True),
    (re.compile(r"/v1beta/models/([^/:]+):(?:stream)?[gG]enerateContent"), GEMINI, True, True),
    (re.compile(r"/v1beta/models/([^/:]+):countTokens"), GEMINI, False, False),
)

SERVED = ("/v1/messages, /v1/messages/count_tokens, /v1/responses, /v1/chat/completions, "
          "/v1beta/models/<model>:generateContent|streamGenerateContent|countTokens")


def route_for(path: str) -> Route | None:
    """Which API serves ``path`` (the part after ``/agent/<role>``), if any."""
    for pattern, api, counts, expected in _ROUTES:
        found = pattern.fullmatch(path)
        if found:
            model = unquote(found.group(1)) if found.groups() else ""
            return Route(api, counts, model, expected)
    return None


def dot_segment(path: str) -> bool:
    """Whether ``path`` has a segment an upstream may resolve away (``.``, ``..``,
    percent-encoded or with a backslash or an encoded slash in it): such a path can
    reach another API than the one it names here, uncounted."""
    for segment in path.split("/"):
        plain = unquote(segment)
        if plain in (".", "..") or "/" in plain or "\\" in plain:
            return True
    return False


def error_body(status: int, kind: str, message: str) -> bytes:
    """One error shape every agent's SDK reads a message from (``error.message``)."""
    payload = {"type": "error", "error": {"type": kind, "code": status, "message": message,
                                          "status": kind.upper()}}
    return json.dumps(payload).encode()


class ProxyServer(ThreadingHTTPServer):
    """The built-in proxy's HTTP server, a thread per connection."""

    daemon_threads = True
    request_queue_size = 128

    def __init__(self, addr: tuple[str, int], upstreams: Mapping[str, str], tally: Tally,
                 timeout: float = READ_TIMEOUT,
                 record: Callable[[str], None] | None = None,
                 roles: Roles | None = None,
                 watch: AnswerWatch | None = None, gate: BudgetGate | None = None) -> None:
        self.upstreams = {api: urlsplit(url) for api, url in upstreams.items()}
        self.tally = tally
        self.roles = roles or Roles()
        self.read_timeout = timeout
        self.record = record or (lambda line: None)
        self.watch = watch  # reads each answer for a provider's limit
        self.gate = gate    # refuses a role's calls once its blocking budget is spent
        if ":" in addr[0]:
            self.address_family = socket.AF_INET6
        super().__init__(addr, _Handler)


class _Failure(Exception):
    """The gateway answers the agent itself: ``status`` with a clear message."""

    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status, self.kind, self.message = status, kind, message


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: ProxyServer
    _upstream: HTTPConnection | None = None
    _upstream_key: tuple[str, str] | None = None
    _body_started = False  # part of the request body was read: no draining it any more
    _shown = ""  # the request's path as logged: never with a role key in it

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: one line per proxied request goes to ``server.record`` instead."""

    def do_GET(self) -> None:
        self._serve()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = do_GET

    def finish(self) -> None:
        super().finish()
        self._drop_upstream()

    # -- dispatch ------------------------------------------------------------------

    def _serve(self) -> None:
        self._body_started = False
        split = urlsplit(self.path)
        if split.path == "/metrics":
            self._answer(200, exposition(self.server.tally), CONTENT_TYPE)
            return
        if split.path == "/healthz":
            self._answer(200, b'{"status":"ok"}', "application/json")
            return
        caller = self.server.roles.caller(split.path, self.headers.get(KEY_HEADER))
        self._shown = caller.shown if caller else split.path
        if caller is None:
            self._refuse(UNKNOWN, "", _Failure(
                404, "not_found", f"choragos gateway: no API at {split.path}; requests go "
                f"to /agent/<role>/<api path>; it serves {SERVED}"))
            return
        if caller.refusal:
            self._refuse(caller.role, "", _Failure(403, "permission_error", caller.refusal))
            return
        if caller.rest == "/" and self.command in ("GET", "HEAD"):
            # A CLI checking that its base URL answers (Claude Code sends HEAD).
            self._answer(200, b'{"status":"ok"}', "application/json")
            return
        self._route(caller, split.query)

    def _route(self, caller: Caller, query: str) -> None:
        if dot_segment(caller.rest):
            self._refuse(caller.role, "", _Failure(
                400, "bad_request", "choragos gateway: a path with '.' or '..' segments (or "
                "an encoded slash) is refused; send the API path as it is"))
            return
        route = route_for(caller.rest)
        if route is None:
            self._refuse(caller.role, "", _Failure(
                404, "not_found", f"choragos gateway: no API at {caller.rest}; "
                f"it serves {SERVED}"))
            return
        try:
            self._forward(caller.role, route, caller.rest, query)
        except _Failure as failure:
            self._drop_upstream()
            self._refuse(caller.role, route.api, failure)

    def _check_budget(self, role: str, route: Route) -> None:
        """A spent blocking budget stops the call here: it never reaches the upstream."""
        gate, watch = self.server.gate, self.server.watch
        if gate is None or not route.counts:
            return
        refused, unblocked = gate.verdict(role)
        if watch is not None and (refused or unblocked):
            watch.emit({"blocked": {"role": role, "why": refused}} if refused
                       else {"unblocked": role})
        if refused:
            raise _Failure(budgetgate.STATUS, budgetgate.KIND, refused)

    def _answer(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _refuse(self, role: str, api: str, failure: _Failure) -> None:
        self._drain()
        self.server.tally.add_request(role, api, failure.status)
        self.server.tally.add_error(role, api, failure.kind)
        self.server.tally.persist()
        self.server.record(f"{role} {api or '-'} {self.command} {self._shown} -> "
                           f"{failure.status} {failure.kind}")
        self._answer(failure.status, error_body(failure.status, failure.kind, failure.message),
                     "application/json")

    def _drain(self) -> None:
        """Read off an unanswered body, so the agent's connection stays usable."""
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        chunked = "chunked" in self.headers.get("Transfer-Encoding", "").lower()
        if self._body_started or chunked or not 0 <= length <= MAX_DRAIN:
            self.close_connection = True
            return
        while length > 0:
            got = self.rfile.read(min(length, PIECE))
            if not got:
                break
            length -= len(got)

    # -- the upstream request --------------------------------------------------------

    def _forward(self, role: str, route: Route, rest: str, query: str) -> None:
        self._check_budget(role, route)
        began = time.monotonic()
        target = self.server.upstreams[route.api]
        conn = self._connection(target)
        path = target.path.rstrip("/") + rest + (f"?{query}" if query else "")
        try:
            self._send_request(conn, target, path)
            response = conn.getresponse()
        except TimeoutError:
            raise _Failure(504, "upstream_timeout", f"choragos gateway: {_show(target)} did "
                           f"not answer within {self.server.read_timeout:g}s") from None
        except (OSError, HTTPException) as exc:
            raise _Failure(502, "upstream_error", f"choragos gateway: {_show(target)} failed "
                           f"the request: {_why(exc)}") from None
        self._relay(role, route, response, began)

    def _connection(self, target: SplitResult) -> HTTPConnection:
        key = (target.scheme, target.netloc)
        if self._upstream is not None and (key != self._upstream_key or _stale(self._upstream)):
            self._drop_upstream()
        if self._upstream is not None:
            return self._upstream
        kind = HTTPSConnection if target.scheme == "https" else HTTPConnection
        conn = kind(target.hostname or "", target.port, timeout=CONNECT_TIMEOUT)
        try:
            conn.connect()
        except TimeoutError:
            raise _Failure(504, "upstream_timeout", f"choragos gateway: connecting to "
                           f"{_show(target)} timed out after {CONNECT_TIMEOUT:g}s") from None
        except OSError as exc:
            raise _Failure(502, "upstream_unreachable", f"choragos gateway: cannot reach "
                           f"{_show(target)}: {_why(exc)}") from None
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn.sock.settimeout(self.server.read_timeout)
        self._upstream, self._upstream_key = conn, key
        return conn

    def _drop_upstream(self) -> None:
        if self._upstream is not None:
            self._upstream.close()
        self._upstream = self._upstream_key = None

    def _send_request(self, conn: HTTPConnection, target: SplitResult, path: str) -> None:
        conn.putrequest(self.command, path, skip_host=True, skip_accept_encoding=True)
        conn.putheader("Host", target.netloc)
        for name, value in self.headers.items():
            lower = name.lower()
            if lower in _HOP or lower in _OWN:
                continue
            conn.putheader(name, value)
        encodings = _readable_encodings(self.headers.get_all("Accept-Encoding") or [])
        if encodings:
            conn.putheader("Accept-Encoding", encodings)
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            conn.putheader("Transfer-Encoding", "chunked")
            conn.endheaders()
            self._body_started = True
            self._copy_chunked(conn)
            return
        length = self._length()
        if length or self.command in ("POST", "PUT", "PATCH"):
            conn.putheader("Content-Length", str(length))
        conn.endheaders()
        self._body_started = length > 0
        self._copy(conn, length, "before its Content-Length")

    def _copy(self, conn: HTTPConnection, left: int, where: str) -> None:
        """Send the next ``left`` bytes of the request body on, as they come."""
        while left > 0:
            piece = self.rfile.read(min(left, PIECE))
            if not piece:
                raise _Failure(400, "bad_request",
                               f"choragos gateway: the request body ended {where}")
            conn.send(piece)
            left -= len(piece)

    def _length(self) -> int:
        raw = self.headers.get("Content-Length") or "0"
        if not (raw.isascii() and raw.isdigit()):
            self.close_connection = True
            raise _Failure(400, "bad_request", f"choragos gateway: Content-Length {raw!r} "
                           "is not a number")
        return int(raw)

    def _copy_chunked(self, conn: HTTPConnection) -> None:
        """Pass a chunked request body on as it is, reading its framing to find the end."""
        while True:
            line = self.rfile.readline(PIECE + 1)
            try:
                size = int(line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                self.close_connection = True
                raise _Failure(400, "bad_request", "choragos gateway: a malformed chunk in "
                               "the request body") from None
            conn.send(line)
            if size == 0:
                break
            self._copy(conn, size + 2, "inside a chunk")  # the data and its CRLF
        while (trailer := self.rfile.readline(PIECE + 1)) not in (b"\r\n", b"\n", b""):
            conn.send(trailer)
        conn.send(b"\r\n")

    # -- the answer ------------------------------------------------------------------

    def _relay(self, role: str, route: Route, response: HTTPResponse, began: float) -> None:
        status = response.status
        has_body = self.command != "HEAD" and status >= 200 and status not in (204, 304)
        length = response.getheader("Content-Length")
        chunked = has_body and length is None
        self.send_response_only(status, response.reason)
        for name, value in response.getheaders():
            if name.lower() not in _HOP and name.lower() != "content-length":
                self.send_header(name, value)
        if length is not None:
            self.send_header("Content-Length", length)
        elif chunked:
            self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        meter = None
        if has_body and route.counts and 200 <= status < 300:
            meter = UsageMeter(route.api, response.getheader("Content-Type") or "",
                               response.getheader("Content-Encoding") or "", route.model,
                               route.expected)
        settled: list[str] = []  # the answer's log line, once it is counted
        watch = self.server.watch
        kept = bytearray() if watch is not None and watch.keeps_body(status) else None

        def settle(kind: str) -> None:
            if not settled:
                settled.append(self._account(role, route, status, meter, kind, began))
            elif kind:  # the agent went away as the counted end was being written
                self.server.tally.add_error(role, route.api, kind)
                self.server.tally.persist()

        cut = self._cutter(role, route, response, meter, chunked)
        if not has_body:
            kind = ""
        elif chunked and response.chunked and cut is None and kept is None:
            kind = self._pass_chunked(response, meter, settle)
        else:
            kind = self._stream(response, chunked, meter, settle, kept, cut)
        if kind or response.will_close or not response.isclosed():
            self._drop_upstream()
        settle(kind)
        # Logged once the agent has the end: the log line never delays it.
        self.server.record(settled[0])
        if watch is not None:
            watch.answered(role, route.api, status, dict(response.getheaders()),
                           bytes(kept or b""))

    def _cutter(self, role: str, route: Route, response: HTTPResponse,
                meter: UsageMeter | None, chunked: bool) -> Cut | None:
        """A watch on a plain streamed answer of a role whose budget cuts."""
        gate, watch = self.server.gate, self.server.watch
        if (gate is None or meter is None or not chunked or not gate.cuts(role)
                or "text/event-stream" not in (response.getheader("Content-Type") or "")
                or (response.getheader("Content-Encoding") or "identity") != "identity"):
            return None
        said = (lambda why: watch.emit({"blocked": {"role": role, "why": why}})) \
            if watch is not None else (lambda why: None)
        return Cut(gate, role, route.api, route.model, said)

    def _stream(self, response: HTTPResponse, chunked: bool, meter: UsageMeter | None,
                settle: Callable[[str], None], kept: bytearray | None = None,
                cut: Cut | None = None) -> str:
        """Copy the body piece by piece; the kind of error that cut it short, or ''.

        Each piece is written before it is read for usage; only the end waits
        for the counting (``settle``), so an agent that has the whole answer
        finds it counted on ``/metrics``.
        """
        while True:
            try:
                data = response.read1(PIECE)
            except (OSError, HTTPException):
                self.close_connection = True  # the agent sees the stream end unfinished
                return "upstream_broken"
            if not data and not chunked and response.length:
                # Closed before its Content-Length: closing ours too ends the agent's
                # wait at once, where the length we passed on would keep it waiting.
                self.close_connection = True
                return "upstream_broken"
            last = not data or (not chunked and response.length == 0)
            if kept is not None and len(kept) < BODY_KEEP:
                kept += data[:BODY_KEEP - len(kept)]
            if cut is not None and data:
                kind = self._relay_events(data, meter, cut, settle)
                if kind is not None:
                    return kind
                continue
            if meter is not None and data and last:
                meter.feed(data)
            if last:
                settle("")
            try:
                if data:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data) if chunked else data)
                if not data and chunked:
                    self.wfile.write(b"0\r\n\r\n")
            except OSError:
                self.close_connection = True
                return "client_gone"
            if not data:
                return ""
            if meter is not None and not last:
                meter.feed(data)

    def _pass_chunked(self, response: HTTPResponse, meter: UsageMeter | None,
                      settle: Callable[[str], None]) -> str:
        """Relay a chunked answer as it came, one write per read, its framing
        followed on the way (:mod:`choragos.gateway.chunked`); the kind of error that cut
        it short, or ''.  As in :meth:`_stream`, each piece is read for usage
        once written, and the end is written once the answer is counted.

        Every read lands in one buffer, reused: the bytes are copied only by
        the kernel, into it and out of it, and the meter reads them there."""
        body = ChunkedBody()
        buf = bytearray(RAW_PIECE)
        held = 0  # a line the last read cut in two, moved to the buffer's front
        sock = self._upstream.sock if self._upstream else None
        read, rest = _reader(response, sock)
        # wfile writes through to the socket (no buffer: wbufsize 0); its Python
        # wrapper is skipped on a path run once a read.
        write = self.connection.sendall
        look = meter.spans_feeder(buf) if meter is not None else None
        # No poll before each read: the read timeout is the kernel's for this stream.
        with memoryview(buf) as view, kernel_timeout(sock, self.server.read_timeout):
            while not body.ended:
                try:
                    got = read(view[held:] if held else view)
                    read = rest  # the response's own buffer is empty after the first
                    if not got:
                        raise BrokenFraming("the upstream closed the stream before its end")
                    size = held + got
                    passed, kept, payload = body.feed(buf, size)
                except (OSError, BrokenFraming):
                    self.close_connection = True  # the agent sees the stream end unfinished
                    return "upstream_broken"
                try:
                    if passed:
                        write(view[:passed])
                except OSError:
                    self.close_connection = True
                    return "client_gone"
                if look is not None and payload:
                    look(payload)
                held = size - kept
                if held:
                    buf[:held] = buf[kept:size]
        if not body.extra:  # else what came after the end is not ours: the line is dropped
            response.close()
        settle("")
        try:
            write(b"0\r\n\r\n")
        except OSError:
            self.close_connection = True
            return "client_gone"
        return ""

    def _relay_events(self, data: bytes, meter: UsageMeter, cut: Cut,
                      settle: Callable[[str], None]) -> str | None:
        """A stream watched for a cut goes on event by event, each read for usage
        once written; the kind that ended it, or None to read on."""
        for event in streamcut.events(data):
            try:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
            except OSError:
                self.close_connection = True
                return "client_gone"
            meter.feed(event)
            end = cut.check(meter, event)
            if end is not None:
                settle(streamcut.KIND)  # counted before the agent has the end, as any answer
                return self._end_cut(end)
        return None

    def _end_cut(self, event: bytes) -> str:
        """The stream ends here, with the event that says why, properly framed; ''
        (the upstream request is dropped, the answer unread) or ``client_gone``."""
        try:
            self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(event), event))
        except OSError:
            self.close_connection = True
            return "client_gone"
        return ""

    def _account(self, role: str, route: Route, status: int, meter: UsageMeter | None,
                 kind: str, began: float) -> str:
        """Count the answer (on disk before its end is written); its log line."""
        tally = self.server.tally
        tally.add_request(role, route.api, status)
        if kind:
            tally.add_error(role, route.api, kind)
        note = f"{status}"
        if meter is not None:
            reading = meter.close()
            # An answer read again (an OpenAI response fetched by its id) counts once.
            if not (reading.counts and reading.once) or tally.first_time(reading.once):
                tally.add_tokens(role, reading.model, reading.counts)
            else:
                note += " (counted before)"
            if reading.clamped:
                tally.add_error(role, route.api, "usage_clamped")
            elif reading.problem:
                tally.add_error(role, route.api, "usage_unreadable")
            note += f" {reading.model} {reading.counts}" + (f" ({reading.problem})"
                                                           if reading.problem else "")
        # On disk before the end of the answer is written: an agent that has its
        # whole answer finds its tokens kept, whatever happens to this process next.
        tally.persist()
        elapsed = (time.monotonic() - began) * 1000
        return (f"{role} {route.api} {self.command} {self._shown} -> "
                f"{note}{' ' + kind if kind else ''} {elapsed:.0f}ms")


def _reader(response: HTTPResponse, sock: socket.socket | None) -> tuple[Reads, Reads]:
    """Reads of ``response``'s body into a buffer, the first and the rest: the
    first takes what the response's own buffer holds (it read past the
    headers), or reads once; it is empty after that, so the rest come straight
    from the socket (its own ``recv_into``: no Python between)."""

    def buffered(into: memoryview) -> int:
        data = response.fp.read1(len(into))
        into[:len(data)] = data
        return len(data)

    return buffered, (sock.recv_into if sock is not None else buffered)


def _readable_encodings(values: list[str]) -> str:
    accepted = [part.strip() for value in values for part in value.split(",") if part.strip()]
    return ", ".join(p for p in accepted if p.split(";", 1)[0].strip().lower() in _READABLE)


def _stale(conn: HTTPConnection) -> bool:
    """An idle kept-alive connection the upstream has closed reads as ready (EOF)."""
    if conn.sock is None:
        return True
    try:
        return wait_ready(conn.sock, 0)
    except (OSError, ValueError):
        return True


def _show(target: SplitResult) -> str:
    return f"{target.scheme}://{target.netloc}"


def _why(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__
