"""The server's questions of ``inspect`` answered without it
(choragos/staticinspect.py): every answer the real module's, over many
cases, and the real module not loaded for the questions it answers."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# The cases, made before inspect is loaded; each answer ours first, then
# the real module's (loaded at the end) for the same object.
CASES = '''
from choragos.deferred import defer, real
defer("inspect")
import abc, dataclasses, functools, json, sys, typing
from choragos import staticinspect as ours

class Meta(type):
    tag = "meta"
    def method(cls): ...

class Shadowing(type):
    @property
    def __dict__(cls):
        return {"fake": 1}

class Base:
    inherited = 1
    @property
    def focus_position(self): return 0

class Derived(Base, metaclass=Meta):
    own = 2
    @property
    def focus_position(self): return 1

class Slotted:
    __slots__ = ("a", "b")

class Dynamic:
    def __getattr__(self, name): return name

class Shadowed(metaclass=Shadowing):
    hidden = 3

class Instance:
    klass = 1
    def __init__(self): self.mine = 2

CLASSES = [Base, Derived, Slotted, Dynamic, Shadowed, Instance, Meta, int, object, type, dict,
           abc.ABC, Instance(), Slotted(), 5]
NAMES = ["focus_position", "inherited", "own", "tag", "method", "a", "__slots__", "mro",
         "__call__", "__dict__", "hidden", "fake", "klass", "mine", "missing", "__init__",
         "__class__", "register", "real"]

async def coro(): ...
def plain(): ...
async def agen(): yield 1
def gen(): yield 1
class Methods:
    async def a(self): ...
    def b(self): ...
    @classmethod
    async def c(cls): ...
    @staticmethod
    async def d(): ...
    async def __call__(self): ...
class Duck:
    __name__ = "duck"
    __code__ = coro.__code__
    __defaults__ = None
    __kwdefaults__ = None
    __annotations__ = {}
    def __call__(self): ...
CALLABLES = [coro, plain, agen, gen, lambda: 1, len, print, Methods, Methods().a, Methods().b,
             Methods.c, Methods.d, Methods(), functools.partial(coro),
             functools.partial(functools.partial(coro)), functools.partial(plain),
             functools.partialmethod(coro), Duck(), None, 1, "text", abc.abstractmethod(coro)]

def made(**options):
    def make(cls):
        return dataclasses.dataclass(**options)(cls)
    return make

@made()
class Empty:
    pass
@made()
class Fields:
    name: str
    count: int = 0
    items: list[int] = dataclasses.field(default_factory=list)
    maybe: typing.Optional[int] = None
    old: typing.List[str] = dataclasses.field(default_factory=list)
    mapping: "dict[str, int]" = dataclasses.field(default_factory=dict)
    hidden: int = dataclasses.field(default=5, init=False)
    kept: typing.ClassVar[int] = 3
@made(kw_only=True)
class KwOnly:
    a: int
    b: str = "b"
@made()
class Mixed:
    a: int
    _: dataclasses.KW_ONLY
    b: float = 1.5
    c: object = None
@made()
class WithInitVar:
    a: int
    scale: dataclasses.InitVar[int] = 2
    def __post_init__(self, scale): ...
@made(frozen=True, slots=True, order=True)
class Frozen:
    x: Fields = None
    y: bytes = b""
@made()
class Abstract(abc.ABC):
    value: int = 1
@made()
class Meta2(metaclass=Meta):
    value: int = 1
@made(init=False)
class OwnInit:
    a: int = 0
    def __init__(self, a, /, b=1, *rest, c, d=2, **more): ...
class PosOnly:
    def __init__(self, a, b, /): ...
class SelfOnly:
    def __init__(self, /): ...
class Star:
    def __init__(*args, key=1): ...
class Wrapped:
    @functools.wraps(plain)
    def __init__(self, x): ...
class WithNew:
    def __new__(cls, a): ...
    def __init__(self, a): ...
class CallMeta(type):
    def __call__(cls, z): ...
class Called(metaclass=CallMeta):
    def __init__(self, a): ...
class Signed:
    __signature__ = None
    def __init__(self, a: "int" = 3): ...
SIGNED = [Empty, Fields, KwOnly, Mixed, WithInitVar, Frozen, Abstract, Meta2, OwnInit, PosOnly,
          SelfOnly, Star, Wrapped, WithNew, Called, Signed, Methods, int]

MISSING = object()
def answer(call, *args):
    try:
        return call(*args)
    except Exception as error:
        return (type(error).__name__, str(error))

def static(function):
    return [answer(function, obj, name, *extra) for obj in CLASSES for name in NAMES
            for extra in ((), (MISSING,))]
frame = ours.currentframe()
'''


def _run(code: str) -> object:
    return json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True,
                                     text=True, check=True, timeout=60).stdout)


def test_getattr_static_of_a_class_answers_as_the_real_one_without_it() -> None:
    code = CASES + '''
types_only = [obj for obj in CLASSES if isinstance(obj, type)]
CLASSES[:] = types_only
mine = static(ours.getattr_static)
loaded = type(sys.modules["inspect"]).__name__
theirs = static(real("inspect").getattr_static)
print(json.dumps([loaded, len(mine), [i for i, (a, b) in enumerate(zip(mine, theirs))
                                       if a is not b and a != b]]))
'''
    loaded, count, differ = _run(code)
    assert loaded == "_Inspect"  # every class answered without the real module
    assert count > 400 and differ == []


def test_getattr_static_of_anything_else_is_the_real_one_s() -> None:
    code = CASES + '''
mine = static(ours.getattr_static)
theirs = static(real("inspect").getattr_static)
print(json.dumps([len(mine), [i for i, (a, b) in enumerate(zip(mine, theirs))
                              if a is not b and a != b]]))
'''
    count, differ = _run(code)
    assert count > 500 and differ == []


def test_iscoroutinefunction_answers_as_the_real_one_without_it() -> None:
    code = CASES + '''
mine = [answer(ours.iscoroutinefunction, f) for f in CALLABLES]
loaded = type(sys.modules["inspect"]).__name__
inspect = real("inspect")
theirs = [answer(inspect.iscoroutinefunction, f) for f in CALLABLES]
again = [answer(ours.iscoroutinefunction, f) for f in CALLABLES]  # the real one's, once loaded
print(json.dumps([loaded, mine, theirs, again]))
'''
    loaded, mine, theirs, again = _run(code)
    assert loaded == "_Inspect"
    assert mine == theirs == again
    assert mine.count(True) >= 5 and mine.count(False) >= 10  # both kinds among the cases


def test_a_class_signature_is_written_as_the_real_one_writes_it() -> None:
    code = CASES + '''
plain = {"Empty", "Fields", "KwOnly", "Mixed", "WithInitVar", "Frozen", "Abstract", "Meta2",
         "OwnInit", "PosOnly", "SelfOnly"}
def text(c):
    return str(ours.dataclass_signature(c))
mine = [answer(text, c) for c in SIGNED if c.__name__ in plain]
loaded = type(sys.modules["inspect"]).__name__
inspect = real("inspect")
theirs = [answer(lambda c: str(inspect.signature(c)), c) for c in SIGNED if c.__name__ in plain]
rest = [[answer(text, c),
         answer(lambda c: str(inspect.signature(c)), c)] for c in SIGNED if c.__name__ not in plain]
print(json.dumps([loaded, mine, theirs, rest]))
'''
    loaded, mine, theirs, rest = _run(code)
    assert loaded == "_Inspect"  # written without the real module
    assert mine == theirs
    assert "(name: str, count: int = 0, items: list[int] = <factory>" in mine[1]
    assert all(a == b for a, b in rest)  # the other shapes: the real module's answer


def test_currentframe_is_the_caller_s() -> None:
    code = CASES + '''
def where():
    return ours.currentframe().f_code.co_name
print(json.dumps([where(), frame.f_code.co_name, type(sys.modules["inspect"]).__name__]))
'''
    assert _run(code) == ["where", "<module>", "_Inspect"]


# dataclasses' docstring for a class without one, made under the stand-in
# and under the real module.
DOCSTRINGS = '''
{setup}
import dataclasses, json, sys, typing
@dataclasses.dataclass
class Walk:
    counter: int = 0
    offset: "int" = 0
@dataclasses.dataclass(kw_only=True)
class Options:
    names: list[str] = dataclasses.field(default_factory=list)
    limit: typing.Optional[float] = None
print(json.dumps([Walk.__doc__, Options.__doc__, type(sys.modules["inspect"]).__name__]))
'''


def test_dataclasses_docstrings_are_the_same_without_the_real_module() -> None:
    mine = _run(DOCSTRINGS.format(setup="import choragos.cli.main"))
    theirs = _run(DOCSTRINGS.format(setup="import inspect"))
    assert mine[:2] == theirs[:2]
    assert mine[2] == "_Inspect" and theirs[2] == "module"


def test_the_server_s_deck_asks_inspect_without_loading_it() -> None:
    pytest.importorskip("urwid")
    code = '''
import json, sys
import choragos.cli.main
from choragos.ui.urwidload import load_urwid
urwid = load_urwid()
import choragos.ui.uiactor
pile = urwid.Pile([urwid.Text("a"), urwid.Text("b")])
pile.focus_position = 1
loop = urwid.SelectEventLoop()
async def later(): ...
handle = loop.alarm(10, lambda: None)
print(json.dumps([pile.focus_position, type(sys.modules["inspect"]).__name__,
                  [m for m in ("ast", "dis", "opcode") if m in sys.modules]]))
'''
    assert _run(code) == [1, "_Inspect", []]
