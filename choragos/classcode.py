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
:func:`save` rewrites the file if anything was compiled anew (a first
start, a new version), with what this start used; the cache stays until
:func:`release` (some 2 s later), which writes it again only if a class
was made anew meanwhile: one a thread (the deck's, a role's) makes lazily
as the start ends, which would otherwise be in one start's file and not
in the next's.

Writing that source and hashing it was still about a third of the
decorator's work at a warm start (some 700 methods' text).  On Python 3.11, whose
``dataclasses`` writes each method in one helper (``_init_fn``,
``_repr_fn``, ``_cmp_fn``, ``_frozen_get_del_attr``, ``_hash_fn``), those
helpers are answered from the cache by what the source is made of instead:
the fields' names and kinds and the class's options, from which the helper
would write the same text.  The helper's variables (the fields' types and
defaults, the class) are bound as it binds them, and the code run is the
code that text compiled to, kept the first time the helper ran (for the
Python, to its patch release, that ran it).  Every other step of the
decorator (reading the fields, the checks, the hash, slots,
``__match_args__``) is its own.

The file lies in the user's cache folder (``$XDG_CACHE_HOME/choragos`` or
``~/.cache/choragos``), private to the user as Python's own ``__pycache__``
is to whoever may write there: one not owned by the user, or unreadable, is
not used.  Standard library only (the ``serve`` client loads it first).
"""

from __future__ import annotations

import _thread
import contextlib
import dataclasses
import marshal
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from types import CodeType
    from typing import Any, TypeAlias

    Key: TypeAlias = bytes | tuple[Any, ...]

# Python 3.11's dataclasses writes each kind of method in a helper of its own,
# answered from the cache by what it writes from (below);
# on another version the cache is keyed by the source's text alone.
_HELPERS_KNOWN = sys.version_info[:2] == (3, 11)
_MAX_BYTES = 8 << 20  # a file bigger than this is not ours to trust: start afresh
_LENGTH = 4  # the file: the index's length, the index, then each method's code
# What a file keeps: a server with its deck uses about 0.75 MB (728 entries).
_KEEP_BYTES = 2 << 20


class _Cache:
    """The file read whole into one buffer (freed whole by :func:`release`,
    so it leaves no holes in the heap), and an index of it: each method's
    code is unmarshalled as it is asked for.  A key is a source text's
    SHA-1, or (on Python 3.11) what a helper of the decorator writes its
    methods' source from, which keeps the code of each of them."""

    def __init__(self, path: str, data: bytes, index: dict[Key, tuple[int, int]]) -> None:
        self.path = path
        self.data = data
        self.index = index
        # New code, where it is in the file read, or WRITTEN.
        self.used: dict[Key, bytes | tuple[int, int] | None] = {}
        self.compiled = 0  # compiled anew in this run
        self.digest = _sha1()
        self.recording: dict[int, list[CodeType]] = {}  # a helper's codes, by thread
        # A helper's entries hold for the Python that wrote them, to its patch release.
        self.helpers_hold = _PYTHON in index
        if self.helpers_hold:
            self.used[_PYTHON] = index[_PYTHON]

    def exec(self, source: str, globals_: dict | None = None,
             locals_: Mapping | None = None) -> None:
        """``exec`` as dataclasses calls it, the compilation looked up first."""
        if not isinstance(source, str):
            exec(source, globals_, locals_)
            return
        key = self.digest(source.encode()).digest()
        where = self.index.get(key)
        code = self._load(where) if where is not None else None
        compiled = not isinstance(code, _CODE)
        if compiled:
            # As exec would: no future flags of this module (annotations stay real).
            code = compile(source, "<string>", "exec", dont_inherit=True)
            self.compiled += 1
        recording = self.recording.get(_thread.get_ident())
        if recording is not None:
            recording.append(code)  # kept under the helper's key, not the text's
        elif compiled:
            self.used[key] = marshal.dumps(code)
        else:
            self.used[key] = where
        exec(code, globals_, locals_)

    def _load(self, where: tuple[int, int]) -> Any:
        start, size = where
        try:
            return marshal.loads(memoryview(self.data)[start:start + size])
        except (EOFError, ValueError, TypeError):
            return None

    def codes(self, key: Key, count: int) -> tuple[CodeType, ...] | None:
        """The ``count`` codes kept under a helper's ``key`` (None: not kept)."""
        where = self.index.get(key) if self.helpers_hold else None
        codes = self._load(where) if where is not None else None
        if not (isinstance(codes, tuple) and len(codes) == count
                and all(isinstance(code, _CODE) for code in codes)):
            return None
        self.used[key] = where
        return codes

    def record(self, key: Key, helper: Callable[..., Any], *args: Any) -> Any:
        """Run the decorator's own ``helper``, keeping under ``key`` the code
        of each method it made (run through :meth:`exec`)."""
        thread = _thread.get_ident()
        self.recording[thread] = codes = []
        try:
            made = helper(*args)
        finally:
            del self.recording[thread]
        self.used[key] = marshal.dumps(tuple(codes))
        self.used[_PYTHON] = marshal.dumps(())
        return made

    def save(self) -> None:
        """Write the file with what this run used, if it used an entry of
        new code since the file was last written (the first time: since it
        was read)."""
        save_used(self.path, self.used, self.entries)

    def entries(self, used: dict[Key, bytes | tuple[int, int] | None]) -> dict[Key, bytes]:
        """What this run ``used``, each method's code marshalled; then what the
        file held besides, most recently used first, within
        ``_KEEP_BYTES``.  A start of another kind (headless, another team's
        configuration) makes classes this one did not: kept, the next
        start of that kind finds them, while what no start used for a while
        (an old version's) falls off the end.  A helper's entries are kept
        only while they hold for this Python (a text's hold for any)."""
        view = memoryview(self.data)
        # What this run wrote (WRITTEN), read back; gone from there, not kept.
        back = _read(self.path) if WRITTEN in used.values() else (b"", {})
        entries = {}
        for key, value in used.items():
            if value is WRITTEN:
                blob = _blob(*back, key)
                if blob is not None:
                    entries[key] = blob
            else:
                entries[key] = value if isinstance(value, bytes) else bytes(
                    view[value[0]:value[0] + value[1]])
        room = _KEEP_BYTES - sum(len(blob) for blob in entries.values())
        for key in self.index:
            if key in entries or not (type(key) is bytes or self.helpers_hold):
                continue
            blob = _blob(self.data, self.index, key)  # (None: an index that is not ours)
            if blob is not None and len(blob) <= room:
                entries[key] = blob
                room -= len(blob)
        return entries


_current: _Cache | None = None
WRITTEN = None  # code in use, in the file as this run last wrote it (see save_used)
_CODE = type(_Cache.exec.__code__)
_PYTHON = ("python", sys.version)  # the entry naming the Python the helpers' entries are for


def cache_path(env: Mapping[str, str] = os.environ) -> str | None:
    """The file of this installation of choragos, named for the interpreter
    and its bytecode's version (None: an interpreter whose compiled code has
    no such name, which is not cached).  Each installation has its own
    (see :func:`installation`): one shared by every checkout, bench and test
    on a machine was written by whichever last compiled something, with
    what that start used alone, and the next start of another installation
    compiled its own classes' methods again (181 in one traced start)."""
    return cache_file(installation("dataclasses"), env)


def installation(stem: str) -> str:
    """``stem`` named for the folder this choragos is installed in."""
    return f"{stem}-{_checksum(os.fsencode(_PACKAGE)):08x}"


_PACKAGE = os.path.dirname(os.path.abspath(__file__))


def _checksum(data: bytes) -> int:
    """FNV-1a, 32 bits: a short name for a folder, with no module to load."""
    value = 0x811C9DC5
    for byte in data:
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return value


def save_used(path: str, used: dict, entries: Callable[[dict], dict]) -> None:
    """Write ``entries(used)`` to the cache file at ``path`` if ``used``
    holds new code (bytes), then mark that code WRITTEN: not held until the
    release among what the seconds until then allocate, but read back from
    the file if it is written again.  The start caches' save, for classes
    and for modules alike."""
    # A copy made at once (the interpreter's lock held): the other threads
    # making classes or importing meanwhile add to ``used``.
    snapshot = dict(used)
    new = [key for key, value in snapshot.items() if type(value) is bytes]
    if not new:
        return
    write_file(path, entries(snapshot))
    drop_unused(path)
    for key in new:
        used[key] = WRITTEN


def drop_unused(path: str) -> None:
    """Remove, beside an installation's own file at ``path``
    (``<stem>-<checksum>.<tag>.marshal``), the files of its kind no start
    reads any more:

    - the file all installations shared before each had its own
      (``<stem>.<tag>.marshal``, of any interpreter), once no start has
      written it for ``SHARED_IDLE`` seconds: an older version still in use
      beside this one (a machine's other checkouts) would otherwise find it
      gone and compile its start again, again and again;
    - another installation's own file, once no start has read or written it
      for ``STALE_IDLE`` seconds: a checkout or virtual environment deleted
      long ago (each left some 4-10 MB).  One still installed but unused
      that long compiles its next start again and writes a new one.

    Only those names, in our own cache folder; a file that cannot be
    removed only costs room."""
    import contextlib  # loaded long before a server writes the file
    import time

    folder, name = os.path.split(path)
    stem, dash, rest = name.partition("-")
    if not (dash and _named_for_installation(rest)):  # not installation()'s naming
        return
    now = time.time()
    with contextlib.suppress(OSError):  # a folder not to list: nothing to remove
        for other in os.listdir(folder):
            if other == name or not other.endswith(".marshal"):
                continue
            if other.startswith(stem + "."):
                idle = SHARED_IDLE
            elif other.startswith(stem + "-") and _named_for_installation(other[len(stem) + 1:]):
                idle = STALE_IDLE
            else:
                continue
            with contextlib.suppress(OSError):  # gone meanwhile, or not ours to remove
                seen = os.stat(os.path.join(folder, other))
                # Read without a write (a warm start) counts: its access time,
                # where the file system keeps one (at least daily on Linux).
                if max(seen.st_mtime, seen.st_atime) < now - idle:
                    os.unlink(os.path.join(folder, other))


def _named_for_installation(rest: str) -> bool:
    """``rest`` (after ``<stem>-``) begins with :func:`installation`'s checksum."""
    return rest[:8].isalnum() and rest[8:9] == "."


SHARED_IDLE = 24 * 3600.0  # a day without a start of an older version here
STALE_IDLE = 30 * 24 * 3600.0  # a month without a start of that installation


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
    if _HELPERS_KNOWN:
        _install_writers(_current)


def save() -> int | None:
    """Write the file if anything was compiled anew since it was last
    written, and go on caching (the start is made: the classes a thread
    makes lazily around this moment are kept too, by :func:`release`).
    The number of methods compiled anew in this run so far (None: no cache
    is installed)."""
    cache = _current
    if cache is None:
        return None
    compiled = cache.compiled
    cache.save()
    return compiled


def release(write: bool = True) -> int | None:
    """Stop caching; write the file if anything was compiled anew since it
    was last written (and ``write``: the process that made every class of
    the start writes it).  The number of methods compiled anew in this run
    (0: every one came from the file; None: no cache was installed)."""
    global _current
    cache, _current = _current, None
    if cache is None:
        return None
    if getattr(dataclasses, "exec", None) == cache.exec:
        del dataclasses.exec  # type: ignore[attr-defined]  # the builtin again
    if _HELPERS_KNOWN:
        _release_writers()
    if write:
        cache.save()
    return cache.compiled


def _read(path: str) -> tuple[bytes, dict[Key, tuple[int, int]]]:
    try:
        with open(path, "rb") as handle:
            if not trusted(handle.fileno(), _MAX_BYTES):
                return b"", {}
            data = handle.read()
        index = read_index(data)
    except OSError:
        return b"", {}
    return (data, index) if index else (b"", {})


def _blob(data: bytes, index: dict[Key, tuple[int, int]], key: Key) -> bytes | None:
    """The code ``index`` places in ``data`` for ``key`` (None: none there)."""
    where = index.get(key)
    if not (type(where) is tuple and len(where) == 2
            and all(type(n) is int and n >= 0 for n in where)):
        return None
    start, size = where
    return data[start:start + size] if start + size <= len(data) else None


def trusted(fd: int, max_bytes: int) -> bool:
    """Whether the open file ``fd`` may be run as code: the user's own
    (as Python's ``__pycache__`` is whoever's may write there), and no bigger
    than a file of ours grows."""
    info = os.fstat(fd)
    return info.st_uid == os.getuid() and info.st_size <= max_bytes


def read_index(head: bytes) -> dict[Key, tuple[int, int]]:
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


def write_file(path: str, entries: dict[Key, bytes]) -> None:
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


# The helpers of Python 3.11's dataclasses that write a method's source
# (``_process_class`` asks one per kind of method), each answered from the
# cache by the facts it writes the source from (see the module's note): if
# the cache has the code that source compiled to, the method is made from
# it with the variables the helper binds (each field's type and default,
# the class), as ``_create_fn`` makes it; if not, the real helper runs and
# its code is kept under those facts.
_WRITERS = ("_init_fn", "_repr_fn", "_cmp_fn", "_frozen_get_del_attr", "_hash_fn")
# And the check the decorator makes of each field's annotation text three
# times (is it ClassVar? InitVar? KW_ONLY?): see _is_type below.
_ANSWERED = (*_WRITERS, "_is_type")
_real: dict[str, Callable[..., Any]] = {}
_writing: Any = None


def _install_writers(cache: _Cache) -> None:
    """Answer the decorator's helpers from ``cache``."""
    global _writing
    if _writing is not None:
        return
    _writing = cache
    for name in _ANSWERED:
        _real.setdefault(name, getattr(dataclasses, name))  # kept: see _release_writers
        setattr(dataclasses, name, globals()[name])


def _release_writers() -> None:
    """The decorator's own helpers again."""
    global _writing
    _parsed.clear()
    for name, helper in _real.items():
        setattr(dataclasses, name, helper)
    # The real helpers stay known: a class being made on another thread (a
    # role's screen imported as the start ends) may be inside one of ours.
    _writing = None


def _kept(key: Key, count: int) -> tuple[CodeType, ...] | None:
    """The ``count`` codes the cache keeps under ``key`` (None: not kept, or
    the cache released meanwhile)."""
    cache = _writing
    return cache.codes(key, count) if cache is not None else None


def _write(key: Key, name: str, *args: Any) -> Any:
    """The real helper ``name`` run, its code kept under ``key`` in the cache
    (nothing kept once it is released)."""
    cache = _writing
    if cache is None:
        return _real[name](*args)
    return cache.record(key, _real[name], *args)


def _made(code: CodeType, globals_: dict, locals_: dict) -> Any:
    """What ``_create_fn`` makes of the code its text compiled to."""
    namespace: dict = {}
    exec(code, globals_, namespace)
    return namespace["__create_fn__"](**locals_)


def _default(f: dataclasses.Field) -> int:
    """Which default a field's parameter has: 0 none, 1 a value, 2 a factory."""
    if f.default_factory is not dataclasses.MISSING:
        return 2
    return 0 if f.default is dataclasses.MISSING else 1


def _init_fn(fields: list, std_fields: list, kw_only_fields: list, frozen: bool,
             has_post_init: bool, self_name: str, globals_: dict, slots: bool) -> Any:
    initvar = dataclasses._FIELD_INITVAR  # type: ignore[attr-defined]
    key = ("__init__", frozen, has_post_init, self_name, slots,
           tuple([(f.name, f._field_type is initvar, f.init, _default(f)) for f in fields]),
           tuple([f.name for f in std_fields]), tuple([f.name for f in kw_only_fields]))
    codes = _kept(key, 1)
    if codes is None:
        return _write(key, "_init_fn", fields, std_fields, kw_only_fields, frozen,
                      has_post_init, self_name, globals_, slots)
    # The names _init_fn and _field_init bind, to the same values.
    locals_ = {f"_type_{f.name}": f.type for f in fields}
    factory = dataclasses._HAS_DEFAULT_FACTORY  # type: ignore[attr-defined]
    locals_.update({"MISSING": dataclasses.MISSING, "_HAS_DEFAULT_FACTORY": factory,
                    "__dataclass_builtins_object__": object})
    for f in fields:
        if f.default_factory is not dataclasses.MISSING:
            locals_[f"_dflt_{f.name}"] = f.default_factory
        elif f.default is not dataclasses.MISSING and (f.init or slots):
            locals_[f"_dflt_{f.name}"] = f.default
    locals_["_return_type"] = None
    return _made(codes[0], globals_, locals_)


def _names(fields: list) -> tuple[str, ...]:
    return tuple([f.name for f in fields])


def _repr_fn(fields: list, globals_: dict) -> Any:
    key = ("__repr__", _names(fields))
    codes = _kept(key, 1)
    if codes is None:
        return _write(key, "_repr_fn", fields, globals_)
    recursive_repr = dataclasses._recursive_repr  # type: ignore[attr-defined]
    return recursive_repr(_made(codes[0], globals_, {}))


def _cmp_fn(name: str, op: str, self_tuple: str, other_tuple: str, globals: dict) -> Any:
    # ``globals`` by name: the decorator passes it as a keyword.
    key = (name, op, self_tuple, other_tuple)
    codes = _kept(key, 1)
    if codes is None:
        return _write(key, "_cmp_fn", name, op, self_tuple, other_tuple, globals)
    return _made(codes[0], globals, {})


def _frozen_get_del_attr(cls: type, fields: list, globals_: dict) -> Any:
    key = ("__setattr__", _names(fields))
    codes = _kept(key, 2)
    if codes is None:
        return _write(key, "_frozen_get_del_attr", cls, fields, globals_)
    locals_ = {"cls": cls, "FrozenInstanceError": dataclasses.FrozenInstanceError}
    return _made(codes[0], globals_, locals_), _made(codes[1], globals_, locals_)


def _hash_fn(fields: list, globals_: dict) -> Any:
    key = ("__hash__", _names(fields))
    codes = _kept(key, 1)
    if codes is None:
        return _write(key, "_hash_fn", fields, globals_)
    return _made(codes[0], globals_, {})


# Text -> its regular expression's groups (the module's name or None, the
# name), or () where it does not match: what dataclasses' ``_is_type`` reads
# of a text each time it is asked (some 1,800 times for the start's 600
# fields, about 200 distinct texts), while the cache is installed.
_parsed: dict[str, tuple[str | None, ...]] = {}


def _is_type(annotation: str, cls: type, a_module: Any, a_type: Any,
             is_type_predicate: Callable[[Any, Any], bool]) -> bool:
    """dataclasses' ``_is_type``, each text matched once: the same lookups
    in the class's module and the same question to the predicate."""
    parsed = _parsed.get(annotation)
    if parsed is None:
        match = dataclasses._MODULE_IDENTIFIER_RE.match(annotation)  # type: ignore[attr-defined]
        parsed = _parsed[annotation] = match.groups() if match else ()
    if not parsed:
        return False
    module_name, name = parsed
    module = sys.modules.get(cls.__module__)
    if not module_name:  # "InitVar[int]": the name as the class's module binds it
        ns = module.__dict__  # type: ignore[union-attr]  # (as dataclasses fails without it)
    elif module and module.__dict__.get(module_name) is a_module:  # "dataclasses.InitVar"
        ns = sys.modules.get(a_type.__module__).__dict__  # type: ignore[union-attr]
    else:
        return False
    return bool(ns and is_type_predicate(ns.get(name), a_module))
