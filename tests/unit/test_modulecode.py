"""The server's modules compiled without their functions' docstrings, kept
between runs (choragos/session/modulecode.py)."""

from __future__ import annotations

import ast
import dis
import json
import marshal
import os
import stat
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest

from choragos import classcode
from choragos.session import modulecode

SAMPLE = '''"""The module's docstring."""

def documented(a):
    """The doc"""
    assert a, "a is needed"
    return "The doc"

async def coroutine():
    """A coroutine's doc."""
    return 1

def plain():
    text = "not a docstring"
    return text

def late():
    pass
    "a string, not first"

class Box:
    """The class's docstring."""

    def method(self):
        """A method's doc."""
        return lambda: "lambda"

    @property
    def size(self):
        "A property's doc."
        return 3

def outer():
    """Outer."""
    def inner():
        """Inner."""
        return "Inner."
    return inner
'''

# A run: the sample imported through the cache at argv[1]; what its
# functions say and do, and what release said.
RUN = """
import json, sys
from choragos.session import modulecode
modulecode.install(sys.argv[1])
sys.path.insert(0, sys.argv[2])
import sample
try:
    sample.documented(0)
    asserted = None
except AssertionError as exc:
    asserted = str(exc)
try:
    sample.coroutine().send(None)
except StopIteration as done:
    awaited = done.value
print(json.dumps({
    "released": modulecode.release(),
    "docs": [f.__doc__ for f in (sample.documented, sample.coroutine, sample.plain, sample.late,
                                 sample.Box.method, sample.Box.size.fget, sample.outer,
                                 sample.outer())],
    "kept": [sample.__doc__, sample.Box.__doc__],
    "does": [sample.documented(1), asserted, awaited, sample.plain(), sample.late(),
             sample.Box().method()(), sample.Box().size, sample.outer()()],
    "extra": getattr(sample, "extra", lambda: None)(),
    "loader_again": "get_code" not in type(sample.__spec__.loader).__dict__}))
"""

SAME = {"docs": [None] * 8, "kept": ["The module's docstring.", "The class's docstring."],
        "does": ["The doc", "a is needed", 1, "not a docstring", None, "lambda", 3, "Inner."],
        "loader_again": True}


def _sample(tmp_path: Path, text: str = SAMPLE) -> Path:
    folder = tmp_path / "src"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sample.py").write_text(text)
    return folder


def _run(cache: Path, folder: Path) -> dict:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}  # no __pycache__ to be read instead
    out = subprocess.run([sys.executable, "-c", RUN, str(cache), str(folder)], env=env,
                         capture_output=True, text=True, check=True, timeout=60)
    return json.loads(out.stdout)


def test_functions_lose_their_docstrings_and_nothing_else_and_a_second_run_compiles_none(
        tmp_path: Path) -> None:
    folder = _sample(tmp_path)
    cache = tmp_path / "cache" / "modules.marshal"
    first = _run(cache, folder)
    assert first.pop("released") == 1  # the sample, compiled and written
    assert first.pop("extra") is None
    assert first == SAME
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600
    assert stat.S_IMODE(cache.parent.stat().st_mode) == 0o700
    second = _run(cache, folder)
    assert second.pop("released") == 0  # from the file
    assert second.pop("extra") is None
    assert second == SAME


def test_a_changed_source_is_compiled_again(tmp_path: Path) -> None:
    folder = _sample(tmp_path)
    cache = tmp_path / "modules.marshal"
    _run(cache, folder)
    source = folder / "sample.py"
    before = source.stat()
    source.write_text(SAMPLE + '\ndef extra():\n    """Extra."""\n    return "new"\n')
    changed = _run(cache, folder)
    assert changed.pop("released") == 1
    assert changed.pop("extra") == "new"
    # The same size, another time: a stale entry is never used.
    source.write_text(SAMPLE + '\ndef extra():\n    """Extra."""\n    return "NEW"\n')
    os.utime(source, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
    again = _run(cache, folder)
    assert again.pop("released") == 1 and again.pop("extra") == "NEW"
    assert again == SAME
    assert _run(cache, folder)["released"] == 0


def test_another_checkout_s_modules_stay_in_the_file_and_stale_ones_go(tmp_path: Path) -> None:
    first, second = _sample(tmp_path / "a"), _sample(tmp_path / "b")
    cache = tmp_path / "modules.marshal"
    assert [_run(cache, folder)["released"] for folder in (first, second, first, second)] == [
        1, 1, 0, 0]
    assert sorted(classcode.read_index(cache.read_bytes())) == sorted(
        [_key(first / "sample.py"), _key(second / "sample.py")])
    (second / "sample.py").write_text(SAMPLE + "\n# changed\n")
    assert _run(cache, first)["released"] == 0  # nothing new: the file stays as it was
    assert _run(cache, second)["released"] == 1
    assert sorted(classcode.read_index(cache.read_bytes())) == sorted(
        [_key(first / "sample.py"), _key(second / "sample.py")])  # the stale entry gone


def _key(source: Path) -> bytes:
    info = source.stat()
    return b"%s\0%d\0%d" % (os.fsencode(str(source)), info.st_size, info.st_mtime_ns)


def test_a_corrupt_or_foreign_cache_is_not_used_and_is_written_afresh(tmp_path: Path) -> None:
    folder = _sample(tmp_path)
    cache = tmp_path / "modules.marshal"
    cache.write_bytes(b"\x07\x00\x00\x00garbage" * 10)
    broken = _run(cache, folder)
    assert broken.pop("released") == 1 and broken.pop("extra") is None and broken == SAME
    assert _run(cache, folder)["released"] == 0
    # The sample's own entry, but not code; then code, but another source's.
    other = compile(SAMPLE.replace('return "The doc"', 'return "not the sample"'), "x", "exec")
    for blob in (marshal.dumps(42), b"\xff" * 40):
        classcode.write_file(str(cache), {_key(folder / "sample.py"): blob})
        result = _run(cache, folder)
        assert result.pop("released") == 1 and result.pop("extra") is None and result == SAME
    classcode.write_file(str(cache), {_key(folder / "sample.py"): marshal.dumps(other)})
    assert _run(cache, folder)["does"][0] == "not the sample"  # the user's own file is used
    if os.getuid() == 0:
        classcode.write_file(str(cache), {_key(folder / "sample.py"): marshal.dumps(other)})
        os.chown(cache, 12345, 12345)  # another user's file: its code is never run
        foreign = _run(cache, folder)
        assert foreign.pop("released") == 1 and foreign.pop("extra") is None
        assert foreign == SAME
        assert cache.stat().st_uid == os.getuid()  # written afresh, the user's
    # An index whose entry claims more than the file could hold.
    classcode.write_file(str(cache), {_key(folder / "sample.py"): b"x"})
    data = bytearray(cache.read_bytes())
    cache.write_bytes(data[:4] + marshal.dumps({_key(folder / "sample.py"): (4, 1 << 40)}))
    huge = _run(cache, folder)
    assert huge.pop("released") == 1 and huge == {**SAME, "extra": None}


def test_without_install_release_says_so() -> None:
    code = "from choragos.session import modulecode; print(modulecode.release())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.strip() == "None"


# The server's modules imported as `serve` imports them, through the cache at
# argv[1]; every function of a module loaded meanwhile, and whether it has a
# docstring.
SERVER = """
import json, sys, types
import choragos.cli.main
from choragos.cli import serve
from choragos.session import modulecode
# A stand-in's module is loaded (through the cache) only when first used.
before = {name for name, module in sys.modules.items() if type(module) is types.ModuleType}
if sys.argv[1] != "-":
    modulecode.install(sys.argv[1])
import choragos.actors.session, choragos.control.server
from choragos.ui.urwidload import load_urwid
load_urwid()
import choragos.ui.uiactor, choragos.session.daemon
released = modulecode.release()

def functions(namespace, module, seen):
    seen.add(namespace)
    for value in list(vars(namespace).values()):
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if isinstance(value, property):
            yield from (f for f in (value.fget, value.fset, value.fdel) if f is not None)
        elif isinstance(value, types.FunctionType) and value.__module__ == module:
            yield value
        elif isinstance(value, type) and value.__module__ == module and value not in seen:
            yield from functions(value, module, seen)

# Modules themselves: a stand-in (choragos/deferred.py) or a lazy module (urwid's
# displays) would load what it stands for when its attributes are read.
files = {name: module.__dict__.get("__file__") or "" for name, module in list(sys.modules.items())
         if type(module) is types.ModuleType}
loaded = {name: file for name, file in files.items()
          if name not in before and file.endswith(".py")}
found = {f"{f.__module__}.{f.__qualname__}": f.__doc__ is not None
         for name in loaded for f in functions(sys.modules[name], name, set())}
print(json.dumps({"released": released, "modules": loaded, "functions": found}))
"""


def _server(cache: str) -> dict:
    out = subprocess.run([sys.executable, "-c", SERVER, cache], capture_output=True, text=True,
                         check=True, timeout=120)
    return json.loads(out.stdout)


def test_the_server_s_modules_have_functions_without_docstrings_from_a_warm_cache(
        tmp_path: Path) -> None:
    plain = _server("-")
    documented = [name for name, has in plain["functions"].items() if has]
    assert len(documented) > 1000  # what the server keeps without the cache
    cache = str(tmp_path / "modules.marshal")
    cold = _server(cache)
    assert cold["released"] == len(cold["modules"]) > 150  # each compiled once
    assert sorted(cold["functions"]) == sorted(plain["functions"])  # the same functions
    assert [name for name, has in cold["functions"].items() if has] == []
    warm = _server(cache)
    assert warm["released"] == 0  # nothing compiled
    assert [name for name, has in warm["functions"].items() if has] == []


def _instructions(code: types.CodeType) -> list[tuple[str, object]]:
    """(name, argument) of each instruction but the NOPs a docstring's place
    leaves, a jump's argument the index of the instruction it goes to."""
    every = list(dis.get_instructions(code))
    index, kept = {}, 0
    for op in every:
        index[op.offset] = kept
        kept += op.opname != "NOP"
    jumps = set(dis.hasjrel) | set(dis.hasjabs)
    return [(op.opname, index[op.argval] if op.opcode in jumps else op.argval)
            for op in every if op.opname != "NOP"]


def _same_but_docstrings(plain: types.CodeType, stripped: types.CodeType,
                         docstrings: set[tuple[str, int]]) -> int:
    """Whether two compilations of one source do the same, the docstrings of
    the functions at ``docstrings`` (name, line) aside; how many went."""
    gone = 0
    if (plain.co_name, plain.co_firstlineno) in docstrings:
        assert type(plain.co_consts[0]) is str and stripped.co_consts[0] is None
        gone += 1
    else:
        assert ([c for c in plain.co_consts if not isinstance(c, types.CodeType)]
                == [c for c in stripped.co_consts if not isinstance(c, types.CodeType)])
    ops, new = _instructions(plain), _instructions(stripped)
    assert len(ops) == len(new), plain.co_qualname
    for (name, value), (new_name, new_value) in zip(ops, new, strict=True):
        assert name == new_name, plain.co_qualname
        if isinstance(value, types.CodeType):
            gone += _same_but_docstrings(value, new_value, docstrings)
        else:
            assert value == new_value or value != value, plain.co_qualname  # nan is nan
    assert (plain.co_names, plain.co_varnames, plain.co_flags) == (
        stripped.co_names, stripped.co_varnames, stripped.co_flags)
    return gone


def test_only_the_functions_docstrings_go_from_the_server_s_modules() -> None:
    """Every module the server loads, compiled with and without its functions'
    docstrings: the same instructions, constants and names (asserts kept),
    but for the docstrings the syntax tree names."""
    gone = 0
    for path in _server("-")["modules"].values():
        source = Path(path).read_bytes()
        docstrings = {(node.name, min([node.lineno] + [d.lineno for d in node.decorator_list]))
                      for node in ast.walk(ast.parse(source))
                      if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                      and ast.get_docstring(node, clean=False) is not None}
        plain = compile(source, path, "exec", dont_inherit=True)
        gone += _same_but_docstrings(plain, modulecode._strip_and_compile(source, path),
                                     docstrings)
    assert gone > 1000


# A start (argv[1]: the cache, argv[2]: the sample's folder) whose sample is
# imported on another thread (argv[3] "thread") or the main one (the one
# that installed the cache); what release counted, the sample's doc.
THREADS = """
import sys, threading
from choragos.session import modulecode
modulecode.install(sys.argv[1])
sys.path.insert(0, sys.argv[2])
if sys.argv[3] == "thread":
    t = threading.Thread(target=__import__, args=("sample",))
    t.start()
    t.join()
import sample
print(modulecode.release(), sample.documented.__doc__)
"""


def test_a_module_another_thread_loaded_first_is_in_the_file_for_the_main_thread(
        tmp_path: Path) -> None:
    """A module both a role's thread (its screen) and the main thread (the
    deck's urwid) import is loaded by whichever comes first: a start whose
    role came first must leave it in the file, or the next start whose main
    thread comes first compiles it (wcwidthload: a flaky test beside a full
    run).  Another thread's compilations are not the start's count."""
    folder = _sample(tmp_path)
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    runs = []
    for who in ("thread", "main", "thread"):
        out = subprocess.run([sys.executable, "-c", THREADS, str(tmp_path / "m.marshal"),
                              str(folder), who], env=env, capture_output=True, text=True,
                             check=True, timeout=60)
        runs.append(out.stdout.split())
    assert runs == [["0", "None"]] * 3


# The sample and a few kinds of classes loaded, then the docstrings of the
# classes and modules already loaded let go (argv[1]: the sample's folder).
STRIP = '''
import dataclasses, enum, importlib.util, json, sys
sys.path.insert(0, sys.argv[1])
import sample
from choragos.session import modulecode

class Colour(enum.Enum):
    """An enum's doc."""
    RED = 1

@dataclasses.dataclass
class Made:
    """A dataclass's own doc."""
    a: int

Point = __import__("collections").namedtuple("Point", "x y")
spec = importlib.util.find_spec("sample_lazy")
lazy = importlib.util.module_from_spec(spec)
spec.loader = importlib.util.LazyLoader(spec.loader)
spec.loader.exec_module(lazy)
sys.modules["sample_lazy"] = lazy
stripped = modulecode.strip_loaded()
again = modulecode.strip_loaded()

@dataclasses.dataclass
class Later:
    a: int

print(json.dumps({
    "stripped": [n > least for n, least in zip(stripped, (100, 20, 50_000, 500, 50_000))],
    "again": again[:3], "held": [stripped[3:], again[3:]],
    "sample": sample.documented.__doc__ is sample.documented.__code__.co_consts[0],
    "gone": [sample.__doc__, sample.Box.__doc__, Colour.__doc__, Made.__doc__, Point.__doc__,
             json.__doc__, sys.__doc__, dataclasses.__doc__],
    "kept": [sample.documented.__doc__, str.__doc__[:3], Later.__doc__],
    "does": [Colour(1).name, repr(Made(2)), Point(1, 2)._replace(x=3), sample.Box().size],
    "lazy": type(lazy).__name__, "lazy_ran": "sample_lazy_ran" in sys.modules}))
'''


def test_the_docstrings_of_classes_and_modules_already_loaded_go(tmp_path: Path) -> None:
    """The server lets go of its classes' and modules' docstrings once its
    modules are loaded (choragos/cli/serve.py), as ``-OO`` would not have
    made them; the interpreter's own types keep theirs, a class made later
    still gets its own, and a lazy module is not loaded for it."""
    folder = _sample(tmp_path)
    (folder / "sample_lazy.py").write_text(
        '"""Lazy."""\nimport sys\nsys.modules["sample_lazy_ran"] = sys\n')
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    out = subprocess.run([sys.executable, "-c", STRIP, str(folder)], env=env,
                         capture_output=True, text=True, check=True, timeout=60)
    found = json.loads(out.stdout)
    assert found["stripped"] == [True] * 5  # classes, modules, bytes; functions holding one
    assert found["again"] == [0, 0, 0]
    assert found["held"][0] == found["held"][1]  # functions keep theirs
    assert found["sample"] is True
    assert found["gone"] == [None] * 8
    assert found["kept"] == ["The doc", "str", "Later(a: int)"]
    assert found["does"] == ["RED", "Made(a=2)", [3, 2], 3]
    assert found["lazy"] == "_LazyModule" and found["lazy_ran"] is False


# The `choragos` command's way to `serve` (argv[1]: the user's cache folder),
# then the docstrings of functions from modules the verb loaded on its way
# (the server, its fork, inherits them).
CLIENT = """
import json, sys
from choragos.cli import main
try:
    main._dispatch(["serve", "--help"])
except SystemExit:
    pass
import logging, threading, typing
from choragos.cli import serve
from choragos.session import modulecode
print(json.dumps({"docs": [f.__doc__ for f in (logging.getLogger, threading.Thread.start,
                                               typing.cast, serve.parse_args)],
                  "released": modulecode.release()}))
"""


def test_the_serve_client_loads_its_modules_through_the_cache(tmp_path: Path) -> None:
    """The server is the ``serve`` client's fork and keeps what it loaded:
    the verb's modules (logging, threading and typing among them) come
    through the cache from the start of the verb, and a warm run compiles
    none of them."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    runs = []
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", CLIENT], env=env, capture_output=True,
                             text=True, check=True, timeout=60)
        runs.append(json.loads(out.stdout.splitlines()[-1]))
    assert [run["docs"] for run in runs] == [[None] * 4] * 2
    assert runs[0]["released"] > 20  # the verb's modules, compiled once
    assert runs[1]["released"] == 0


# The walk with the collector's list of every object refused (argv[1]: a folder
# holding the sample module).
WALK = '''
import gc, json, sys
sys.path.insert(0, sys.argv[1])
import sample
from choragos.session import modulecode

def refused():
    raise AssertionError("gc.get_objects")

gc.get_objects = refused
stripped = modulecode.strip_loaded()
print(json.dumps({"classes": stripped[0], "gone": [sample.__doc__, sample.Box.__doc__]}))
'''


def test_the_classes_are_found_through_the_modules_not_every_object(tmp_path: Path) -> None:
    """The roles' threads import their screens while the server lets go of
    the docstrings: a walk of every object the collector tracks reaches
    tuples still being built there, and CPython then fails that import
    with a SystemError (seen in a full run).  The classes are found
    through the modules' namespaces."""
    folder = _sample(tmp_path)
    out = subprocess.run([sys.executable, "-c", WALK, str(folder)], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout)
    assert found["classes"] > 100 and found["gone"] == [None, None]


def test_each_installation_reads_a_file_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server reads the whole index of the file it opens: another
    installation's modules (ten share one cache folder on a shared
    machine) are not in it."""
    env = {"XDG_CACHE_HOME": "/cache"}
    mine = modulecode.cache_path(env)
    here = classcode._PACKAGE
    monkeypatch.setattr(classcode, "_PACKAGE", "/elsewhere/choragos")
    other = modulecode.cache_path(env)
    monkeypatch.setattr(classcode, "_PACKAGE", here)
    assert mine is not None and other is not None
    assert os.path.dirname(mine) == os.path.dirname(other) == "/cache/choragos"
    assert mine != other
    assert modulecode.cache_path(env) == mine  # the same installation, the same file
    assert os.path.basename(mine).startswith("modules-")


def test_writing_an_installation_s_file_removes_the_file_all_shared(tmp_path: Path) -> None:
    """Before each installation had a file of its own, they shared one
    (``modules.<tag>.marshal``, 34 MB on this machine): nothing reads it
    now, and a start that writes its own removes it once no start has
    written it for a day (an older version in use beside this one keeps
    it).  Nothing else in the folder goes: another installation's file,
    the dataclasses' methods, a file of another name, a file being
    written."""
    folder = _sample(tmp_path)
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    mine = Path(modulecode.cache_path(env) or "")
    cache = mine.parent
    cache.mkdir(parents=True)
    shared = [cache / "modules.cpython-311-a70d0d0a.marshal",
              cache / "modules.cpython-312-cb0d0d0a.opt-1.marshal"]
    others = [cache / "modules-00c0ffee.cpython-311-a70d0d0a.marshal",
              cache / "dataclasses.cpython-311-a70d0d0a.marshal",
              cache / "modules.cpython-311-a70d0d0a.marshal.123.tmp", cache / "notes"]
    recent = cache / "modules.cpython-310-6f0d0d0a.marshal"  # an older version's, in use
    for path in [*shared, *others, recent]:
        path.write_bytes(b"x")
    day_ago = time.time() - classcode.SHARED_IDLE - 60
    for path in [*shared, *others]:
        os.utime(path, (day_ago, day_ago))
    others.append(recent)
    assert _run(cache / "elsewhere-modules.marshal", folder)["released"] == 1
    assert all(path.exists() for path in shared + others)  # not a file of cache_path's naming
    assert _run(mine, folder)["released"] == 1
    assert sorted(cache.iterdir()) == sorted([*others, mine, cache / "elsewhere-modules.marshal"])
    shared[0].write_bytes(b"x")  # an older version's start wrote it again
    os.utime(shared[0], (day_ago, day_ago))
    assert _run(mine, folder)["released"] == 0  # nothing written: nothing removed
    assert shared[0].exists()
