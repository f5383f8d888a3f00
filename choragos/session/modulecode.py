"""The code of the modules the session server imports, without the
functions' docstrings, compiled once and kept between runs; and the
classes' and modules' docstrings, let go once they are loaded.

A module's code lives as long as the process, and so do its functions'
docstrings, which the server never reads: some 0.7 MB of the server with
its deck at rest.  ``python -OO`` drops them but drops the asserts too, and
for every module.  From the start of the ``serve`` verb (:func:`install`,
in ``choragos/cli/main.py``: the server is the client's fork and keeps
what it loaded) to :func:`release` (2 s after the server's modules are
loaded, ``_LetGo`` in ``choragos/cli/serve.py``; the client leaves it at
the fork),
each module imported from a source file, on any thread (the roles'
threads import their screens' modules beside the start), is looked up
in a file kept from the last start, by its source's path, size and
modification time (as Python's own ``__pycache__`` is, to the
nanosecond), under a name that holds the interpreter's cache tag,
bytecode version and optimization level, and a checksum of the folder
choragos is installed in (a file per installation: see
:func:`cache_path`).  A module not found there is
compiled from its source as Python would, after each function's
docstring has been replaced by ``None`` in its syntax tree: the compiler
then lays the function out as one without a docstring (``__doc__`` is
None, its other constants renumbered as they must be).  Asserts, every
other constant, and the modules' and classes' own docstrings stay as they
are.  :func:`save` (the session started: ``_settle`` in
``choragos/cli/serve.py``) writes the file again if anything was
compiled anew: what this start used, and what the file held that is
still true to its source (the deck's when a headless server wrote it),
within a bound.  Modules go on coming through the file until
:func:`release`, 2 s later, which writes it once more only if a module
was compiled anew meanwhile: one a thread (the deck's, a role's) imports
lazily as the start ends would otherwise be in one start's file and not
in the next's, and compiled again at the next.

A class's docstring is read as the class is made (a dataclass without one
makes one from its signature), so classes' and modules' docstrings go
afterwards, once, in the server: :func:`strip_loaded`.

The file lies beside the dataclasses' methods (``choragos/classcode.py``),
with the same rules: one not owned by the user, bigger than such a file
grows, or unreadable is not used, and a start that could not use it
writes it afresh.  Each module's code is read from the file as it is
imported (the file is not held in memory).
"""

from __future__ import annotations

# The ``serve`` client installs this before it imports the rest
# (choragos/cli/main.py): nothing here but what classcode loads anyway, or
# the interpreter has, comes before it (``ast`` is not needed: ``_ast`` is).
import _thread
import marshal
import os
import sys
from importlib.machinery import SourceFileLoader
from types import FunctionType, ModuleType

from choragos import classcode

TYPE_CHECKING = False
if TYPE_CHECKING:
    import _ast
    from collections.abc import Iterator, Mapping
    from types import CodeType

_MAX_BYTES = 64 << 20  # the server's modules take about 6 MB: more is not ours
_LENGTH = 4  # as classcode writes it: the index's length, the index, the code


class _File:
    """The file kept open, its index read, each module's code read from it as
    asked for; and what this run used, to write at the end."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.fd = -1
        self.index: dict[bytes, tuple[int, int]] = {}
        # New code, where it is in the file read, or classcode.WRITTEN.
        self.used: dict[bytes, bytes | tuple[int, int] | None] = {}
        # Compiled anew by the main thread (the start's own imports), and by
        # any thread once the start is saved.
        self.own = 0
        self.saved = False
        self.lock = _thread.allocate_lock()  # another thread's import reads as it closes
        try:
            self.fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            if classcode.trusted(self.fd, _MAX_BYTES):
                length = min(int.from_bytes(os.pread(self.fd, _LENGTH, 0), "little"),
                             _MAX_BYTES)
                self.index = classcode.read_index(os.pread(self.fd, _LENGTH + length, 0))
        except OSError:
            pass

    def code(self, key: bytes) -> CodeType | None:
        """The code kept under ``key``, or None (not there, or not code)."""
        where = self.index.get(key)
        if where is None:
            return None
        blob = self._blob(where)
        try:
            code = marshal.loads(blob) if blob is not None else None
        except (EOFError, ValueError, TypeError):
            return None
        if blob is None or not isinstance(code, type(_strip_and_compile.__code__)):
            return None
        self.used[key] = where
        return code

    def save(self) -> None:
        """Write the file again if a module was compiled anew since it was
        last written (the first time: since it was read).  Their code (some
        5 MB at a first start) is then let go: see classcode.save_used."""
        classcode.save_used(self.path, self.used, self._entries)

    def close(self, write: bool) -> None:
        """Write the file again if anything was compiled anew since (and
        ``write``), then let it go."""
        if write:
            self.save()
        with self.lock:
            if self.fd >= 0:
                os.close(self.fd)
                self.fd = -1

    def _entries(self, used: dict[bytes, bytes | tuple[int, int] | None]) -> dict[bytes, bytes]:
        """What this run used, then what the file held that is still true to
        its source (the deck's for a headless start), as long as the file
        stays well under its bound."""
        entries: dict[bytes, bytes] = {}
        room = _MAX_BYTES // 2
        written = _File(self.path) if classcode.WRITTEN in used.values() else None
        for key, value in [*used.items(), *self.index.items()]:
            if key in entries or (key not in used and not _fresh(key)):
                continue
            if value is classcode.WRITTEN:  # from the file as this run wrote it (gone: not kept)
                blob = written._blob(written.index.get(key))  # type: ignore[union-attr, arg-type]
            else:
                blob = value if isinstance(value, bytes) else self._blob(value)
            if blob is not None and len(blob) <= room:
                entries[key] = blob
                room -= len(blob)
        if written is not None:
            written.close(write=False)
        return entries

    def _blob(self, where: tuple[int, int] | None) -> bytes | None:
        if not (type(where) is tuple and len(where) == 2  # an index that is not ours
                and all(type(n) is int and 0 <= n <= _MAX_BYTES for n in where)):
            return None
        with self.lock:
            if self.fd < 0:
                return None
            try:
                blob = os.pread(self.fd, where[1], where[0])
            except OSError:
                return None
        return blob if len(blob) == where[1] else None


_current: _File | None = None
_installer = -1  # the thread that installed it


def cache_path(env: Mapping[str, str] = os.environ) -> str | None:
    """The file of this installation of choragos (None: an interpreter whose
    compiled code has no such name).  Each installation (each checkout,
    each virtual environment) has a file of its own: the server reads the
    whole index of the file it opens, and with ten installations sharing one
    (a shared machine's checkouts, benches and tests: 1,889 modules, an
    index of 0.5 MB once read) it kept 0.7 MB more of the server resident."""
    return classcode.cache_file(classcode.installation("modules"), env)


def install(path: str | None = None) -> None:
    """Import modules from source files through the cache until :func:`release`."""
    global _current, _installer
    if _current is not None:
        return
    path = path or cache_path()
    if path is None:
        return
    _installer = _thread.get_ident()
    _current = _File(path)
    SourceFileLoader.get_code = _get_code  # type: ignore[method-assign]


def save() -> int | None:
    """Write the file if anything was compiled anew since it was last
    written, and go on importing through it (the start is made: what a
    thread imports lazily about now is kept too, by :func:`release`).  The
    number of modules the installing thread compiled anew so far (None: no
    cache is installed); from here on every thread's are counted."""
    cache = _current
    if cache is None:
        return None
    own = cache.own
    cache.saved = True
    cache.save()
    return own


def release(write: bool = True) -> int | None:
    """Import as Python does again; write the file if anything was compiled
    anew since it was last written (and ``write``).  The number of modules
    the installing thread compiled anew in this run, and any thread since
    :func:`save` (0: every one came from the file; None: no cache was
    installed).  Another thread's before it are written too but not
    counted: a module the main thread never loads (a role's screen's
    pyte), or loads after another thread did, is there from the next start
    on, while one another thread loads only now and then (a policy the core
    makes as a role reports) is compiled at the start it first comes in,
    or after it (kept then when it comes before the release)."""
    global _current
    cache, _current = _current, None
    if cache is None:
        return None
    if SourceFileLoader.__dict__.get("get_code") is _get_code:
        del SourceFileLoader.get_code  # SourceLoader's own again
    cache.close(write)
    return cache.own


def _key(path: str, info: os.stat_result) -> bytes:
    return b"%s\0%d\0%d" % (os.fsencode(path), info.st_size, info.st_mtime_ns)


def _fresh(key: object) -> bool:
    """Whether ``key`` names a source file as it is now."""
    if type(key) is not bytes or key.count(b"\0") != 2:
        return False
    path = key.split(b"\0", 1)[0]
    try:
        return _key(os.fsdecode(path), os.stat(path)) == key
    except (OSError, ValueError):
        return False


def _get_code(loader, fullname: str) -> CodeType | None:
    """``SourceFileLoader.get_code`` through the cache."""
    cache = _current
    path = loader.get_filename(fullname)
    if cache is None or not path.endswith(".py"):
        return super(SourceFileLoader, loader).get_code(fullname)
    try:
        info = os.stat(path)
    except OSError:
        return super(SourceFileLoader, loader).get_code(fullname)
    key = _key(path, info)
    code = cache.code(key)
    if code is None:
        code = _strip_and_compile(loader.get_data(path), path)
        cache.used[key] = marshal.dumps(code)
        # Every thread's imports come through the file, but only the main
        # thread's (the one that installed it) are the same at every start.
        # A module both import (wcwidthload: the deck's urwid on the main
        # thread, a role's screen on its own) is the first one's to load:
        # kept only from the main thread, a start whose role was first left
        # it out of the file, and the next start's main thread compiled it.
        if cache.saved:
            with cache.lock:  # the threads import side by side
                cache.own += 1
        elif _thread.get_ident() == _installer:
            cache.own += 1
    return code


def _strip_and_compile(source: bytes, path: str) -> CodeType:
    """``source`` compiled as an import compiles it, every function's
    docstring first replaced by ``None`` (a statement that compiles to
    nothing), so the compiler gives the function no docstring.  The syntax
    tree's classes come from ``_ast``, the interpreter's own: the module
    compiled may be ``ast`` itself, or one ``ast`` is importing."""
    import _ast

    tree = compile(source, path, "exec", _ast.PyCF_ONLY_AST, dont_inherit=True)
    for node in _functions(tree):
        first = node.body[0] if node.body else None
        # What the compiler takes for a docstring: an expression that is a
        # string constant, nothing else.
        if (isinstance(first, _ast.Expr) and isinstance(first.value, _ast.Constant)
                and type(first.value.value) is str):
            first.value.value = None
    return compile(tree, path, "exec", dont_inherit=True)


def _functions(tree: _ast.AST) -> Iterator[_ast.FunctionDef | _ast.AsyncFunctionDef]:
    """Every function definition in ``tree``, at any depth."""
    import _ast

    kinds = (_ast.FunctionDef, _ast.AsyncFunctionDef)
    todo = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, kinds):
            yield node
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, list):
                todo.extend(item for item in value if isinstance(item, _ast.AST))
            elif isinstance(value, _ast.AST):
                todo.append(value)


def strip_loaded() -> tuple[int, int, int, int, int]:
    """Let go of the docstrings of the classes and modules already loaded, as
    ``-OO`` would not have made them: the server never reads them (``help()``
    would).  Called once, in the server, its modules loaded.  A class's is
    kept through its creation (a dataclass without one gets one made from
    its signature), so they cannot go as the module is compiled.  Functions'
    are counted, not touched: a function's lives in its code, and giving
    the functions loaded before :func:`install` new code without it made
    the server bigger, not smaller (docs/performance.md, the memory's sixth
    pass); the modules imported since have none.

    The classes are found through the modules' namespaces, not the
    collector's list of every object: the roles' threads are importing
    their screens meanwhile, and a tuple another thread is still building
    must not gain a reference (CPython then fails that thread's import
    with a SystemError).

    What it let go and left: (classes, modules, their texts' bytes;
    functions still holding a docstring, their texts' bytes).
    """
    dropped: dict[int, str] = {}
    held: dict[int, str] = {}
    classes = modules = 0
    seen: set[int] = set()
    for module in list(sys.modules.values()):
        # A lazy module (importlib's, whose every attribute loads it) keeps its own.
        if not (issubclass(type(module), ModuleType)
                and type(module).__getattribute__ is ModuleType.__getattribute__):
            continue
        namespace = module.__dict__
        doc = namespace.get("__doc__")
        if type(doc) is str:
            dropped[id(doc)] = doc
            namespace["__doc__"] = None
            modules += 1
        classes += _strip_classes(list(namespace.values()), seen, dropped, held)
    return classes, modules, _size(dropped), len(held), _size(held)


def _strip_classes(values: list[object], seen: set[int], dropped: dict[int, str],
                   held: dict[int, str]) -> int:
    """The classes among ``values`` (and the classes inside them) let go of
    their docstrings; the functions among them counted in ``held``."""
    classes = 0
    todo = values
    while todo:
        o = todo.pop()
        # By its type alone: isinstance would ask a lazy module's __class__,
        # which loads it (urwid's web display, and with it OpenSSL).
        kind = type(o)
        if kind is FunctionType:
            if type(o.__doc__) is str:
                held[id(o.__doc__)] = o.__doc__
        elif issubclass(kind, type) and not o.__flags__ & _IMMUTABLE and id(o) not in seen:
            seen.add(id(o))
            inside = o.__dict__
            doc = inside.get("__doc__")
            if type(doc) is str and _set_class_doc(o):
                dropped[id(doc)] = doc
                classes += 1
            todo.extend(v.__func__ if type(v) in (staticmethod, classmethod) else v
                        for v in list(inside.values()))
    return classes


def _size(texts: dict[int, str]) -> int:
    return sum(sys.getsizeof(text) for text in texts.values())


def _set_class_doc(cls: type) -> bool:
    """Whether ``cls``'s docstring could be set to None (past the metaclass's
    own ``__setattr__``: an enum's refuses nothing of this, a C one may)."""
    try:
        type.__setattr__(cls, "__doc__", None)
    except (AttributeError, TypeError):
        return False
    return True


_IMMUTABLE = 1 << 8  # Py_TPFLAGS_IMMUTABLETYPE: the interpreter's own and C types
