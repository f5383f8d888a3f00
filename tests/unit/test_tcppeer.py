"""Which local process holds the other end of a loopback TCP connection."""

from __future__ import annotations

import socket
import subprocess
import sys
import warnings

from choragos.control.tcppeer import peer_pid

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
