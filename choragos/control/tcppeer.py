"""Which local process is at the other end of a loopback TCP connection.

The control socket learns its caller's pid from the kernel (SO_PEERCRED);
TCP has no such option, but for a connection from this machine the kernel
still knows: ``/proc/net/tcp{,6}`` maps the client's address to a socket
inode, and ``/proc/<pid>/fd`` shows which process holds that inode.  The web
view uses it so a request from inside a role's process tree has that role's
authority, as it would on the control socket.

The answer fails closed.  A peer on this machine whose process cannot be
found is :data:`UNTRACED`, never the operator: a client that sends its
request and closes its end at once leaves no holder to find (its row shows
inode 0, or is gone), and it must not pass for the operator by doing so.
A peer socket that belongs to another user (a TLS proxy running as root in
front, whose fds this user cannot read) is not one of the roles, which run
as this user; it is None, like a peer on another machine.  Linux only;
elsewhere the answer is None.
"""

from __future__ import annotations

import errno
import ipaddress
import os
import socket

UNTRACED = -1  # a peer on this machine whose process could not be found


def peer_pid(peer: tuple, local: tuple) -> int | None:
    """The pid holding the client end of the connection ``peer`` -> ``local``;
    None for a peer on another machine (or another user's), :data:`UNTRACED`
    for one on this machine that cannot be found."""
    row = _row(peer, local)
    if row is None:
        return UNTRACED if _on_this_machine(peer) else None
    inode, uid = row
    holder = _holder(inode) if inode != "0" else None
    if holder is not None:
        return holder
    if inode != "0" and uid != os.getuid():
        return None  # another user's socket whose fds are closed to us: no role's
    return UNTRACED


def _hex_addr(host: str, port: int) -> str | None:
    try:
        packed = (socket.inet_pton(socket.AF_INET6, host) if ":" in host
                  else socket.inet_aton(host))
    except OSError:
        return None
    # The kernel prints each 32-bit word in host (little-endian) order.
    words = [packed[i:i + 4][::-1].hex().upper() for i in range(0, len(packed), 4)]
    return "".join(words) + f":{port:04X}"


def _row(peer: tuple, local: tuple) -> tuple[str, int] | None:
    """The client end's socket inode and owner's uid, from the kernel's table.

    On a dual-stack listener an IPv4 client shows as ``::ffff:a.b.c.d``, but
    its own socket (AF_INET) is in the IPv4 table under the plain address."""
    found = _find("/proc/net/tcp6" if ":" in peer[0] else "/proc/net/tcp", peer, local)
    mapped = _unmapped(peer[0]), _unmapped(local[0])
    if found is None and mapped[0] and mapped[1]:
        found = _find("/proc/net/tcp", (mapped[0], peer[1]), (mapped[1], local[1]))
    return found


def _unmapped(host: str) -> str | None:
    """``a.b.c.d`` for ``::ffff:a.b.c.d``, else None."""
    try:
        address = ipaddress.ip_address(host.split("%")[0])
    except ValueError:
        return None
    mapped = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else None
    return str(mapped) if mapped else None


def _find(table: str, peer: tuple, local: tuple) -> tuple[str, int] | None:
    mine, theirs = _hex_addr(peer[0], peer[1]), _hex_addr(local[0], local[1])
    if mine is None or theirs is None:
        return None
    try:
        with open(table, encoding="ascii") as handle:
            next(handle, None)
            for line in handle:
                fields = line.split()
                if len(fields) > 9 and fields[1] == mine and fields[2] == theirs:
                    return fields[9], int(fields[7])
    except (OSError, ValueError):
        return None
    return None


def _on_this_machine(peer: tuple) -> bool:
    """Whether the peer's address is one of this machine's (loopback, or one
    a socket can bind); when that cannot be told, it is taken to be."""
    try:
        address = ipaddress.ip_address(_unmapped(peer[0]) or peer[0].split("%")[0])
    except ValueError:
        return True
    if address.is_loopback:
        return True
    family = socket.AF_INET6 if address.version == 6 else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as probe:
            probe.bind((str(address), 0, 0, peer[3]) if family == socket.AF_INET6 and len(peer) > 3
                       else (str(address), 0))
    except OSError as exc:
        return exc.errno != errno.EADDRNOTAVAIL
    return True


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
