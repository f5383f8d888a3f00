"""dataclasses' method-writing helpers answered from the cache by what they
write from (below): a warm start writes no method's
source, and every class comes out as the decorator makes it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from choragos import classcode

pytestmark = pytest.mark.skipif(sys.version_info[:2] != (3, 11),
                                reason="the helpers answered are Python 3.11's")

# Every branch of the helpers: defaults, factories, init-only and
# not-in-init fields, keyword-only fields, frozen, order, unsafe hash, slots,
# a field named self, __post_init__ with InitVars, eq off, and subclasses.
VARIANTS = '''
import dataclasses
from dataclasses import InitVar, KW_ONLY, dataclass, field
from typing import ClassVar

@dataclass
class Plain:
    a: int
    b: str = "b"
    c: list = field(default_factory=list)
    d: int = field(default=4, repr=False, compare=False)
    e: dict = field(init=False, default_factory=dict)
    f: int = field(init=False, default=6)
    g: ClassVar[int] = 7

@dataclass(frozen=True, order=True)
class Frozen:
    x: int
    y: tuple = ()

@dataclass(unsafe_hash=True)
class Hashed:
    p: int = field(hash=False)
    q: int = 0

@dataclass(slots=True, frozen=True)
class Slotted:
    s: int
    t: int = field(init=False, default=2)

@dataclass
class Selfish:
    self: int
    other: int = 1

@dataclass
class Post:
    a: int
    scale: InitVar[int] = 2
    def __post_init__(self, scale):
        self.a *= scale

@dataclass(kw_only=True)
class Keywords:
    k: int
    m: int = 3

@dataclass
class Mixed:
    a: int
    _: KW_ONLY
    b: int = 0

@dataclass(eq=False, repr=False)
class Bare:
    z: int = 0

@dataclass
class Child(Plain):
    h: int = 8

@dataclass(frozen=True)
class Empty:
    pass

import typing
import typing as t

@dataclass
class Texts:  # annotations as text, as ``from __future__ import annotations`` leaves them
    a: "int"
    b: "ClassVar[int]" = 1
    c: "typing.ClassVar[int]" = 2
    d: "t.ClassVar[int]" = 3
    e: "dataclasses.InitVar[int]" = 4
    f: "InitVar[str]" = "f"
    g: "(int)" = 5
    _: "KW_ONLY"
    h: "int | None" = None
'''

# Describes every dataclass of the given modules, and how many methods'
# source the decorator wrote (``_create_fn``) while they were made.
DESCRIBE = r'''
import dataclasses, importlib, json, pkgutil, sys, types
written = [0]
real_create = dataclasses._create_fn
def counted(*args, **kwargs):
    written[0] += 1
    return real_create(*args, **kwargs)
dataclasses._create_fn = counted
texts = []  # each annotation text dataclasses matched (ClassVar? InitVar? KW_ONLY?)
real_re = dataclasses._MODULE_IDENTIFIER_RE
class Matching:
    def match(self, text):
        texts.append(text)
        return real_re.match(text)
dataclasses._MODULE_IDENTIFIER_RE = Matching()
path = sys.argv[1]
if path != "-":
    from choragos import classcode
    classcode.install(path)
sys.path.insert(0, sys.argv[2])
names = ["variants"]
for package in ("choragos", "choragos.actors", "choragos.ui"):
    module = importlib.import_module(package)
    names += [info.name for info in pkgutil.walk_packages(module.__path__, package + ".")
              if not info.name.endswith("__main__")]
modules = [importlib.import_module(name) for name in names]
released = classcode.release() if path != "-" else None

def value(v):
    if isinstance(v, (types.FunctionType, type)):
        return f"{v.__module__}.{v.__qualname__}"
    text = repr(v)
    return type(v).__qualname__ if " at 0x" in text else text

def function(fn):
    if not isinstance(fn, types.FunctionType):
        return value(fn)
    code = fn.__code__
    return {"name": fn.__name__, "qualname": fn.__qualname__, "module": fn.__module__,
            "doc": fn.__doc__, "dict": sorted(fn.__dict__),
            "globals": fn.__globals__.get("__name__"),
            "defaults": [value(v) for v in fn.__defaults__ or ()],
            "kwdefaults": {k: value(v) for k, v in (fn.__kwdefaults__ or {}).items()},
            "annotations": {k: value(v) for k, v in fn.__annotations__.items()},
            "closure": [value(c.cell_contents) for c in fn.__closure__ or ()],
            "wrapped": function(fn.__wrapped__) if hasattr(fn, "__wrapped__") else None,
            "code": [code.co_code.hex(), [value(c) for c in code.co_consts], code.co_names,
                     code.co_varnames, code.co_freevars, code.co_cellvars, code.co_argcount,
                     code.co_kwonlyargcount, code.co_flags, code.co_filename, code.co_name,
                     code.co_qualname, code.co_firstlineno, code.co_linetable.hex()]}

classes = {}
for module in modules:
    for cls in vars(module).values():
        if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)
                and cls.__module__ == module.__name__):
            continue
        fields = [[f.name, value(f.type), value(f.default), value(f.default_factory), f.init,
                   f.repr, f.hash, f.compare, value(f.kw_only), repr(f._field_type),
                   repr(f.metadata)] for f in cls.__dataclass_fields__.values()]
        classes[f"{cls.__module__}.{cls.__qualname__}"] = {
            "params": repr(cls.__dataclass_params__), "fields": fields,
            "match_args": list(getattr(cls, "__match_args__", ())), "doc": cls.__doc__,
            "slots": list(cls.__dict__.get("__slots__", ())),
            "methods": {name: function(cls.__dict__.get(name)) for name in (
                "__init__", "__repr__", "__eq__", "__lt__", "__le__", "__gt__", "__ge__",
                "__setattr__", "__delattr__", "__hash__", "__getstate__", "__setstate__")}}
print(json.dumps({"written": written[0], "released": released, "classes": classes,
                  "matched": len(texts), "texts": len(set(texts))}))
'''


def _describe(cache: str, variants: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", DESCRIBE, cache, str(variants)],
                         capture_output=True, text=True, check=True, timeout=120)
    return json.loads(out.stdout)


@pytest.mark.timeout(300)
def test_a_warm_start_writes_no_source_and_makes_every_class_as_the_decorator(
        tmp_path: Path) -> None:
    (tmp_path / "variants.py").write_text(VARIANTS)
    cache = str(tmp_path / "cache" / "dc.marshal")
    real = _describe("-", tmp_path)  # the decorator alone
    cold = _describe(cache, tmp_path)  # writes the file
    warm = _describe(cache, tmp_path)
    assert len(real["classes"]) > 150 and "variants.Post" in real["classes"]
    assert real["written"] > 600  # every method's source, written
    assert cold["written"] == real["written"] and cold["released"] > 0
    # The file keeps each helper's code under its facts, not under its text too.
    index = classcode.read_index(Path(cache).read_bytes())
    assert index and all(isinstance(key, tuple) for key in index)
    assert warm["written"] == 0  # the helpers answered from the file: no source written
    assert warm["released"] == 0  # and nothing compiled
    # Each annotation text matched once, not three times a field.
    assert real["matched"] > 1500 and real["matched"] > 3 * real["texts"]
    assert cold["matched"] == warm["matched"] == warm["texts"] == real["texts"]
    for made in (cold, warm):
        for name, described in real["classes"].items():
            assert made["classes"][name] == described, name
        assert made["classes"].keys() == real["classes"].keys()


# One of the decorator's helpers, ours, called after the cache's release (a
# role's thread making a class as the start ends); argv[1]: the cache file.
RELEASED = '''
import dataclasses, json, sys
from choragos import classcode
classcode.install(sys.argv[1])
ours = dataclasses._repr_fn
classcode.release(write=False)

@dataclasses.dataclass
class Point:
    """A point."""
    x: int
    y: int = 2

made = ours(list(dataclasses.fields(Point)), {})
print(json.dumps({"ours": ours is not dataclasses._repr_fn, "repr": made(Point(1))}))
'''


@pytest.mark.skipif(not classcode._HELPERS_KNOWN, reason="the helpers are answered on 3.11")
def test_a_helper_of_ours_called_after_the_release_runs_the_real_one(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-c", RELEASED, str(tmp_path / "dc.marshal")],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"ours": True, "repr": "Point(x=1, y=2)"}
