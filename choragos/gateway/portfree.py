"""Wait, briefly, for the gateway's port to be let go.

A session's gateway ends when its stdin closes, so one left by a server
that was killed (``kill -9``) still listens for a moment after: up to its
poll interval, longer on a busy machine.  The server's ``serve --resume``
started meanwhile would have its first gateway fail to listen, the gateway
marked down and started again.  Not TIME_WAIT: the gateway binds with
``SO_REUSEADDR`` (as :class:`http.server.HTTPServer` does), which is what
the check here does too, so only a live listener keeps the port.
"""

from __future__ import annotations

import errno
import socket
import time

from choragos.config.model import split_host_port


def bindable(addr: str) -> bool:
    """Whether a listener could bind ``addr`` (``host:port``) now, as the gateway does."""
    try:
        host, port = split_host_port(addr)
    except ValueError:  # no port: the gateway says so itself
        return True
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, port))
    except OSError as exc:  # only a listener is waited for (a wrong address is not)
        return exc.errno != errno.EADDRINUSE
    return True


def await_free(addr: str, timeout: float, step: float = 0.05) -> float | None:
    """The seconds waited until ``addr`` could be bound (0 when free at once),
    or None if it could not be within ``timeout`` (the gateway then tries
    anyway, and says why it cannot listen)."""
    if bindable(addr):
        return 0.0
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        time.sleep(step)
        if bindable(addr):
            return time.monotonic() - began
    return None
