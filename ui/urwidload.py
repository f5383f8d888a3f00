"""urwid without the event loops the deck never runs.

Importing urwid imports every event loop it offers whose library is
installed: asyncio's always (asyncio with ssl: 9 MB of a server's resident
memory), and trio's, twisted's, tornado's, GLib's or ZMQ's when those are
present (trio alone, installed with the test tools, is 14 MB).  The deck
runs urwid's own select loop and nothing else, so the server imports urwid
through :func:`load_urwid` first: the optional loops are skipped and
asyncio's loop is a stand-in that imports the real one if it is ever used.

urwid also asks ``platform.platform()`` whether it runs under WSL, which
starts ``uname -p`` and reads the interpreter's binary for its libc: a
process forked from the server at start-up.  The kernel's release names WSL
as well, so during the import that answer comes from ``os.uname()`` (and
the ``platform`` module itself is not loaded where it is stood in for).

And urwid imports every widget it has: the deck draws with a dozen of them
(text, list boxes, frames, overlays, a line box, an edit line), not with
its terminal widget, big fonts, tables, tabs, trees, buttons or progress
bars.  Those modules (:data:`LEFT_OUT`) are stood in for while urwid loads:
a name urwid takes from one is a function that imports the real module and
calls the real name when first called, and a later import of the module
finds the real one (about 2 MB of the server's memory and 22 modules).
Should a version of urwid need one of them to load, it is loaded whole.

The deck's first frame is drawn by a widget of its own on a text canvas,
under urwid's main loop and raw display: the widgets its dialogs are made
of (text, list boxes, frames, overlays, a line box, an edit line, and what
they are built on) wait for the first dialog the same way
(:data:`ON_FIRST_USE`, 19 modules and about 5 ms of the main thread before the
first frame).  The dialogs subclass those classes and test instances
against them, so in ``urwid`` and ``urwid.widget`` a name stood in for is
not left as a function: it is taken out of the module, and the module's
``__getattr__`` imports the real module when the name is first asked for
and keeps the real class there.

urwid marks its deprecated names with ``typing_extensions.deprecated``
(``category=None``: no warning at run time, only ``__deprecated__`` set
for type checkers), and importing ``typing_extensions`` for that decorator
costs the server 0.3 MB.  While urwid loads, :data:`TYPING_EXTENSIONS` is a
stand-in whose ``deprecated`` does just that for ``category=None`` and
hands any other use to the real decorator; any other name imports the real
module, and a later import of it finds the real one.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import types
from collections.abc import Iterator
from typing import Any

from choragos import deferred
from choragos.deferred import StandIn
from choragos.terminal.wcwidthload import load_wcwidth

_LOOPS = "urwid.event_loop."
OPTIONAL = tuple(_LOOPS + name for name in
                 ("twisted_loop", "tornado_loop", "glib_loop", "trio_loop", "zmq_loop"))
ASYNCIO = _LOOPS + "asyncio_loop"
_WIDGETS = "urwid.widget."
TYPING_EXTENSIONS = "typing_extensions"
LEFT_OUT = ("urwid.vterm", "urwid.font", "urwid.ansi_parser", "urwid.numedit",
            *(_WIDGETS + name for name in (
                "ansi_text", "bar_graph", "big_text", "deque_walker", "drop_down",
                "filtered_walker", "grid_flow", "monitored_deque", "notifications",
                "overlay_stack", "popup", "progress_bar", "spinner", "table", "tabs",
                "treetools", "wimp", "scrollable")))
ON_FIRST_USE = tuple(_WIDGETS + name for name in (
    "attr_map", "attr_wrap", "box_adapter", "columns", "container", "divider", "edit",
    "filler", "frame", "line_box", "list_walker", "listbox", "monitored_list", "overlay",
    "padding", "pile", "solid_fill", "text", "widget_decoration"))
# The modules that only hand urwid's names on: theirs resolve on first use.
REEXPORTS = ("urwid", "urwid.widget")


def load_urwid() -> types.ModuleType:
    """urwid, imported without its unused event loops (as it is if already imported)."""
    if "urwid" in sys.modules:
        return sys.modules["urwid"]
    load_wcwidth()  # urwid's widths: wcwidth's C functions without the rest of it
    skipped = [name for name in OPTIONAL if name not in sys.modules]
    for name in skipped:
        sys.modules[name] = None  # type: ignore[assignment]  # urwid's "not installed"
    sys.modules[ASYNCIO] = _asyncio_stand_in()
    try:
        with _platform_from_uname():
            return _without_unused_widgets()
    finally:
        # Later imports of these by name find the real modules again.
        for name in skipped:
            if sys.modules.get(name) is None:
                del sys.modules[name]


def _without_unused_widgets() -> types.ModuleType:
    stood_in = [name for name in (*LEFT_OUT, *ON_FIRST_USE) if name not in sys.modules]
    for name in stood_in:
        sys.modules[name] = _LeftOut(name)
    if TYPING_EXTENSIONS not in sys.modules:
        stood_in.append(TYPING_EXTENSIONS)
        sys.modules[TYPING_EXTENSIONS] = _TypingExtensions(TYPING_EXTENSIONS)
    try:
        import urwid
    except Exception:
        # This urwid needs one of them while it loads: load it whole.
        for name in [name for name in sys.modules if name.split(".")[0] == "urwid"]:
            if sys.modules[name] is not None and name != ASYNCIO:  # the loops skipped stay so
                del sys.modules[name]
        stood_in = _forget(stood_in)
        import urwid
    finally:
        _forget(stood_in)
    for name in REEXPORTS:
        _resolve_on_use(sys.modules[name])
    return urwid


def _resolve_on_use(module: types.ModuleType) -> None:
    """Takes the stand-ins' names out of ``module``: its ``__getattr__``
    (urwid's own, for its moved modules, behind it) gives the real ones."""
    homes = {name: value.left_out for name, value in vars(module).items()
             if isinstance(value, types.FunctionType) and "left_out" in value.__dict__}
    if not homes:
        return
    for name in homes:
        delattr(module, name)
    behind = vars(module).get("__getattr__")

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            if behind is None:
                raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}")
            return behind(name)
        value = getattr(importlib.import_module(home), name)
        setattr(module, name, value)  # asked once: later lookups find it in place
        return value

    module.__getattr__ = __getattr__  # type: ignore[method-assign]


def _forget(stood_in: list[str]) -> list[str]:
    for name in stood_in:
        if isinstance(sys.modules.get(name), (_LeftOut, _TypingExtensions)):
            del sys.modules[name]
    return []


class _TypingExtensions(StandIn):
    """Stands in for ``typing_extensions`` while urwid loads: its
    ``deprecated`` without the module; any other name from the real one."""

    def __getattr__(self, attribute: str) -> Any:
        if attribute == "deprecated":
            return _Deprecated
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        return super().__getattr__(attribute)


class _Deprecated:
    """``typing_extensions.deprecated`` as urwid uses it (``category=None``
    only marks the object); a warning category goes to the real one."""

    def __init__(self, message: str, /, *, category: type[Warning] | None = DeprecationWarning,
                 stacklevel: int = 1) -> None:
        if not isinstance(message, str):
            raise TypeError("Expected an object of type str for 'message', not "
                            f"{type(message).__name__!r}")
        self.message, self.category, self.stacklevel = message, category, stacklevel

    def __call__(self, arg: Any, /) -> Any:
        if self.category is None:
            arg.__deprecated__ = self.message
            return arg
        real = deferred.real(TYPING_EXTENSIONS).deprecated
        return real(self.message, category=self.category, stacklevel=self.stacklevel)(arg)


class _LeftOut(types.ModuleType):
    """Stands in for a module of urwid the deck does not use, while urwid loads."""

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        module = self.__name__

        def stand_in(*args: Any, **kwargs: Any) -> Any:
            return getattr(importlib.import_module(module), attribute)(*args, **kwargs)

        stand_in.__qualname__ = stand_in.__name__ = attribute
        stand_in.left_out = module  # type: ignore[attr-defined]
        return stand_in


@contextlib.contextmanager
def _platform_from_uname() -> Iterator[None]:
    def platform_name(aliased: bool = False, terse: bool = False) -> str:
        name = os.uname()
        return f"{name.sysname}-{name.release}-{name.machine}"

    # The module as it is: the real one, or the stand-in the ``choragos``
    # command puts there (choragos/deferred.py), which this does not load.
    module = sys.modules.get("platform") or importlib.import_module("platform")
    real = module.__dict__.get("platform")
    module.platform = platform_name  # type: ignore[attr-defined]
    try:
        yield
    finally:
        if real is None:
            del module.platform  # the stand-in's: later questions go to the real module
        else:
            module.platform = real  # type: ignore[attr-defined]


def _asyncio_stand_in() -> types.ModuleType:
    module = types.ModuleType(ASYNCIO, "Stands in for urwid's asyncio loop until it is used.")

    class AsyncioEventLoop:
        """Makes the real ``AsyncioEventLoop`` (importing asyncio then)."""

        def __new__(cls, *args: Any, **kwargs: Any) -> Any:
            return _real_asyncio_loop().AsyncioEventLoop(*args, **kwargs)

    module.AsyncioEventLoop = AsyncioEventLoop  # type: ignore[attr-defined]
    module.__all__ = ("AsyncioEventLoop",)  # type: ignore[attr-defined]
    module._stand_in = True  # type: ignore[attr-defined]
    return module


def _real_asyncio_loop() -> types.ModuleType:
    current = sys.modules.get(ASYNCIO)
    if current is not None and not getattr(current, "_stand_in", False):
        return current
    sys.modules.pop(ASYNCIO, None)
    return importlib.import_module(ASYNCIO)
