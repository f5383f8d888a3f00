"""Every dataclass of ours has a docstring of its own.

A ``@dataclass`` without one gets one written as the class is made, from
``inspect.signature(cls)``: some 40 us of CPU a class, paid at import by
every process that loads it.  The server loaded some 60 such classes before
its first frame (about 2.7 ms of its CPU on the way to the agents' spawn);
a line that says what the class holds or asks costs nothing at import and
tells the reader more than the signature.
"""

from __future__ import annotations

import json
import subprocess
import sys

from tests.unit.test_server_imports import SERVER

PACKAGES = ("choragos", "choragos.actors", "choragos.ui")

# Every module of the packages (a package's __main__ runs its command: left
# out), and each dataclass made in it, nested ones too, whose docstring is the
# one dataclasses writes: "Name(field: type, ...)", or "Name" where the
# signature could not be read.
WALK = f"""
import dataclasses, importlib, json, pkgutil

def written(cls):
    doc = cls.__dict__.get("__doc__") or ""
    return doc == cls.__name__ or doc.startswith(cls.__name__ + "(")

def look(owner, module, found):
    for value in list(vars(owner).values()):
        if (isinstance(value, type) and value.__module__ == module
                and value.__qualname__.rpartition(".")[0] == getattr(owner, "__qualname__", "")):
            if dataclasses.is_dataclass(value) and written(value):
                found.append(module + "." + value.__qualname__)
            look(value, module, found)

found, modules = [], 0
for name in {PACKAGES!r}:
    package = importlib.import_module(name)
    names = [name] + [m.name for m in pkgutil.walk_packages(package.__path__, name + ".")]
    for module in names:
        if module.rpartition(".")[2] == "__main__":
            continue
        look(importlib.import_module(module), module, found)
        modules += 1
print(json.dumps([modules, sorted(set(found))]))
"""

# The server's imports on the way to its first frame, each inspect.signature
# asked for one of our classes counted (dataclasses asks it for a docstring).
SIGNATURES = """
import inspect, json
real_signature = inspect.signature
asked = []
def counting(obj, *args, **kwargs):
    module = getattr(obj, "__module__", "") or ""
    if module.split(".")[0] == "choragos":
        asked.append(module + "." + getattr(obj, "__qualname__", "?"))
    return real_signature(obj, *args, **kwargs)
inspect.signature = counting
""" + SERVER + """
print(json.dumps(asked))
"""


def _run(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=90).stdout


def test_every_dataclass_has_a_docstring_of_its_own() -> None:
    modules, missing = json.loads(_run(WALK))
    assert modules > 200  # the walk reached the three packages' modules
    assert missing == [], (
        f"{len(missing)} dataclasses have no docstring of their own, so dataclasses writes "
        "one from inspect.signature(cls) as each is made: CPU at every import, the "
        "server's start included.  Give each a line that says what it holds or asks: "
        + ", ".join(missing))


def test_the_server_asks_no_signature_of_our_classes_on_the_way_to_its_first_frame() -> None:
    asked = json.loads(_run(SIGNATURES).splitlines()[-1])
    assert asked == [], f"the server's start wrote the docstrings of {asked}"
