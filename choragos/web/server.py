"""The crew's web view: the page, a JSON API and a stream of the session's news.

Built on aiohttp: one asyncio loop on a thread of its own serves every
browser, so an open page's event stream costs a queue and a socket, not a
thread, and an idle page wakes the loop only for a keep-alive comment.  The
session's work stays on its actors: each command goes through the same
path as the control socket (``dispatch``: the command registry, the
caller's authority, the gateway's gate), run on the loop's executor so a
slow core never stalls the loop.

Access: every request carries the token (``Authorization: Bearer``, or the
cookie set by opening ``/?token=`` once); without it, 401 and a sentence.
A request that changes anything must come from the page's own origin
(``Origin``), so another site cannot make a signed-in browser approve a
gate.  Nothing logs a URL: the token never reaches a log.

Lifecycle: :meth:`WebServer.start` binds (an error is an ``OSError`` the
caller reports) and serves on its thread; if that thread dies, ``on_died``
is told, so the web actor crashes and its supervisor starts a fresh server.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlencode, urlsplit

from aiohttp import web

from choragos.config.model import split_host_port
from choragos.control import commands, tcppeer, wire
from choragos.terminal.emulator import Snapshot
from choragos.web import access as webaccess
from choragos.web.limits import HTTP_LOG, IDLE_TIMEOUT, MAX_CONNECTIONS, CappedSite
from choragos.web.news import CUT, NewsHub, Stream, frame
from choragos.web.screen import answers, screen_json

log = logging.getLogger("choragos.web")

KEEPALIVE = 25.0  # seconds between comments on an idle event stream (proxies cut at 30-60)
START_TIMEOUT = 10.0
PAGE_FILES = {"/": ("index.html", "text/html"), "/app.js": ("app.js", "text/javascript"),
              "/app.css": ("app.css", "text/css")}
_USAGE = "_usage"  # marks an ack refused before it reached the session (a bad request)
_SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
_HEADERS = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY",
            "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'"}


class WebSession(Protocol):
    """What the web view needs from the session."""

    workdir: Path

    def dispatch(self, request: dict, peer_pid: int | None) -> dict:
        """A parsed control command, run as the socket runs it for that caller (blocking)."""

    def snapshot(self, role: str) -> Snapshot | None:
        """The role's pane as it is now; None for an unknown role."""

    def timeline(self) -> dict:
        """The current run's timeline, as plain data."""

    def document(self, path: str) -> str | None:
        """A gate's file (the task as the worker will read it), if it is the session's own."""


class WebServer:
    def __init__(self, session: WebSession, hub: NewsHub, *,
                 peer_pid: Callable[[tuple, tuple], int | None] = lambda peer, local: None,
                 keepalive: float = KEEPALIVE, max_connections: int = MAX_CONNECTIONS,
                 idle_timeout: float = IDLE_TIMEOUT) -> None:
        self.session = session
        self.hub = hub
        self.tokens = webaccess.TokenFile(session.workdir)
        self.peer_pid = peer_pid
        self.keepalive = keepalive
        self.max_connections = max_connections
        self.idle_timeout = idle_timeout
        self.on_died: Callable[[str], None] = lambda error: None
        self.addr = ""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._dead = False  # its loop died (the thread may still be winding down)
        self._stop: asyncio.Future | None = None
        self._stopping = False
        # This server's open event streams, each with the token it signed in with.
        self._streams: dict[Stream, str] = {}
        self._generation = 0  # the token's, when the streams were last checked against it
        self.cookie = webaccess.COOKIE

    # -- lifecycle -----------------------------------------------------------------

    def start(self, listen: str) -> str:
        """Bind ``listen`` and serve; returns the address really bound."""
        host, port = split_host_port(listen)
        ready: dict[str, Any] = {}
        started = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(host, port, ready, started),
            name="web-server", daemon=True)
        self._thread.start()
        if not started.wait(START_TIMEOUT):
            raise OSError(f"the web server did not start within {START_TIMEOUT:g}s")
        if "error" in ready:
            raise ready["error"]
        self.addr = ready["addr"]
        return self.addr

    def _run(self, host: str, port: int, ready: dict, started: threading.Event) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._serve(host, port, ready, started))
        except BaseException as exc:
            if not started.is_set():
                ready["error"] = exc if isinstance(exc, OSError) else OSError(str(exc))
                started.set()
            elif not self._stopping:
                error = f"{type(exc).__name__}: {exc}"
                log.error("the web server's loop died: %s", error)
                # Dead from now on, though this thread still winds down: the
                # actor the supervisor starts next must serve anew, not trust it.
                self._dead = True
                self.on_died(error)
        finally:
            with contextlib.suppress(Exception):  # the executor's idle threads end with it
                loop.run_until_complete(loop.shutdown_default_executor())
            loop.close()

    async def _serve(self, host: str, port: int, ready: dict,
                     started: threading.Event) -> None:
        runner = web.AppRunner(self._app(), handle_signals=False, access_log=None,
                               shutdown_timeout=2.0, keepalive_timeout=self.idle_timeout,
                               logger=HTTP_LOG)
        await runner.setup()
        try:
            site = CappedSite(runner, host, port, self.max_connections)
            await site.start()
            bound = runner.addresses[0]
            shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
            ready["addr"] = f"{shown}:{bound[1]}"
            self.cookie = webaccess.cookie_name(ready["addr"])
            self._stop = asyncio.get_running_loop().create_future()
            started.set()
            await self._stop
        finally:
            for stream in list(self._streams):  # open event streams end now, not at a timeout
                stream.queue.put_nowait(CUT)
            await runner.cleanup()

    def close(self) -> None:
        """Stop serving: open streams end, the port is free when this returns."""
        self._stopping = True
        thread = self._thread
        self._wake(None)
        if thread is not None:
            thread.join(timeout=5.0)

    def inject_fault(self) -> None:
        """Test hook: make the loop die as a real failure would."""
        self._wake(RuntimeError("a fault was injected into the web server"))

    def _wake(self, error: BaseException | None) -> None:
        """End the serving coroutine: cleanly, or with ``error`` (the loop dies)."""
        if self._loop is None or self._stop is None:
            return
        with contextlib.suppress(RuntimeError):  # the loop is closed already
            self._loop.call_soon_threadsafe(_settle, self._stop, error)

    @property
    def serving(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and not self._dead

    # -- the application -----------------------------------------------------------

    def _app(self) -> web.Application:
        app = web.Application(middlewares=[self._guard], client_max_size=64 * 1024)
        app.router.add_get("/", self._page)
        app.router.add_get("/app.js", self._page)
        app.router.add_get("/app.css", self._page)
        app.router.add_get("/favicon.ico", _no_icon)
        app.router.add_get("/api/status", self._simple("status"))
        app.router.add_get("/api/board", self._board)
        app.router.add_get("/api/gates", self._gates)
        app.router.add_post(r"/api/gates/{id}/{action:approve|reject}", self._decide)
        app.router.add_post(r"/api/tasks/{id}/cancel", self._cancel)
        app.router.add_post(r"/api/roles/{role}/{action:pause|resume|restart}", self._control)
        app.router.add_post("/api/roles/{role}/input", self._input)
        app.router.add_get("/api/roles/{role}/screen", self._screen)
        app.router.add_get("/api/timeline", self._timeline)
        # Not HEAD: an endless stream with no body would only hold a connection.
        app.router.add_get("/api/events", self._events, allow_head=False)
        return app

    @web.middleware
    async def _guard(self, request: web.Request, handler: Any) -> web.StreamResponse:
        self._cut_stale()  # any request at all, even one refused, carries a rotation
        if request.path == "/" and "token" in request.query:
            return self._sign_in(request)
        if not self._signed_in(request):
            return _refuse(401, "a valid access token is needed: open the link "
                                "`choragos web` prints, or send Authorization: Bearer <token>",
                           {"WWW-Authenticate": "Bearer"})
        if request.method not in _SAFE_METHODS and not _same_origin(request):
            return _refuse(403, "this request came from another site's page; "
                                "use the web view itself")
        try:
            response = await handler(request)
        except web.HTTPException as exc:
            if exc.status >= 400:
                return _refuse(exc.status, exc.reason or "not found")
            raise
        response.headers.update(_HEADERS)
        return response

    def _signed_in(self, request: web.Request) -> bool:
        header = request.headers.get("Authorization", "")
        if header.startswith("Bearer "):
            return self.tokens.accepts(header[7:].strip())
        return self.tokens.accepts(request.cookies.get(self.cookie))

    def _credential(self, request: web.Request) -> str:
        header = request.headers.get("Authorization", "")
        if header.startswith("Bearer "):
            return header[7:].strip()
        return request.cookies.get(self.cookie, "")

    def _cut_stale(self) -> None:
        """Once the token changed (``choragos web --rotate``), the streams signed
        in with the old one end: a stolen phone's open page hears nothing more."""
        current = self.tokens.current()
        if self.tokens.generation == self._generation:
            return
        self._generation = self.tokens.generation
        for stream, given in list(self._streams.items()):
            if not webaccess.same_token(given, current):
                stream.end()

    def _sign_in(self, request: web.Request) -> web.StreamResponse:
        """``/?token=``: set the cookie and send the browser on without the token in its URL."""
        if not self.tokens.accepts(request.query.get("token", "")):
            return _refuse(401, "that access token is not (or no longer) valid; run "
                                "`choragos web` for the current one")
        rest = [(k, v) for k, v in request.query.items() if k != "token"]
        target = "/" + ("?" + urlencode(rest) if rest else "")
        response = web.Response(status=303, headers={"Location": target})
        response.set_cookie(self.cookie, self.tokens.current(), httponly=True,
                            samesite="Lax", path="/", secure=_behind_tls(request))
        response.headers.update(_HEADERS)
        return response

    # -- handlers ---------------------------------------------------------------------

    async def _page(self, request: web.Request) -> web.Response:
        name, kind = PAGE_FILES[request.path]
        body = resources.files("choragos.web").joinpath("page", name).read_bytes()
        return web.Response(body=body, content_type=kind, charset="utf-8")

    async def _command(self, request: web.Request, payload: dict) -> web.Response:
        return _answer(_verb_of(payload), await self._ask(request, payload))

    async def _ask(self, request: web.Request, payload: dict) -> dict:
        """The session's ack of ``payload``, checked and sent as the CLI's would be."""
        try:
            parsed = wire.parse_request(json.dumps(payload).encode())
        except wire.WireError as exc:
            return wire.error(exc.reason, **{_USAGE: True})
        transport = request.transport
        # Who is asking matters only for a change (a read is the same for anyone
        # holding the token), and finding out walks /proc: reads skip it.
        asks_who = transport is not None and request.method not in _SAFE_METHODS
        peer = transport.get_extra_info("peername") if asks_who else None
        local = transport.get_extra_info("sockname") if asks_who else None
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, self._dispatch, parsed, peer, local)

    def _dispatch(self, parsed: dict, peer: Any, local: Any) -> dict:
        pid = self.peer_pid(peer, local) if peer and local else None
        if pid == tcppeer.UNTRACED:
            # A process on this machine that left no trace (it closed its end
            # at once, say) could be an agent: it never passes for the operator.
            log.warning("web: refused %s from a process on this machine that could not be "
                        "traced", parsed.get("cmd"))
            return wire.error("this request came from a process on this machine that could "
                              "not be traced (did it close the connection before the answer?); "
                              "nothing was done")
        return self.session.dispatch(parsed, pid)

    def _simple(self, cmd: str) -> Callable[[web.Request], Any]:
        async def handler(request: web.Request) -> web.Response:
            return await self._command(request, {"cmd": cmd})
        return handler

    async def _board(self, request: web.Request) -> web.Response:
        archived = request.query.get("archived", "") in ("1", "true", "yes")
        return await self._command(request, {"cmd": "board", "archived": archived})

    async def _gates(self, request: web.Request) -> web.Response:
        """The gate list, each with the text its worker will read."""
        ack = await self._ask(request, {"cmd": "gate", "action": "list"})
        for gate in ack.get("gates") or ():
            if isinstance(gate, dict) and isinstance(gate.get("file"), str):
                gate["document"] = await asyncio.get_running_loop().run_in_executor(
                    None, self.session.document, gate["file"])
        return _answer("gate", ack)

    async def _decide(self, request: web.Request) -> web.Response:
        body = await _body(request)
        if not isinstance(body, dict):
            return _refuse(400, body, verb="gate", code=2)
        payload = {"cmd": "gate", "action": request.match_info["action"],
                   "id": request.match_info["id"]}
        if payload["action"] == "reject" and body.get("reason"):
            payload["reason"] = body["reason"]
        return await self._command(request, payload)

    async def _cancel(self, request: web.Request) -> web.Response:
        body = await _body(request)
        if not isinstance(body, dict):
            return _refuse(400, body, verb="cancel", code=2)
        payload = {"cmd": "cancel", "id": request.match_info["id"]}
        if body.get("reason"):
            payload["reason"] = body["reason"]
        return await self._command(request, payload)

    async def _control(self, request: web.Request) -> web.Response:
        return await self._command(request, {"cmd": request.match_info["action"],
                                             "role": request.match_info["role"]})

    async def _input(self, request: web.Request) -> web.Response:
        body = await _body(request)
        if not isinstance(body, dict):
            return _refuse(400, body, verb="keys", code=2)
        return await self._command(request, {"cmd": "input", "role": request.match_info["role"],
                                             "text": body.get("text", ""),
                                             "keys": body.get("keys", [])})

    async def _screen(self, request: web.Request) -> web.Response:
        role = request.match_info["role"]
        loop = asyncio.get_running_loop()
        shot = await loop.run_in_executor(None, self.session.snapshot, role)
        if shot is None:
            return _refuse(404, f"there is no role {role!r} in this session")
        data = screen_json(role, shot)
        data["answers"] = answers(shot.lines)
        return web.json_response(wire.envelope("screen", data))

    async def _timeline(self, request: web.Request) -> web.Response:
        loop = asyncio.get_running_loop()
        line = await loop.run_in_executor(None, self.session.timeline)
        return web.json_response(wire.envelope("timeline", line))

    async def _events(self, request: web.Request) -> web.StreamResponse:
        """Server-sent events: a ``hello`` frame, then every news item as it happens."""
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                               "X-Accel-Buffering": "no", **_HEADERS})
        await response.prepare(request)
        queue: asyncio.Queue[str] = asyncio.Queue()
        transport = request.transport
        stream = Stream(asyncio.get_running_loop(), queue,
                        transport.abort if transport is not None else lambda: None)
        given = self._credential(request)
        self.hub.add(stream)
        self._streams[stream] = given
        try:
            # ``retry``: a page whose server restarted is back within two seconds.
            await response.write(("retry: 2000\n" + frame("hello", {"retry": 2000})).encode())
            while True:
                try:
                    text = await asyncio.wait_for(queue.get(), self.keepalive)
                except TimeoutError:
                    text = ": still here\n\n"
                else:
                    stream.taken(text)
                self._cut_stale()
                if text == CUT or stream.ended:
                    break
                await response.write(text.encode())
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self.hub.remove(stream)
            self._streams.pop(stream, None)
        return response


# -- helpers ----------------------------------------------------------------------------

def _behind_tls(request: web.Request) -> bool:
    """Whether the browser reached the page over TLS: directly, or through a
    proxy in front that says so.  A cookie set over TLS is ``Secure``, so the
    browser never sends it in plain HTTP to the same host."""
    if request.secure:
        return True
    proto = request.headers.get("X-Forwarded-Proto", "").split(",")[0].strip().lower()
    forwarded = request.headers.get("Forwarded", "").lower().replace(" ", "")
    return proto == "https" or "proto=https" in forwarded


def _settle(future: asyncio.Future, error: BaseException | None) -> None:
    if future.done():
        return
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(error)


async def _no_icon(request: web.Request) -> web.Response:
    return web.Response(status=204)


def _verb_of(payload: dict) -> str:
    """The CLI verb that sends this command (``keys`` for ``input``)."""
    command = commands.COMMANDS.get(payload["cmd"])
    return command.verb.name if command is not None and command.verb else payload["cmd"]


def _answer(verb: str, ack: dict) -> web.Response:
    """The session's ack in the CLI's ``--json`` envelope, with the CLI's exit
    status: 2 and HTTP 400 for a bad request, 3 and 503 for a session too
    busy or still starting, 1 and 409 for a refusal."""
    if ack.get("status") == "ok":
        return web.json_response(wire.envelope(verb, ack))
    reason = str(ack.get("error", "the session refused"))
    if ack.pop(_USAGE, False):
        return _refuse(400, reason, verb=verb, code=2)
    if ack.get("busy") or "still starting" in reason:
        return _refuse(503, reason, verb=verb, code=3)
    return _refuse(409, reason, verb=verb)


def _refuse(status: int, reason: str, headers: dict | None = None, *, verb: str = "web",
            code: int = 1) -> web.Response:
    return web.json_response(wire.envelope(verb, {}, error=reason, code=code), status=status,
                             headers={**_HEADERS, **(headers or {})})


async def _body(request: web.Request) -> dict | str:
    """The JSON object a POST carries (none is an empty one), or why it is not one."""
    if not request.can_read_body:
        return {}
    try:
        body = json.loads(await request.read() or b"{}")
    except (ValueError, UnicodeDecodeError):
        return "the request body is not JSON; send an object such as {\"reason\": \"...\"}"
    return body if isinstance(body, dict) else "the request body must be a JSON object"


def _same_origin(request: web.Request) -> bool:
    """A state-changing request: a browser's must name this page as its origin.

    A request signed with the Authorization header cannot come from another
    site's page (it would need a CORS preflight this server never grants),
    so a script or curl without ``Origin`` passes; with the cookie, ``Origin``
    must be there and match."""
    origin = request.headers.get("Origin")
    if origin is None:
        return request.headers.get("Authorization", "").startswith("Bearer ")
    host = request.headers.get("Host", "")
    try:
        parts = urlsplit(origin)
    except ValueError:
        return False
    return bool(parts.netloc) and _netloc(parts.netloc, parts.scheme) == _netloc(
        host, parts.scheme)


def _netloc(netloc: str, scheme: str) -> str:
    default = {"http": ":80", "https": ":443"}.get(scheme, "")
    netloc = netloc.lower()
    return netloc[: -len(default)] if default and netloc.endswith(default) else netloc
