"""Which local process is at the other end of a loopback TCP connection.

The control socket learns its caller's pid from the kernel (SO_PEERCRED);
TCP has no such option, but for a connection from this machine the kernel
still knows: ``/proc/net/tcp{,6}`` maps the client's address to a socket
inode, and ``/proc/<pid>/fd`` shows which process holds that inode.  The web
view uses it so a request from inside a role's process tree has that role's
authority, as it would on the control socket.  Linux only; elsewhere, or
for a peer on another machine, the answer is None (the operator).
"""

from __future__ import annotations

import os
import socket


def peer_pid(peer: tuple, local: tuple) -> int | None:
    """The pid holding the client end of the connection ``peer`` -> ``local``."""
    inode = _inode(peer, local)
    return _holder(inode) if inode else None


def _hex_addr(host: str, port: int) -> str | None:
    try:
        packed = (socket.inet_pton(socket.AF_INET6, host) if ":" in host
                  else socket.inet_aton(host))
    except OSError:
        return None
    # The kernel prints each 32-bit word in host (little-endian) order.
    words = [packed[i:i + 4][::-1].hex().upper() for i in range(0, len(packed), 4)]
    return "".join(words) + f":{port:04X}"


def _inode(peer: tuple, local: tuple) -> str | None:
    mine, theirs = _hex_addr(peer[0], peer[1]), _hex_addr(local[0], local[1])
    if mine is None or theirs is None:
        return None
    table = "/proc/net/tcp6" if ":" in peer[0] else "/proc/net/tcp"
    try:
        with open(table, encoding="ascii") as handle:
            next(handle, None)
            for line in handle:
                fields = line.split()
                if len(fields) > 9 and fields[1] == mine and fields[2] == theirs:
                    return fields[9]
    except OSError:
        return None
    return None


def _holder(inode: str) -> int | None:
    target = f"socket:[{inode}]"
    me = os.getpid()
    with os.scandir("/proc") as procs:  # left at the holder: closed, not collected
        for entry in procs:
            if not entry.name.isdigit() or int(entry.name) == me:
                continue
            try:
                fds = os.scandir(f"/proc/{entry.name}/fd")
            except OSError:
                continue
            with fds:
                for fd in fds:
                    try:
                        if os.readlink(fd.path) == target:
                            return int(entry.name)
                    except OSError:
                        continue
    return None
