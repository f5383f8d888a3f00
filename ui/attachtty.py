"""The client's terminal, handed to the session with the attach hello.

``choragos attach`` passes its terminal's descriptor along with the hello
(``SCM_RIGHTS`` on the Unix socket), as tmux's client does, so the session
can write the deck's frames to the terminal and read the keys from it with
no relay process on the way: a keystroke's echo then crosses no process but
the agent's.

The session never uses the passed descriptor itself.  It opens the terminal
again through ``/proc/self/fd``: a file description of its own, so it can be
non-blocking without changing the flags the user's shell shares with the
client, and opened with ``O_NOCTTY``, so the terminal never becomes the
daemon's controlling one.  The passed descriptor is closed at once.
"""

from __future__ import annotations

import contextlib
import os
import socket

MAX_FDS = 4  # more than a hello ever carries; the rest is closed, never used


def receive(conn: socket.socket, size: int) -> tuple[bytes, list[int]]:
    """Bytes from ``conn`` and any descriptors that came with them (the
    caller owns them and must close them)."""
    # Close-on-exec from the start: an agent spawned meanwhile never inherits them.
    data, fds, _flags, _addr = socket.recv_fds(conn, size, MAX_FDS, socket.MSG_CMSG_CLOEXEC)
    return data, list(fds)


def close_all(fds: list[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


def reopen(fds: list[int]) -> int | None:
    """The session's own descriptor for the terminal passed in ``fds``, or
    None when exactly one terminal did not come or it cannot be opened again
    (the client is then served through the relay)."""
    if len(fds) != 1 or not os.isatty(fds[0]):
        return None
    try:
        passed = os.fstat(fds[0])
        fd = os.open(f"/proc/self/fd/{fds[0]}",
                     os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        opened = os.fstat(fd)
        if os.isatty(fd) and (opened.st_rdev, opened.st_ino) == (passed.st_rdev, passed.st_ino):
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


def send_hello(sock: socket.socket, frame: bytes, terminal: int | None) -> None:
    """The hello frame, with ``terminal``'s descriptor when there is one."""
    if terminal is None:
        sock.sendall(frame)
        return
    sent = socket.send_fds(sock, [frame], [terminal])
    if sent < len(frame):
        sock.sendall(frame[sent:])


def shared_terminal() -> int | None:
    """Descriptor 0 when stdin and stdout are the same terminal (so the
    session may read keys and write the screen through one descriptor)."""
    try:
        if not (os.isatty(0) and os.isatty(1)):
            return None
        stdin, stdout = os.fstat(0), os.fstat(1)
    except OSError:
        return None
    return 0 if (stdin.st_rdev, stdin.st_ino) == (stdout.st_rdev, stdout.st_ino) else None
