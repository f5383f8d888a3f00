"""Which local process holds the other end of a loopback TCP connection."""

from __future__ import annotations

import socket
import subprocess
import sys
import warnings

import pytest

from choragos.control.tcppeer import UNTRACED, peer_pid

CLIENT = ("import socket, sys; s = socket.create_connection(('127.0.0.1', int(sys.argv[1])));"
          " sys.stdin.read()")


def test_the_client_process_is_found_and_nothing_is_left_open():
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.settimeout(20)
        client = subprocess.Popen([sys.executable, "-c", CLIENT, str(listener.getsockname()[1])],
                                  stdin=subprocess.PIPE)
        try:
            conn, peer = listener.accept()
            with conn, warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", ResourceWarning)
                found = peer_pid(peer, conn.getsockname())
        finally:
            client.stdin.close()
            client.wait(20)
    assert found == client.pid
    # The walk of /proc stopped at the holder: its iterator is closed, not collected.
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]


CLOSER = ("import socket, struct, sys;"
          " s = socket.create_connection(('127.0.0.1', int(sys.argv[1])));"
          " s.sendall(b'x'); rst = sys.argv[2] == 'rst';"
          " rst and s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0));"
          " s.close()")


def test_a_local_client_that_closed_its_end_is_untraced_not_the_operator():
    # An agent could send its request and close at once, leaving no process
    # to find: that must never read as "nobody in particular" (the operator).
    for how in ("fin", "rst"):
        with socket.create_server(("127.0.0.1", 0)) as listener:
            listener.settimeout(20)
            client = subprocess.run([sys.executable, "-c", CLOSER,
                                     str(listener.getsockname()[1]), how], timeout=20)
            assert client.returncode == 0
            conn, peer = listener.accept()
            with conn:
                assert peer_pid(peer, conn.getsockname()) == UNTRACED, how


def test_a_peer_on_another_machine_is_none():
    assert peer_pid(("192.0.2.7", 40000), ("127.0.0.1", 8787)) is None
    assert peer_pid(("2001:db8::7", 40000, 0, 0), ("::1", 8787, 0, 0)) is None


@pytest.mark.skipif(not socket.has_dualstack_ipv6(), reason="no dual-stack IPv6 here")
def test_an_ipv4_client_of_a_dual_stack_listener_is_found():
    # listen = "[::]:8787": an IPv4 client shows as ::ffff:127.0.0.1, while its
    # own socket sits in the IPv4 table; missing it made every such caller the operator.
    with socket.create_server(("::", 0), family=socket.AF_INET6,
                              dualstack_ipv6=True) as listener:
        listener.settimeout(20)
        client = subprocess.Popen([sys.executable, "-c", CLIENT, str(listener.getsockname()[1])],
                                  stdin=subprocess.PIPE)
        try:
            conn, peer = listener.accept()
            with conn:
                assert peer[0] == "::ffff:127.0.0.1"
                found = peer_pid(peer, conn.getsockname())
        finally:
            client.stdin.close()
            client.wait(20)
    assert found == client.pid
