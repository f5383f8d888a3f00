"""Finding and writing git objects on the checkpoint hot path.

dulwich reads everything a checkpoint needs read (packs, commits, refs), but
its ``add_object`` is built for one object at a time: it takes a lock file per
object and writes a loose copy even when a pack already holds the object.  A
checkpoint hashes thousands of blobs and trees, so this module does what git
does instead: look the id up in the pack indexes first, and write what is
missing the cheap way -- many new objects as one pack (as ``git fast-import``
does), a few as loose objects (zlib level 1, git's default for loose objects,
through a temporary file and a rename).  Objects are named by binary SHA-1.
"""

from __future__ import annotations

import hashlib
import itertools
import mmap
import os
import re
import struct
import threading
import zlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

# Whole-file reads below this size; bigger files are streamed twice (hash,
# then compress) so memory stays bounded.
STREAM_THRESHOLD = 32 << 20
_CHUNK = 1 << 20
_IDX_MAGIC = b"\377tOc"
_TYPES = {b"commit": 1, b"tree": 2, b"blob": 3, b"tag": 4}
# New objects are held back until there are this many (or this many bytes),
# then go into a pack; fewer are written loose.  Creating files is what costs
# (a pack of 40 objects is written in a quarter of the time of 40 loose
# ones), and git folds the packs together when it next collects garbage.
_PACK_MIN_OBJECTS = 32
_PACK_MIN_BYTES = 8 << 20
_PACK_MAX_OBJECT = 1 << 20  # bigger objects gain nothing from packing: loose
_FANOUT = struct.Struct(">256I")
_EMPTY_TREE = hashlib.sha1(b"tree 0\0").digest()
_TMP_NUMBERS = itertools.count()  # temporary names: tmp_obj_choragos_<pid>_<n>


class ChangedWhileReading(OSError):
    """A big file changed size while it was being hashed; try again later."""


class StoreWriteFailed(Exception):
    """Writing into the repository's object store failed (a full disk, a
    quota, a read-only store).  Not an ``OSError`` on purpose: a file that
    cannot be *read* is left out of a checkpoint, but a blob that cannot be
    *written* fails the checkpoint -- left out, the file would be missing
    from it, and a rollback to it would delete the file."""

    def __init__(self, exc: OSError) -> None:
        super().__init__(f"cannot write to the repository's objects: "
                         f"{exc.strerror or exc}")
        self.errno = exc.errno


@contextmanager
def _writing() -> Iterator[None]:
    """Turn a failed write into the object store into :class:`StoreWriteFailed`."""
    try:
        yield
    except OSError as exc:
        if isinstance(exc, ChangedWhileReading):
            raise
        raise StoreWriteFailed(exc) from exc


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


@dataclass(frozen=True)
class _Held:
    """A new object waiting to learn whether it goes into a pack or loose."""

    sha: bytes
    type_num: int
    loose_header: bytes
    raw: bytes
    # The content compressed for a pack (no header inside); None until the
    # object is known to go into one (a loose copy compresses header and
    # content together, so compressing for both would do it twice).
    packed: bytes | None


class _PackFile:
    """A pack being written: objects appended, then counted, indexed and named."""

    def __init__(self, pack_dir: bytes, tag: int) -> None:
        os.makedirs(pack_dir, exist_ok=True)
        self._dir = pack_dir
        self._tmp = b"%s/tmp_pack_choragos_%d_%d" % (pack_dir, os.getpid(), tag)
        self._fd = os.open(self._tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC,
                           0o444)
        self._entries: list[tuple[bytes, int, int]] = []  # (id, crc32, offset)
        self._offset = 12
        _write_all(self._fd, b"PACK" + struct.pack(">II", 2, 0))  # count fixed up later

    def add(self, sha: bytes, type_num: int, size: int, packed: bytes) -> None:
        head = _entry_header(type_num, size)
        self._entries.append((sha, zlib.crc32(packed, zlib.crc32(head)), self._offset))
        _write_all(self._fd, head)
        _write_all(self._fd, packed)
        self._offset += len(head) + len(packed)

    def finish(self) -> None:
        """Seal the pack, write its index, and move both into place (index last:
        git and dulwich only see a pack once its index exists)."""
        os.pwrite(self._fd, struct.pack(">I", len(self._entries)), 8)
        checksum = _file_sha1(self._fd, self._offset)
        os.pwrite(self._fd, checksum, self._offset)
        os.fsync(self._fd)
        os.close(self._fd)
        final = b"%s/pack-%s" % (self._dir, checksum.hex().encode())
        index_tmp = self._tmp + b".idx"
        with open(index_tmp, "wb") as f:
            f.write(_pack_index(self._entries, checksum))
            f.flush()
            os.fsync(f.fileno())
        os.chmod(index_tmp, 0o444)
        os.rename(self._tmp, final + b".pack")
        os.rename(index_tmp, final + b".idx")

    def abort(self) -> None:
        with suppress(OSError):
            os.close(self._fd)
        with suppress(OSError):
            os.unlink(self._tmp)


def _entry_header(type_num: int, size: int) -> bytes:
    """A pack entry's type and size: 4 size bits in the first byte, then 7 per byte."""
    out = bytearray()
    byte = (type_num << 4) | (size & 0x0F)
    size >>= 4
    while size:
        out.append(byte | 0x80)
        byte = size & 0x7F
        size >>= 7
    out.append(byte)
    return bytes(out)


def _file_sha1(fd: int, length: int) -> bytes:
    digest = hashlib.sha1()
    position = 0
    while position < length:
        chunk = os.pread(fd, min(_CHUNK, length - position), position)
        if not chunk:
            raise OSError("pack file shorter than written")
        digest.update(chunk)
        position += len(chunk)
    return digest.digest()


def _pack_index(entries: list[tuple[bytes, int, int]], checksum: bytes) -> bytes:
    """A version 2 pack index: fan-out, sorted ids, CRCs, offsets, checksums."""
    entries = sorted(entries)
    counts = [0] * 256
    for sha, _, _ in entries:
        counts[sha[0]] += 1
    fanout = list(itertools.accumulate(counts))
    small, large = [], []
    for _, _, offset in entries:
        if offset < 0x80000000:
            small.append(offset)
        else:  # offsets past 2 GiB live in a table of their own
            small.append(0x80000000 | len(large))
            large.append(offset)
    count = len(entries)
    body = b"".join([_IDX_MAGIC, struct.pack(">I", 2), _FANOUT.pack(*fanout),
                     b"".join(sha for sha, _, _ in entries),
                     struct.pack(f">{count}I", *(crc for _, crc, _ in entries)),
                     struct.pack(f">{count}I", *small), struct.pack(f">{len(large)}Q", *large),
                     checksum])
    return body + hashlib.sha1(body).digest()


class ObjectWriter:
    """Hashes content into git objects, writing the ones the repository lacks.

    Objects written are visible to git once :meth:`finish` returns; before
    that they may sit in a pack being built.  :meth:`close` without
    :meth:`finish` drops them.
    """

    def __init__(self, objects_dir: str | os.PathLike[str],
                 alternates: Iterable[object] = (), *, packs: bool = True) -> None:
        self._dir = os.fsencode(objects_dir)
        # Without ``packs``, for an object no pack can hold yet (a new commit).
        self._packs = _load_packs(Path(os.fsdecode(self._dir)) / "pack") if packs else []
        self._alternates = list(alternates)
        self._made: set[bytes] = set()
        self._tmp = _TMP_NUMBERS  # one sequence per process: two writers never collide
        self._lock = threading.Lock()  # hashing may run on a few threads
        self._held: list[_Held] = []  # new objects not yet in a pack or loose
        self._held_bytes = 0
        self._new: set[bytes] = set()  # ids of held or packed objects
        self._pack: _PackFile | None = None
        self.written = 0

    def close(self) -> None:
        """Release pack maps; a pack still being built is discarded."""
        if self._pack is not None:
            self._pack.abort()
            self._pack = None
        for pack in self._packs:
            pack.close()
        self._packs = []

    def finish(self) -> None:
        """Make every written object visible: the pack, or the held few loose."""
        with self._lock:
            pack, held = self._pack, self._held
            self._pack, self._held = None, []
        if pack is not None:
            pack.finish()
        for item in held:
            self._store(item.sha, [zlib.compress(item.loose_header + item.raw, 1)])

    def has(self, sha: bytes) -> bool:
        """Whether the repository holds ``sha``; a loose copy is freshened so
        a concurrent ``git gc`` does not prune it before a ref points at it."""
        if sha in self._new or any(sha in pack for pack in self._packs):
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
        if not write or self.has(sha):
            return sha
        if len(data) > _PACK_MAX_OBJECT:
            compressor = zlib.compressobj(1)
            self._store(sha, [compressor.compress(header), compressor.compress(data),
                              compressor.flush()])
        else:
            # Compressed here, outside the lock (hashing threads overlap it),
            # once a pack is being written; the held few wait to learn where
            # they go: most checkpoints write a few objects, loose.
            packed = zlib.compress(data, 1) if self._pack is not None else None
            self._hold(_Held(sha, _TYPES[kind], header, data, packed))
        return sha

    def _hold(self, item: _Held) -> None:
        with self._lock:
            if item.sha in self._new:
                return
            self._new.add(item.sha)
            self._held.append(item)
            self._held_bytes += len(item.raw)
            if self._pack is None and (len(self._held) >= _PACK_MIN_OBJECTS
                                       or self._held_bytes >= _PACK_MIN_BYTES):
                with _writing():
                    self._pack = _PackFile(self._dir + b"/pack", next(self._tmp))
            pack, batch = self._pack, self._held
            if pack is None:
                return
            self._held = []
            self.written += len(batch)
        # The ones held before the pack began are compressed now, outside the
        # lock, as the others were.
        ready = [(held, held.packed if held.packed is not None else zlib.compress(held.raw, 1))
                 for held in batch]
        with self._lock, _writing():
            for held, packed in ready:
                pack.add(held.sha, held.type_num, len(held.raw), packed)

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
        with _writing():
            tmp, out = self._open_tmp(sha)
        try:
            with _writing():
                _write_all(out, compressor.compress(header))

            def take(chunk: bytes) -> None:
                digest.update(chunk)
                with _writing():
                    _write_all(out, compressor.compress(chunk))

            _feed(fd, size, take)  # a read that fails stays an OSError
            with _writing():
                _write_all(out, compressor.flush())
        except BaseException:
            os.close(out)
            os.unlink(tmp)
            raise
        os.close(out)
        sha = digest.digest()
        with _writing():
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
        with _writing():
            tmp, fd = self._open_tmp(sha)
        try:
            with _writing():
                for part in parts:
                    _write_all(fd, part)
        except BaseException:
            os.close(fd)
            os.unlink(tmp)
            raise
        os.close(fd)
        with _writing():
            self._finish(tmp, sha)


def _load_packs(pack_dir: Path) -> list[_PackNames]:
    packs = []
    with suppress(FileNotFoundError):
        for idx in sorted(pack_dir.glob("*.idx")):
            with suppress(OSError, ValueError):
                packs.append(_PackNames(idx))
    return packs


def loose_blob(objects_dir: str | bytes, sha: bytes) -> Iterator[bytes] | None:
    """The content of blob ``sha`` in pieces of at most 1 MB, read from its
    loose object and never held whole (a rollback of a file of gigabytes
    held it three times over); None when no loose copy is here (a pack or
    another store holds it).  Raises ``ValueError`` at the end when the
    object is not the blob it is named for, before a caller puts it in
    place."""
    hexsha = sha.hex().encode()
    try:
        fd = os.open(b"%s/%s/%s" % (os.fsencode(objects_dir), hexsha[:2], hexsha[2:]),
                     os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    return _blob_pieces(fd, sha)


def _blob_pieces(fd: int, sha: bytes) -> Iterator[bytes]:
    digest = hashlib.sha1()
    head, size, seen = b"", -1, 0
    try:
        for piece in _inflate(fd):
            digest.update(piece)
            if size < 0:  # the header, "blob <size>\0", comes first
                head += piece
                kind, nul, piece = head.partition(b"\0")
                if not nul:
                    continue
                if not kind.startswith(b"blob ") or not kind[5:].isdigit():
                    raise ValueError(f"object {sha.hex()} is not a blob")
                size = int(kind[5:])
            seen += len(piece)
            if piece:
                yield piece
    finally:
        os.close(fd)
    if seen != size or digest.digest() != sha:
        raise ValueError(f"object {sha.hex()} is damaged")


def _inflate(fd: int) -> Iterator[bytes]:
    """What the zlib stream of ``fd`` holds, in bounded pieces (a megabyte
    of zeros compressed is a kilobyte)."""
    inflate = zlib.decompressobj()
    while not inflate.eof:
        data = os.read(fd, _CHUNK)
        if not data:
            raise ValueError("a loose object ends short")
        while True:
            out = inflate.decompress(data, _CHUNK)
            if out:
                yield out
            data = inflate.unconsumed_tail
            if inflate.eof or (not data and len(out) < _CHUNK):
                break


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


_TEMPORARY = re.compile(rb"tmp_(?:obj|pack)_choragos_(\d+)_\d+(?:\.idx)?")
_INDEX_TEMPORARY = re.compile(rb"index\.tmp(\d+)")  # the private index's (gitwalk)


def remove_stale_temporaries(objects_dir: str | bytes,
                             state_dir: str | os.PathLike[str] | None = None) -> int:
    """Delete the temporary files a killed writer left: object and pack files
    in ``objects_dir``, and the private index's in ``state_dir``, those named
    for a process that no longer runs.  Returns how many went."""
    base = os.fsencode(objects_dir)
    try:
        folders = [e.path for e in os.scandir(base) if e.is_dir(follow_symlinks=False)]
    except OSError:
        folders = []
    removed = sum(_remove_dead(folder, _TEMPORARY) for folder in folders)
    if state_dir is not None:
        removed += _remove_dead(os.fsencode(state_dir), _INDEX_TEMPORARY)
    return removed


def _remove_dead(folder: bytes, names: re.Pattern) -> int:
    """Remove the files of ``folder`` whose name matches ``names`` with the
    pid of a process that no longer runs."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return 0
    removed = 0
    for entry in entries:
        match = names.fullmatch(entry.name)
        if match and not _running(int(match.group(1))):
            with suppress(OSError):
                os.unlink(entry.path)
                removed += 1
    return removed


def _running(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # someone else's process: not ours to judge
    return True

