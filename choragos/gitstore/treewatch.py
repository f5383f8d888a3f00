"""Knowing, without walking it, that a work tree has not changed (Linux inotify).

A checkpoint of a tree where nothing changed still has to ``lstat`` every
file, because writing into an existing file changes nothing a directory
shows.  A long-lived checkpointer can do better: it watches every directory
its walks enter, each watch placed *before* the walk reads that directory, so
any change the walk could have missed raises an event.  A snapshot with no
event since the last walk began can reuse that walk's tree.  And the events
name what changed: a walk after a few changes looks only at the entries
named since the last walk began (:meth:`TreeWatch.begin_walk`), in the
directories that had any, and takes every other entry from that walk.

The watch says "unchanged" only when it can vouch for it; anything it cannot
vouch for -- a watch it could not place (limits, permissions, another
platform), a full kernel queue, a watched directory gone -- makes it say
"changed", and the caller walks as before.  Events on entries a checkpoint
never holds (``.choragos`` anywhere, ``.git`` at the root) are not changes.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import struct
import sys

IN_MODIFY = 0x00000002
IN_ATTRIB = 0x00000004
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ONLYDIR = 0x01000000
IN_DONT_FOLLOW = 0x02000000
IN_ISDIR = 0x40000000
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = os.O_CLOEXEC

MASK = (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE
        | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW)
_EVENT = struct.Struct("iIII")
_NEVER = (b".choragos", b".choragos\0")


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        # The process's own symbols hold the C library's (glibc or musl):
        # find_library would run `ldconfig -p`, a process of its own.
        libc = ctypes.CDLL(None, use_errno=True)
        libc.inotify_init1.argtypes = [ctypes.c_int]
        libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
    except (OSError, AttributeError):
        return None
    return libc


class TreeWatch:
    """Directory watches under ``root``; ``trusted`` is False once anything
    could have slipped by unseen, until :meth:`begin_walk` starts afresh."""

    def __init__(self, root: str | bytes) -> None:
        self._root = os.fsencode(root).rstrip(b"/") + b"/"
        self._libc = _libc()
        self._fd = self._libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC) if self._libc else -1
        self._wds: dict[int, bytes] = {}
        self._watched: set[bytes] = set()
        self.trusted = False
        self.events = 0  # relevant events seen, ever (tests read it)
        self._moved = False
        # Since the last begin_walk: the entries named by events, by watched
        # directory (None: the directory itself changed, look at all of it),
        # and whether that account is whole (no event lost, no watch missing).
        self._dirty: dict[bytes, set[bytes] | None] = {}
        self._complete = False

    @property
    def available(self) -> bool:
        return self._fd >= 0

    def begin_walk(self) -> dict[bytes, set[bytes] | None] | None:
        """A walk starts: whatever happened so far it will see for itself.

        Returns what changed since the last walk began, by directory (a
        directory not named had no event), or None when the watch cannot
        vouch for that account: the first walk, a lost event, a watch that
        could not be placed, a moved directory.
        """
        self._drain()
        dirty = self._dirty if self._complete else None
        self._dirty = {}
        self.trusted = self._complete = self.available
        return dirty

    def watch(self, rel: bytes) -> None:
        """Watch directory ``rel`` ("" or "a/b/"); call before reading it."""
        if rel in self._watched or not self.trusted:
            return
        wd = self._libc.inotify_add_watch(self._fd, self._root + rel, MASK)
        if wd < 0:
            # Out of watches, or unreadable: walk every time.
            self.trusted = self._complete = False
            return
        self._wds[wd] = rel
        self._watched.add(rel)

    def unchanged(self) -> bool:
        """Whether nothing changed since the last :meth:`begin_walk` (drains
        the events; once False it stays False until the next walk)."""
        if self.trusted and self._drain():
            self.trusted = False
        return self.trusted

    def distrust(self) -> None:
        """The caller knows of a change no watch can see (a nested repository)."""
        self.trusted = self._complete = False

    def close(self) -> None:
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = -1
        self.trusted = self._complete = False

    def _restart(self) -> None:
        """Drop every watch: a directory moved, so a watch may now sit on
        another path than the one it was placed for."""
        self.close()  # and the account of changes is no longer whole
        self._fd = self._libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        self._wds.clear()
        self._watched.clear()

    def _drain(self) -> bool:
        """Read every queued event; True when one of them matters."""
        changed = False
        while self._fd >= 0:
            try:
                data = os.read(self._fd, 1 << 16)
            except BlockingIOError:
                break
            except OSError:
                self.close()
                return True
            changed |= self._parse(data)
        if self._moved:
            self._moved = False
            self._restart()
        return changed

    def _parse(self, data: bytes) -> bool:
        changed = False
        pos = 0
        while pos + _EVENT.size <= len(data):
            wd, mask, _cookie, size = _EVENT.unpack_from(data, pos)
            name = data[pos + _EVENT.size:pos + _EVENT.size + size].rstrip(b"\0")
            pos += _EVENT.size + size
            if mask & IN_Q_OVERFLOW:
                changed, self._complete = True, False  # events were lost
                continue
            if mask & IN_IGNORED:
                changed = True
                rel = self._wds.pop(wd, None)
                if rel is not None:
                    self._watched.discard(rel)
                    self._dirty[rel] = None  # gone: whatever is there now is new
                continue
            rel = self._wds.get(wd)
            if name == b".choragos" or (name == b".git" and rel == b""):
                continue  # never checkpointed
            if mask & IN_MOVE_SELF or (mask & IN_ISDIR and mask & (IN_MOVED_FROM | IN_MOVED_TO)):
                self._moved = True
            changed = True
            self.events += 1
            self._note(rel, name)
        return changed

    def _note(self, rel: bytes | None, name: bytes) -> None:
        """Remember that entry ``name`` of directory ``rel`` changed ("" names
        the directory itself)."""
        if rel is None:
            self._complete = False  # a watch we no longer know
        elif not name:
            self._dirty[rel] = None
        else:
            names = self._dirty.setdefault(rel, set())
            if names is not None:
                names.add(name)
