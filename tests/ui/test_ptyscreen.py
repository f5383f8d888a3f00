"""The deck's screen: closing it never waits on a frame nobody reads."""

from __future__ import annotations

import fcntl
import struct
import termios
import threading

import pytest

from choragos.ui.ptyscreen import PtyScreen
from tests.conftest import wait_until

pytestmark = pytest.mark.timeout(30)


def test_close_unblocks_a_frame_written_to_a_pty_nobody_reads():
    screen = PtyScreen()
    failed: list[BaseException] = []
    started = threading.Event()

    def draw() -> None:
        started.set()
        try:
            screen.write("x" * 200_000)  # far more than a PTY buffers
            screen.flush()
        except OSError as exc:
            failed.append(exc)

    drawing = threading.Thread(target=draw, daemon=True)
    drawing.start()
    started.wait(5)
    # Once the frame's first bytes wait in the PTY, the drawing thread is in
    # its write (and holds the file's lock) until someone reads them all.
    wait_until(lambda: _pending(screen.master) > 0, 5, message="the frame's write to begin")
    closed = threading.Event()
    threading.Thread(target=lambda: (screen.close(), closed.set()), daemon=True).start()
    assert closed.wait(5), "close waited for a write nobody will read"
    drawing.join(5)
    assert not drawing.is_alive() and failed, "the blocked write did not end with an error"


def _pending(master: int) -> int:
    """Bytes written to the PTY that nobody has read."""
    return struct.unpack("i", fcntl.ioctl(master, termios.FIONREAD, b"\0" * 4))[0]
