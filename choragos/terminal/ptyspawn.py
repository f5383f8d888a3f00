"""Start a program in a new pseudo-terminal, as the leader of its own session.

The child gets the terminal's far end as its standard input, output and
error and as its controlling terminal (so Ctrl-C and a resize reach its
foreground process group), its own session and process group, the
working directory and environment given, the window size set before it
runs, and no other descriptor of ours.

On Linux with the GNU C library this is one ``posix_spawn`` call: the
C library starts the child without copying the caller (the caller waits
only until the child has executed the program), and the child, leader of a
new session with no terminal yet, takes the terminal it opens as its
controlling one.  Forking a session server instead copies its page tables
and runs Python in the child before ``exec`` (ptyprocess's way): 1-2 ms of
the server's CPU and 6-25 ms of wall time per role.  Elsewhere (macOS, other
C libraries) the fork remains the way: :data:`NATIVE` is None there.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import signal
import struct
import sys
import termios
from collections.abc import Callable, Mapping, Sequence

POSIX_SPAWN_SETSIGDEF = 0x04  # glibc's values (spawn.h)
POSIX_SPAWN_SETSID = 0x80  # since glibc 2.26
_BUFFER = 1024  # more than glibc's posix_spawn_file_actions_t (80) and attr (336)


class Spawned:
    """A program started in a terminal: its pid, our end of the terminal,
    and how to close that end (once)."""

    def __init__(self, pid: int, fd: int, close: Callable[[], None]) -> None:
        self.pid = pid
        self.fd = fd
        self.close = close


def set_size(fd: int, cols: int, rows: int) -> None:
    """The terminal's window size (the kernel signals its foreground group)."""
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def get_size(fd: int) -> tuple[int, int]:
    """The terminal's window size, ``(cols, rows)``."""
    rows, cols, _, _ = struct.unpack("HHHH", fcntl.ioctl(fd, termios.TIOCGWINSZ, b"\0" * 8))
    return cols, rows


def spawn(argv: Sequence[str], cwd: str, env: Mapping[str, str], cols: int,
          rows: int) -> Spawned:
    """Start ``argv`` (its first word a path) in a new terminal of
    ``cols`` x ``rows``; OSError when it cannot be started."""
    if NATIVE is not None:
        return NATIVE(argv, cwd, env, cols, rows)
    return forked(argv, cwd, env, cols, rows)


def forked(argv: Sequence[str], cwd: str, env: Mapping[str, str], cols: int,
           rows: int) -> Spawned:
    """The portable way: ptyprocess forks, and sets up the child in Python."""
    from ptyprocess import PtyProcess

    proc = PtyProcess.spawn(list(argv), cwd=cwd, env=dict(env), dimensions=(rows, cols))

    def close() -> None:
        # Through ptyprocess's own file object, and marked closed: else its
        # ``__del__`` would close the same number again, perhaps another
        # pane's terminal by then.  The closure keeps it alive until then.
        proc.fileobj.close()
        proc.closed = True
        proc.fd = -1

    return Spawned(proc.pid, proc.fd, close)


def _encoded(words: Sequence[str]) -> ctypes.Array:
    """A NULL-terminated ``char *[]``; as ``os.execve``, a NUL inside is refused."""
    encoded = [os.fsencode(word) for word in words]
    if any(b"\0" in word for word in encoded):
        raise ValueError("embedded null byte")
    return (ctypes.c_char_p * (len(encoded) + 1))(*encoded, None)


def _environment(env: Mapping[str, str]) -> ctypes.Array:
    for name in env:
        if not name or "=" in name:
            raise ValueError("illegal environment variable name")
    return _encoded([f"{name}={value}" for name, value in env.items()])


class _NativeSpawn:
    """``posix_spawn`` with the GNU C library's chdir and closefrom actions."""

    def __init__(self, libc: ctypes.CDLL) -> None:
        self.libc = libc
        pointer = ctypes.c_void_p
        libc.posix_spawn.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_char_p, pointer,
                                     pointer, pointer, pointer]
        for name, extra in (("posix_spawn_file_actions_addopen",
                             [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_uint]),
                            ("posix_spawn_file_actions_adddup2", [ctypes.c_int, ctypes.c_int]),
                            ("posix_spawn_file_actions_addchdir_np", [ctypes.c_char_p]),
                            ("posix_spawn_file_actions_addclosefrom_np", [ctypes.c_int]),
                            ("posix_spawnattr_setflags", [ctypes.c_short]),
                            ("posix_spawnattr_setsigdefault", [pointer]),
                            ("posix_spawn_file_actions_init", []),
                            ("posix_spawn_file_actions_destroy", []),
                            ("posix_spawnattr_init", []), ("posix_spawnattr_destroy", [])):
            getattr(libc, name).argtypes = [pointer, *extra]

    def __call__(self, argv: Sequence[str], cwd: str, env: Mapping[str, str], cols: int,
                 rows: int) -> Spawned:
        args, environ = _encoded(argv), _environment(env)
        master, slave = os.openpty()  # both closed on exec: no child keeps ours
        try:
            set_size(slave, cols, rows)
            pid = self._start(os.fsencode(os.ttyname(slave)), args, environ, os.fsencode(cwd))
        except BaseException:
            os.close(master)
            raise
        finally:
            os.close(slave)
        return Spawned(pid, master, lambda: os.close(master))

    def _start(self, tty: bytes, args: ctypes.Array, environ: ctypes.Array, cwd: bytes) -> int:
        libc = self.libc
        actions, attrs = ctypes.create_string_buffer(_BUFFER), ctypes.create_string_buffer(_BUFFER)
        libc.posix_spawn_file_actions_init(actions)
        libc.posix_spawnattr_init(attrs)
        try:
            libc.posix_spawnattr_setflags(attrs, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGDEF)
            libc.posix_spawnattr_setsigdefault(attrs, _INTERNAL_SIGNALS)
            # Opened by the new session's leader, the terminal becomes its controlling one.
            libc.posix_spawn_file_actions_addopen(actions, 0, tty, os.O_RDWR, 0)
            libc.posix_spawn_file_actions_adddup2(actions, 0, 1)
            libc.posix_spawn_file_actions_adddup2(actions, 0, 2)
            libc.posix_spawn_file_actions_addchdir_np(actions, cwd)
            libc.posix_spawn_file_actions_addclosefrom_np(actions, 3)
            pid = ctypes.c_int(0)
            failed = libc.posix_spawn(ctypes.byref(pid), args[0], actions, attrs, args, environ)
        finally:
            libc.posix_spawn_file_actions_destroy(actions)
            libc.posix_spawnattr_destroy(attrs)
        if failed:
            raise OSError(failed, os.strerror(failed))
        return pid.value


def _signal_set(signals: range) -> ctypes.Array:
    """A ``sigset_t`` (1024 bits, in words of a C long) holding ``signals``."""
    bits = 8 * ctypes.sizeof(ctypes.c_ulong)
    words = (ctypes.c_ulong * (1024 // bits))()
    for number in signals:
        words[(number - 1) // bits] |= 1 << ((number - 1) % bits)
    return words


# The C library's own two signals below SIGRTMIN: its posix_spawn ignores them
# in the child while it sets it up, and an ignored signal stays ignored across
# exec, so they are set back to their default as a fork leaves them.
_INTERNAL_SIGNALS = _signal_set(range(32, signal.SIGRTMIN))


def _native() -> _NativeSpawn | None:
    """The posix_spawn way where it gives the child its controlling terminal."""
    if not sys.platform.startswith("linux"):
        return None  # BSD kernels do not make an opened terminal the controlling one
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION").startswith("glibc"):
            return None
        # The process's own symbols hold the C library's (no ``ldconfig`` run).
        libc = ctypes.CDLL(None, use_errno=True)
        libc.posix_spawn_file_actions_addclosefrom_np  # noqa: B018 (glibc 2.34 and later)
        libc.posix_spawn_file_actions_addchdir_np  # noqa: B018
    except (AttributeError, OSError, ValueError):
        return None
    return _NativeSpawn(libc)


NATIVE: Callable[..., Spawned] | None = _native()
