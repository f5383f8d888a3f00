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
import termios
from pathlib import Path

MAX_FDS = 4  # more than a hello ever carries; the rest is closed, never used
# Every mode the deck turns on, turned off: mouse, paste and focus reports,
# application keys; then plain attributes, the main screen, a visible
# cursor and the ASCII character set.
RESTORE = (b"\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?1015l\x1b[?2004l"
           b"\x1b[?1004l\x1b[?1l\x1b>\x1b[0m\x1b[?1049l\x1b[?25h\x1b(B\x0f")
_PF_EXITING = 0x4  # the kernel's flag for a process inside exit(), in /proc/PID/stat


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


def modes(fd: int) -> list | None:
    """The terminal's settings now (None when they cannot be read)."""
    try:
        return termios.tcgetattr(fd)
    except (termios.error, OSError):
        return None


def restore(fd: int, saved: list | None) -> None:
    """Put a terminal the deck drew on back as it was: its modes off, the
    main screen, then ``saved`` settings (cooked input, echo).  Best effort:
    a terminal that hung up takes none of it."""
    with contextlib.suppress(OSError):  # a few bytes: a terminal's buffer takes them
        os.write(fd, RESTORE)
    if saved is not None:  # now, not after a drain a stuck terminal would never finish
        with contextlib.suppress(termios.error, OSError):
            termios.tcsetattr(fd, termios.TCSANOW, saved)


def gone(pid: int) -> bool:
    """``pid`` has ended or is inside its exit (its descriptors close before
    it becomes a zombie, so a closed socket can be seen before that)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    fields = stat[stat.rfind(")") + 2:].split()  # the name may hold spaces and parentheses
    try:
        return fields[0] in ("Z", "X", "x") or bool(int(fields[6]) & _PF_EXITING)
    except (IndexError, ValueError):
        return False
