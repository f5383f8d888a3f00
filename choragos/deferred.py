"""Standard modules a library imports at its top but the session rarely uses,
loaded when first used instead.

shutil imports ``bz2`` and ``lzma`` (with their C libraries, 0.3 MB) for
archive formats choragos never makes.  wcwidth (under pyte, the agents'
screens) imports ``secrets`` for a hyperlink id in its text wrapper, which
the session never calls; ``secrets`` imports ``hmac``, which loads
OpenSSL's libcrypto: 3.6 MB of every server's resident memory at rest.
subprocess imports ``locale`` (0.3 MB) for the encoding of a text run,
and urwid asks it the same at its import: both questions are answered
from the C module the real one takes them from (``_locale``), without it.
urwid's raw display imports ``base64`` for a copy to the clipboard (OSC 52)
that the deck never asks of it.  uuid (under pykka, for each actor's name)
imports ``platform`` (about 1.2 ms of the server's start before its first
spawn) to ask the system's name, which ``os.uname()`` answers on Linux.
dataclasses imports ``inspect`` (with ``ast`` and ``dis``: some 3 ms of the
``serve`` client's start, before the server's fork) to write a docstring
for a class without one, and every class of ours has one; urwid asks it
four questions with the deck (choragos/staticinspect.py answers them), so
the server never loads it (0.7 MB with ``ast`` and ``dis``).  logging's
traceback imports linecache, which imports ``tokenize`` (with ``token``,
0.1 MB traced in the server) only to open a source file in its declared
encoding, when a traceback or a warning is written with its lines.
logging imports ``traceback`` itself (with ``linecache`` and ``textwrap``:
about 1 ms of the ``serve`` client's start before its fork, and of every
agent's verb) to write an exception it is given, and our modules to write
one they caught: both only when there is one.  pathlib's ``urllib.parse``
imports ``ipaddress`` to check a bracketed host in a URL it splits, which
the start never does.  (A development checkout's editable install loads
pathlib, and with it ``ipaddress``, before the command's first line runs;
an installed choragos does not.)

:func:`defer` puts a stand-in in ``sys.modules``: the first attribute asked
of it imports the real module, which takes its place there, and the
stand-in passes every later question on to it.
(The standard library's ``LazyLoader`` does not do here: on Python 3.11 the
next ``import`` statement of the module asks for its ``__spec__``, which
runs it.)
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys

# Standard library only, and cheap: the agents' verbs load it on every call.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any


# What the ``choragos`` command defers (see the module's note), so the
# session server, which it starts, never loads them for nothing.
UNUSED = ("bz2", "lzma", "locale", "secrets", "base64", "platform", "inspect", "tokenize",
          "traceback", "ipaddress")


def defer_unused() -> None:
    for name in UNUSED:
        defer(name)


class StandIn(type(sys)):  # a module
    def __getattr__(self, attribute: str) -> Any:
        return getattr(real(self.__name__), attribute)


class _Locale(StandIn):
    """``locale`` for what subprocess and urwid ask of it: the encoding of
    the locale already set; anything else from the real module."""

    def __getattr__(self, attribute: str) -> Any:
        if attribute == "getencoding" and _getencoding is not None:
            return _getencoding
        if attribute == "getpreferredencoding" and _getencoding is not None:
            return _preferred_encoding
        return super().__getattr__(attribute)


def _preferred_encoding(do_setlocale: bool = True) -> str:
    """``locale.getpreferredencoding``: without a ``setlocale`` round trip
    (``False``: what urwid asks), the real one's answer without it."""
    if do_setlocale or sys.flags.warn_default_encoding:
        # The real one: a warning to give, a setlocale round trip to make.
        return real("locale").getpreferredencoding(do_setlocale)
    return "utf-8" if sys.flags.utf8_mode else _getencoding()


try:
    from _locale import getencoding as _getencoding  # what locale.getencoding is (3.11+)
except ImportError:
    _getencoding = None

class _Platform(StandIn):
    """``platform`` for what uuid asks of it at its import: the system's
    name, on Linux (where the real one's answer is ``os.uname()``'s as it
    is); anything else from the real module."""

    def __getattr__(self, attribute: str) -> Any:
        if attribute == "system" and sys.platform == "linux":
            return _linux_system
        return super().__getattr__(attribute)


def _linux_system() -> str:
    return os.uname().sysname


class _Inspect(StandIn):
    """``inspect`` for what urwid and dataclasses ask of it in the server
    (answered by choragos/staticinspect.py, loaded then); anything else
    from the real module."""

    def __getattr__(self, attribute: str) -> Any:
        if attribute in _INSPECT_ANSWERS:
            from choragos import staticinspect
            return getattr(staticinspect, attribute)
        if attribute == "signature" and sys._getframe(1).f_globals.get("__name__") == "dataclasses":
            # Only dataclasses: it takes the text alone, for a class's docstring.
            from choragos import staticinspect
            return staticinspect.dataclass_signature
        return super().__getattr__(attribute)


_INSPECT_ANSWERS = frozenset({"getattr_static", "iscoroutinefunction", "currentframe"})
_STAND_INS = {"locale": _Locale, "platform": _Platform, "inspect": _Inspect}


def defer(name: str) -> None:
    """Have ``name`` imported at its first use rather than at its import
    (nothing changes if it is already imported, or absent from this Python:
    its import must fail as it would, so shutil sees a build without lzma)."""
    if name in sys.modules or importlib.util.find_spec(name) is None:
        return
    stand_in = _STAND_INS.get(name, StandIn)
    sys.modules[name] = stand_in(name, f"Stands in for {name} until it is used.")


def real(name: str) -> ModuleType:
    """The real module ``name``, imported in place of its stand-in if there is one."""
    if isinstance(sys.modules.get(name), StandIn):
        del sys.modules[name]
    return importlib.import_module(name)
