"""A plain socket's read timeout kept by the kernel while a stream is relayed.

CPython keeps a socket's timeout itself: the socket is non-blocking and
every ``recv_into`` first waits in ``poll`` for it to be readable, one
system call more on every read of a stream (the gateway relays a fast
answer in reads of up to 256 KiB, several a MiB).  For the length of one
stream the upstream's plain socket is made blocking with the same timeout
set in the kernel (``SO_RCVTIMEO``): a read then waits in ``recv`` itself,
and one that waits longer fails with ``EAGAIN``, an :class:`OSError` as
Python's own timeout is.  Its timeout is given back afterwards, for the
kept-alive connection's next request.

Only on Linux (the layout of ``struct timeval`` is known there) and only a
plain socket: a TLS socket's reads go through OpenSSL, which must see its
socket as Python left it.  Elsewhere nothing changes.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import sys
from collections.abc import Iterator

_TIMEVAL = "@ll"  # struct timeval on Linux: seconds, microseconds (both long)


def _timeval(seconds: float) -> bytes:
    whole = int(seconds)
    return struct.pack(_TIMEVAL, whole, int((seconds - whole) * 1_000_000))


@contextlib.contextmanager
def kernel_timeout(sock: socket.socket | None, seconds: float) -> Iterator[bool]:
    """Within: ``sock`` blocking, its reads timed out by the kernel after
    ``seconds``; whether that was done (else the socket is left as it is)."""
    if (sock is None or type(sock) is not socket.socket or not sys.platform.startswith("linux")
            or not seconds or seconds <= 0):
        yield False
        return
    saved = sock.gettimeout()
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, _timeval(seconds))
        sock.settimeout(None)
    except OSError:
        yield False
        return
    try:
        yield True
    finally:
        with contextlib.suppress(OSError):  # a socket closed meanwhile has nothing to restore
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, _timeval(0))
            sock.settimeout(saved)
