"""Finding and writing git objects on the checkpoint hot path.

dulwich reads everything a checkpoint needs read (packs, commits, refs), but
its ``add_object`` is built for one object at a time: it takes a lock file per
object and writes a loose copy even when a pack already holds the object.  A
checkpoint hashes thousands of blobs and trees, so this module does what git
does instead: look the id up in the pack indexes first, then write a loose
object (zlib level 1, git's default for loose objects) through a temporary
file and a rename.  Objects are addressed by binary SHA-1 ids throughout.
"""

from __future__ import annotations

import hashlib
import itertools
import mmap
import os
import struct
import threading
import zlib
from collections.abc import Callable, Iterable
from contextlib import suppress
from pathlib import Path

# Whole-file reads below this size; bigger files are streamed twice (hash,
# then compress) so memory stays bounded.
STREAM_THRESHOLD = 32 << 20
_CHUNK = 1 << 20
_IDX_MAGIC = b"\377tOc"
_FANOUT = struct.Struct(">256I")
_EMPTY_TREE = hashlib.sha1(b"tree 0\0").digest()


class ChangedWhileReading(OSError):
    """A big file changed size while it was being hashed; try again later."""


class _PackNames:
    """The sorted object ids of one pack index (version 2), searched in place."""

    def __init__(self, path: Path) -> None:
        with open(path, "rb") as f:
            self._data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        if self._data[:4] != _IDX_MAGIC or self._data[4:8] != b"\0\0\0\2":
            self._data.close()
            raise ValueError(f"{path}: not a version 2 pack index")
        self._fanout = _FANOUT.unpack_from(self._data, 8)
        self._names = 8 + _FANOUT.size

    def __contains__(self, sha: bytes) -> bool:
        # The fan-out table narrows the search to ids sharing the first byte;
        # a C-level find over that slice beats a bisection in Python.
        first = sha[0]
        low = self._fanout[first - 1] if first else 0
        start = self._names + 20 * low
        end = self._names + 20 * self._fanout[first]
        pos = self._data.find(sha, start, end)
        while pos != -1 and (pos - self._names) % 20:
            pos = self._data.find(sha, pos + 1, end)
        return pos != -1

    def close(self) -> None:
        self._data.close()


class ObjectWriter:
    """Hashes content into git objects, writing the ones the repository lacks."""

    def __init__(self, objects_dir: str | os.PathLike[str],
                 alternates: Iterable[object] = ()) -> None:
        self._dir = os.fsencode(objects_dir)
        self._packs = _load_packs(Path(os.fsdecode(self._dir)) / "pack")
        self._alternates = list(alternates)
        self._made: set[bytes] = set()
        self._tmp = itertools.count()
        self._lock = threading.Lock()  # hashing may run on a few threads
        self.written = 0

    def close(self) -> None:
        for pack in self._packs:
            pack.close()
        self._packs = []

    def has(self, sha: bytes) -> bool:
        """Whether the repository holds ``sha``; a loose copy is freshened so
        a concurrent ``git gc`` does not prune it before a ref points at it."""
        if any(sha in pack for pack in self._packs):
            return True
        try:
            os.utime(self._loose_path(sha))
            return True
        except OSError:
            pass
        hexsha = sha.hex().encode()
        return any(hexsha in alt for alt in self._alternates)  # type: ignore[operator]

    def put(self, kind: bytes, data: bytes, *, write: bool = True) -> bytes:
        """The id of an in-memory object, written if ``write`` and missing."""
        header = b"%s %d\0" % (kind, len(data))
        digest = hashlib.sha1(header)
        digest.update(data)
        sha = digest.digest()
        if write and not self.has(sha):
            compressor = zlib.compressobj(1)
            self._store(sha, [compressor.compress(header), compressor.compress(data),
                              compressor.flush()])
        return sha

    def put_tree(self, raw: bytes, *, write: bool = True) -> bytes:
        if not raw:
            # git omits empty trees except the root of an empty commit.
            sha = _EMPTY_TREE
            if write and not self.has(sha):
                self._store(sha, [zlib.compress(b"tree 0\0", 1)])
            return sha
        return self.put(b"tree", raw, write=write)

    def put_file(self, path: bytes, *, write: bool = True) -> bytes:
        """The blob id of a regular file's content (no filters: bytes as on disk)."""
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            size = os.fstat(fd).st_size
            if size < STREAM_THRESHOLD:
                return self.put(b"blob", _read_all(fd, size), write=write)
            return self._put_big(fd, size, write)
        finally:
            os.close(fd)

    def _put_big(self, fd: int, size: int, write: bool) -> bytes:
        header = b"blob %d\0" % size
        digest = hashlib.sha1(header)
        _feed(fd, size, digest.update)
        sha = digest.digest()
        if not write or self.has(sha):
            return sha
        # Hash again while compressing: the file may have changed since the
        # first pass, and the object must be named after what it holds.
        os.lseek(fd, 0, os.SEEK_SET)
        digest = hashlib.sha1(header)
        compressor = zlib.compressobj(1)
        tmp, out = self._open_tmp(sha)
        try:
            _write_all(out, compressor.compress(header))

            def take(chunk: bytes) -> None:
                digest.update(chunk)
                _write_all(out, compressor.compress(chunk))

            _feed(fd, size, take)
            _write_all(out, compressor.flush())
        except BaseException:
            os.close(out)
            os.unlink(tmp)
            raise
        os.close(out)
        sha = digest.digest()
        self._finish(tmp, sha)
        return sha

    def _loose_path(self, sha: bytes) -> bytes:
        hexsha = sha.hex().encode()
        return b"%s/%s/%s" % (self._dir, hexsha[:2], hexsha[2:])

    def _folder(self, sha: bytes) -> bytes:
        folder = self._loose_path(sha)[:-38]
        if folder not in self._made:
            os.makedirs(folder, exist_ok=True)
            self._made.add(folder)
        return folder

    def _open_tmp(self, sha: bytes) -> tuple[bytes, int]:
        folder = self._folder(sha)
        tmp = b"%stmp_obj_choragos_%d_%d" % (folder, os.getpid(), next(self._tmp))
        return tmp, os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o444)

    def _finish(self, tmp: bytes, sha: bytes) -> None:
        self._folder(sha)
        final = self._loose_path(sha)
        # Replacing an existing copy is harmless: the content is the same.
        os.rename(tmp, final)
        with self._lock:
            self.written += 1

    def _store(self, sha: bytes, parts: Iterable[bytes]) -> None:
        tmp, fd = self._open_tmp(sha)
        try:
            for part in parts:
                _write_all(fd, part)
        except BaseException:
            os.close(fd)
            os.unlink(tmp)
            raise
        os.close(fd)
        self._finish(tmp, sha)


def _load_packs(pack_dir: Path) -> list[_PackNames]:
    packs = []
    with suppress(FileNotFoundError):
        for idx in sorted(pack_dir.glob("*.idx")):
            with suppress(OSError, ValueError):
                packs.append(_PackNames(idx))
    return packs


def _read_all(fd: int, size: int) -> bytes:
    data = os.read(fd, size)
    if len(data) == size:
        return data
    # A short read: a file being written to, or a filesystem that reads in
    # pieces.  Read on to the end so the blob matches what is there now.
    parts = [data]
    while chunk := os.read(fd, _CHUNK):
        parts.append(chunk)
    return b"".join(parts)


def _feed(fd: int, size: int, sink: Callable[[bytes], object]) -> None:
    """Pass exactly ``size`` bytes of ``fd`` to ``sink`` in chunks."""
    remaining = size
    while remaining > 0:
        chunk = os.read(fd, min(_CHUNK, remaining))
        if not chunk:
            raise ChangedWhileReading("file shrank while it was being read")
        remaining -= len(chunk)
        sink(chunk)
    if os.read(fd, 1):
        raise ChangedWhileReading("file grew while it was being read")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
