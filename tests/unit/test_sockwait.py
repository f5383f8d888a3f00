"""A plain socket's read timeout kept by the kernel for a stream (choragos.gateway.sockwait)."""

from __future__ import annotations

import socket
import ssl
import struct
import sys

import pytest

from choragos.gateway.sockwait import kernel_timeout

pytestmark = pytest.mark.timeout(30)
linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")


def _kernel(sock: socket.socket) -> float:
    """The socket's SO_RCVTIMEO in seconds (the kernel rounds it up to its clock tick)."""
    seconds, micro = struct.unpack("@ll", sock.getsockopt(socket.SOL_SOCKET,
                                                          socket.SO_RCVTIMEO, 16))
    return seconds + micro / 1e6


@linux
def test_within_the_socket_blocks_and_the_kernel_times_its_reads_out_then_all_is_given_back():
    left, right = socket.socketpair()
    with left, right:
        left.settimeout(600.0)
        with kernel_timeout(left, 0.25) as done:
            assert done
            assert left.gettimeout() is None and 0.25 <= _kernel(left) < 0.27
            right.sendall(b"x")
            assert left.recv(16) == b"x"  # data there: read at once
            with pytest.raises(OSError):  # none: the kernel's timeout ends the wait
                left.recv(16)
        assert left.gettimeout() == 600.0 and _kernel(left) == 0
        with pytest.raises(TimeoutError):  # Python's own timeout again
            left.settimeout(0.05)
            left.recv(16)


def test_no_socket_a_tls_socket_or_no_timeout_are_left_as_they_are():
    with kernel_timeout(None, 1.0) as done:
        assert not done
    left, right = socket.socketpair()
    with left, right:
        left.settimeout(3.0)
        with kernel_timeout(left, 0) as done:
            assert not done and left.gettimeout() == 3.0
        wrapped = ssl.create_default_context().wrap_socket(
            left, server_side=False, do_handshake_on_connect=False, server_hostname="x")
        with wrapped, kernel_timeout(wrapped, 1.0) as done:
            assert not done and wrapped.gettimeout() == 3.0


@linux
def test_a_socket_closed_within_is_left_closed():
    left, right = socket.socketpair()
    with right:
        with kernel_timeout(left, 1.0) as done:
            assert done
            left.close()
        assert left.fileno() == -1
