"""wcwidth's C functions without the rest of its package.

pyte (the agents' screens) and urwid (the deck) ask wcwidth for character
and string widths and grapheme boundaries, which wcwidth's C extension
answers.  Importing the package also loads its pure-Python twins of those
functions, its text wrapper, aligner, clipper, hyperlink and text-sizing
helpers and every width table they read: about 30 modules and 1 MB of the
session server's memory that the C functions never touch.

:func:`load_wcwidth` puts a stand-in for the package in ``sys.modules``: the
names the package itself takes from its C extension (:data:`FROM_C`) come
from it, ``iter_sequences`` from its one small module, and any other name
asked of the package runs the package's own ``__init__`` into the stand-in,
which is then the real package.  Without the C extension (or with
``WCWIDTH_PYTHON`` set, wcwidth's own switch to its Python functions) the
first name asked runs the real ``__init__`` too, so the answers are always
the package's own.  tests/unit/test_wcwidthload.py checks that a real
import binds the same objects, so a wcwidth that moves a name fails there.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import threading
import types
from functools import lru_cache
from typing import Any

PACKAGE = "wcwidth"
C_MODULE = "wcwidth._wcwidth_c"
# What wcwidth/__init__.py imports from its C extension when it has one.
FROM_C = ("width", "wcswidth", "wcstwidth", "iter_graphemes", "iter_graphemes_reverse",
          "grapheme_boundary_before", "strip_sequences", "propagate_sgr", "ljust", "rjust",
          "center")
# ...and the one Python module whose name the deck uses (urwid's canvas).
FROM_MODULES = {"iter_sequences": "wcwidth.escape_sequences"}
CACHE = 1024  # the package caches its C wcwidth with this size

_lock = threading.RLock()
_initializing = threading.local()  # set in the thread running the real __init__


def load_wcwidth() -> None:
    """Stand in for the wcwidth package until a name only its ``__init__``
    makes is asked (nothing changes if it is imported already, or absent)."""
    if PACKAGE in sys.modules:
        return
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or spec.submodule_search_locations is None:
        return
    package = _Package(PACKAGE, "Stands in for wcwidth until a name only its __init__ makes "
                                "is asked.")
    package.__spec__ = spec
    package.__loader__ = spec.loader
    package.__file__ = spec.origin
    package.__path__ = list(spec.submodule_search_locations)
    package.__package__ = PACKAGE
    sys.modules[PACKAGE] = package


class _Package(types.ModuleType):
    """The wcwidth package before its ``__init__`` ran (see the module's note)."""

    def __getattr__(self, name: str) -> Any:
        if getattr(_initializing, "package", None) is self:
            raise AttributeError(name)  # as a package part way through its import
        with _lock:  # another thread running the real __init__ holds it to the end
            if type(self) is not _Package:
                return getattr(self, name)
            if name in FROM_C or name == "wcwidth":
                if _take_c_functions(self):
                    return self.__dict__[name]
            elif name in FROM_MODULES:
                value = getattr(importlib.import_module(FROM_MODULES[name]), name)
                setattr(self, name, value)
                return value
            elif name.startswith("__") and name not in ("__all__", "__version__"):
                raise AttributeError(name)  # importlib's questions while it imports
            _run_init(self)
        return getattr(self, name)


def _take_c_functions(package: _Package) -> bool:
    """Bind the C extension's functions, as the package's ``__init__`` does;
    False when there is no C extension or wcwidth is told not to use it."""
    if os.environ.get("WCWIDTH_PYTHON", ""):
        return False
    try:
        c = importlib.import_module(C_MODULE)
    except ImportError:
        return False
    if not all(hasattr(c, name) for name in (*FROM_C, "wcwidth")):
        return False
    for name in FROM_C:
        setattr(package, name, getattr(c, name))
    package.wcwidth = lru_cache(maxsize=CACHE)(c.wcwidth)
    return True


def _run_init(package: _Package) -> None:
    """Run the real ``__init__`` into the stand-in, which becomes a plain
    module: every name is then the package's own."""
    for name in (*FROM_C, *FROM_MODULES, "wcwidth"):
        # As on a first import: ``from . import wcwidth`` must find the submodule.
        package.__dict__.pop(name, None)
    _initializing.package = package
    try:
        package.__spec__.loader.exec_module(package)
    except BaseException:
        sys.modules.pop(PACKAGE, None)  # as a failed import leaves it
        raise
    finally:
        _initializing.package = None
    package.__class__ = types.ModuleType
