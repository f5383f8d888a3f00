"""What bounds the web server against clients it cannot trust: how many
connections it holds, how long one may dawdle, and what a request it cannot
parse may write into the session's log.

Anyone who reaches the port meets these before the token is asked for.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from choragos.control import wire

# Connections open at once, beyond which a new one gets a 503 and is closed:
# each is a file descriptor of the session's, whose PTYs, pipes and logs need
# theirs, and anyone who reaches the port can open them, token or not.  A
# browser opens at most six to a host, so this is a room full of phones.
MAX_CONNECTIONS = 128
# Seconds a connection may sit without a whole request (a client sending one
# byte a second) or idle between requests before it is closed.
IDLE_TIMEOUT = 60.0


class CappedSite(web.TCPSite):
    """A TCP site that answers a connection beyond ``limit`` with a 503 and closes it."""

    def __init__(self, runner: web.AppRunner, host: str, port: int, limit: int) -> None:
        super().__init__(runner, host, port, reuse_address=True, backlog=16)
        self.limit = limit

    async def start(self) -> None:
        await web.BaseSite.start(self)  # registered with the runner, as TCPSite does
        server = self._runner.server
        assert server is not None

        def protocol() -> asyncio.BaseProtocol:
            # Counted when made: several accepted in one go are not yet connected.
            if len(server.connections) >= self.limit:
                return Busy()
            return server()

        self._server = await asyncio.get_running_loop().create_server(
            protocol, self._host, self._port, reuse_address=True, backlog=self._backlog)


class Busy(asyncio.Protocol):
    """A connection over the limit: one plain sentence, then closed."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        body = json.dumps(wire.envelope("web", {}, error="the web view has too many open "
                                        "connections; close some pages and try again",
                                        code=3)).encode()
        head = (f"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n")
        assert isinstance(transport, asyncio.Transport)
        transport.write(head.encode() + body)
        transport.close()


class UnreadableRequests(logging.Filter):
    """aiohttp logs a request it cannot parse at ERROR, with its first line (a
    ``/?token=`` in it, say) and a traceback: anyone who reaches the port could
    write the token into the log, or fill the disk with tracebacks.  Such a
    record becomes one line that names no request, at most one a minute."""

    EVERY = 60.0

    def __init__(self) -> None:
        super().__init__()
        self.last: float | None = None
        self.dropped = 0

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if not isinstance(exc, HttpProcessingError):
            return True  # a fault of ours: its traceback is wanted
        now = time.monotonic()
        if self.last is not None and now - self.last < self.EVERY:
            self.dropped += 1
            return False
        since = f"; {self.dropped} more since the last one" if self.dropped else ""
        record.msg, record.args = "web: refused a request it could not read (%s)%s", (
            type(exc).__name__, since)
        record.exc_info, record.exc_text = None, None
        record.levelno, record.levelname = logging.WARNING, "WARNING"
        self.last, self.dropped = now, 0
        return True


HTTP_LOG = logging.getLogger("choragos.web.http")  # aiohttp's own records, filtered
HTTP_LOG.addFilter(UnreadableRequests())
