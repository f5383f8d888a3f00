"""The methods ``dataclasses`` writes for each class, compiled once and kept
between runs.

A dataclass's ``__init__``, ``__repr__``, ``__eq__`` (and a frozen one's
``__setattr__``...) are Python source the decorator writes and compiles as
the class is made: some 1,100 compilations for the server's 200-odd
dataclasses, about a third of its CPU to the first frame (80 ms of 210 on
a quiet machine).  While ``choragos serve`` starts, those compilations are
looked up first in a cache file kept from the last start, keyed by the
source text's SHA-1, so a hit is the code that text compiles to (the
interpreter's cache tag and bytecode version name the file).  Once the session is up,
:func:`release` rewrites the file if anything was compiled anew (a first
start, a new version), with what this start used, and lets the cache go.

The file lies in the user's cache folder (``$XDG_CACHE_HOME/choragos`` or
``~/.cache/choragos``), private to the user as Python's own ``__pycache__``
is to whoever may write there: one not owned by the user, or unreadable, is
not used.  Standard library only (the ``serve`` client loads it first).
"""

from __future__ import annotations

import contextlib
import dataclasses
import marshal
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from types import CodeType
    from typing import Any

_MAX_BYTES = 8 << 20  # a file bigger than this is not ours to trust: start afresh
_LENGTH = 4  # the file: the index's length, the index, then each method's code


class _Cache:
    """The file read whole into one buffer (freed whole by :func:`release`,
    so it leaves no holes in the heap), and an index of it: each method's
    code is unmarshalled as it is asked for."""

    def __init__(self, path: str, data: bytes, index: dict[bytes, tuple[int, int]]) -> None:
        self.path = path
        self.data = data
        self.index = index
        self.used: dict[bytes, bytes | tuple[int, int]] = {}  # new code, or where it is
        self.compiled = 0  # compiled anew in this run
        self.digest = _sha1()

    def exec(self, source: str, globals_: dict | None = None,
             locals_: Mapping | None = None) -> None:
        """``exec`` as dataclasses calls it, the compilation looked up first."""
        if not isinstance(source, str):
            exec(source, globals_, locals_)
            return
        key = self.digest(source.encode()).digest()
        where = self.index.get(key)
        code = self._load(where) if where is not None else None
        if code is None:
            # As exec would: no future flags of this module (annotations stay real).
            code = compile(source, "<string>", "exec", dont_inherit=True)
            self.compiled += 1
            self.used[key] = marshal.dumps(code)
        else:
            self.used[key] = where
        exec(code, globals_, locals_)

    def _load(self, where: tuple[int, int]) -> CodeType | None:
        start, size = where
        try:
            code = marshal.loads(memoryview(self.data)[start:start + size])
        except (EOFError, ValueError, TypeError):
            return None
        return code if isinstance(code, type(_sha1.__code__)) else None

    def entries(self) -> dict[bytes, bytes]:
        """What this run used, each method's code marshalled."""
        view = memoryview(self.data)
        return {key: value if isinstance(value, bytes) else
                bytes(view[value[0]:value[0] + value[1]]) for key, value in self.used.items()}


_current: _Cache | None = None


def cache_path(env: Mapping[str, str] = os.environ) -> str | None:
    """The file, named for the interpreter and its bytecode's version (None:
    an interpreter whose compiled code has no such name, which is not cached)."""
    return cache_file("dataclasses", env)


def cache_file(stem: str, env: Mapping[str, str] = os.environ) -> str | None:
    """``stem``'s file of compiled code in the user's cache folder, named for
    the interpreter, its bytecode's version and its optimization level
    (None: an interpreter whose compiled code has no such name)."""
    from importlib.util import MAGIC_NUMBER

    tag = sys.implementation.cache_tag
    if tag is None:
        return None
    level = f".opt-{sys.flags.optimize}" if sys.flags.optimize else ""
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "choragos", f"{stem}.{tag}-{MAGIC_NUMBER.hex()}{level}.marshal")


def install(path: str | None = None) -> None:
    """Compile dataclasses' methods through the cache until :func:`release`."""
    global _current
    if _current is not None:
        return
    path = path or cache_path()
    if path is None:
        return
    _current = _Cache(path, *_read(path))
    dataclasses.exec = _current.exec  # type: ignore[attr-defined]  # shadows the builtin there


def release(write: bool = True) -> int | None:
    """Stop caching; write the file if anything was compiled anew (and
    ``write``: the process that made every class of the start writes it).
    The number of methods compiled anew in this run (0: every one came from
    the file; None: no cache was installed)."""
    global _current
    cache, _current = _current, None
    if cache is None:
        return None
    if getattr(dataclasses, "exec", None) == cache.exec:
        del dataclasses.exec  # type: ignore[attr-defined]  # the builtin again
    if cache.compiled and write:
        write_file(cache.path, cache.entries())
    return cache.compiled


def _read(path: str) -> tuple[bytes, dict[bytes, tuple[int, int]]]:
    try:
        with open(path, "rb") as handle:
            if not trusted(handle.fileno(), _MAX_BYTES):
                return b"", {}
            data = handle.read()
        index = read_index(data)
    except OSError:
        return b"", {}
    return (data, index) if index else (b"", {})


def trusted(fd: int, max_bytes: int) -> bool:
    """Whether the open file ``fd`` may be run as code: the user's own
    (as Python's ``__pycache__`` is whoever's may write there), and no bigger
    than a file of ours grows."""
    info = os.fstat(fd)
    return info.st_uid == os.getuid() and info.st_size <= max_bytes


def read_index(head: bytes) -> dict[bytes, tuple[int, int]]:
    """The index at the start of a file :func:`write_file` wrote (empty: none,
    or not one): each key's code's offset and size in the file."""
    length = int.from_bytes(head[:_LENGTH], "little")
    if len(head) < _LENGTH + length:
        return {}
    try:
        index = marshal.loads(head[_LENGTH:_LENGTH + length])
    except (EOFError, ValueError, TypeError):
        return {}
    return index if isinstance(index, dict) else {}


def write_file(path: str, entries: dict[bytes, bytes]) -> None:
    """Replace the file at ``path`` with ``entries`` (each key's code,
    marshalled) and their index; a folder or file made is private to the user."""
    index, blobs, offset = {}, [], 0
    for key, blob in entries.items():
        index[key] = (offset, len(blob))
        blobs.append(blob)
        offset += len(blob)
    head = marshal.dumps(index)
    base = _LENGTH + len(head)
    head = marshal.dumps({key: (start + base, size) for key, (start, size) in index.items()})
    if len(head) != base - _LENGTH:  # the offsets' sizes moved the blobs: place them again
        base = _LENGTH + len(head)
        head = marshal.dumps({key: (start + base, size) for key, (start, size) in index.items()})
    folder = os.path.dirname(path)
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(len(head).to_bytes(_LENGTH, "little"))
            handle.write(head)
            handle.writelines(blobs)
        os.replace(temporary, path)  # a reader sees the old file or the new, whole
    except OSError as exc:
        # A cache that cannot be written costs the next start its compilations only.
        import logging

        logging.getLogger("choragos").info("compiled code not cached in %s: %s", path, exc)
        with contextlib.suppress(OSError):
            os.unlink(temporary)


def _sha1() -> Callable[[bytes], Any]:
    """SHA-1 (a key for a source text), from the interpreter's own module:
    ``hashlib`` would load OpenSSL's libcrypto, 3.6 MB, for it."""
    try:
        from _sha1 import sha1
    except ImportError:  # a build without it
        from hashlib import sha1
    return sha1
