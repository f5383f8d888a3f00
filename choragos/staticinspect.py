"""The few questions the server with its deck asks of ``inspect``, answered
without loading it (see choragos/deferred.py).

The real module brings ``ast``, ``dis``, ``opcode`` and its own large body
(about 0.7 MB of the server's memory, traced, and 3 ms of the deck's
import) for four questions: urwid's containers ask ``getattr_static`` of a
class (at their import and as a container is focused), its event loops
``iscoroutinefunction`` of a callback, its deprecation marks
``currentframe``, and ``dataclasses`` the signature of a class without a
docstring (urwid has one) to write it one.  Each answer here follows the
real function's steps for that case, on Python 3.11; any other case is
passed to the real module, loaded then.

Standard library only, and nothing it does not already hold.
"""

from __future__ import annotations

import functools
import re
import sys
import types

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_MISSING = object()
_CO_COROUTINE = 0x80  # inspect.CO_COROUTINE
_CO_VARARGS = 0x04
_CO_VARKEYWORDS = 0x08
_MRO = type.__dict__["__mro__"]
_DICT = type.__dict__["__dict__"]
# dataclasses' docstring follows inspect's steps as Python 3.11 takes them.
_SIGNATURES_KNOWN = sys.version_info[:2] == (3, 11)


def _real() -> types.ModuleType:
    from choragos.deferred import real  # deferred imports this module when asked
    return real("inspect")


def _real_loaded() -> types.ModuleType | None:
    """The real ``inspect`` if something loaded it (then it answers)."""
    module = sys.modules.get("inspect")
    return module if type(module) is types.ModuleType else None


def currentframe() -> types.FrameType | None:
    """The caller's frame, as ``inspect.currentframe`` gives it."""
    return sys._getframe(1) if hasattr(sys, "_getframe") else None


def iscoroutinefunction(obj: object) -> bool:
    """Whether ``obj`` is a function written ``async def`` (a method's or a
    partial's function unwrapped), as ``inspect.iscoroutinefunction``."""
    loaded = _real_loaded()
    if loaded is not None:
        # Its answer: a function marked as one by it (3.12) is one too.
        return loaded.iscoroutinefunction(obj)
    while isinstance(obj, types.MethodType):
        obj = obj.__func__
    while isinstance(obj, functools.partial):
        obj = obj.func
    if not (isinstance(obj, types.FunctionType) or _functionlike(obj)):
        return False
    return bool(obj.__code__.co_flags & _CO_COROUTINE)


def _functionlike(obj: Any) -> bool:
    """A duck type of a function (a compiled one: Cython's), as inspect's
    ``_signature_is_functionlike`` tells one."""
    if not callable(obj) or isinstance(obj, type):
        return False
    defaults = getattr(obj, "__defaults__", _MISSING)
    kwdefaults = getattr(obj, "__kwdefaults__", _MISSING)
    annotations = getattr(obj, "__annotations__", None)
    return (isinstance(getattr(obj, "__code__", None), types.CodeType)
            and isinstance(getattr(obj, "__name__", None), str)
            and (defaults is None or isinstance(defaults, tuple))
            and (kwdefaults is None or isinstance(kwdefaults, dict))
            and (annotations is None or isinstance(annotations, dict)))


def getattr_static(obj: object, attr: str, default: object = _MISSING) -> Any:
    """``attr`` of the class ``obj`` without running a descriptor or a
    ``__getattr__``: from the classes of its MRO, then its metaclass's, as
    ``inspect.getattr_static`` finds it for a type.  Anything but a type
    is asked of the real function."""
    try:
        mro = _MRO.__get__(obj)
    except TypeError:  # not a type: an instance's dict comes first
        if default is _MISSING:
            return _real().getattr_static(obj, attr)
        return _real().getattr_static(obj, attr, default)
    for classes in (mro, _MRO.__get__(type(obj))):
        found = _in_dicts(classes, attr)
        if found is not _MISSING:
            return found
    if default is not _MISSING:
        return default
    raise AttributeError(attr)


def _in_dicts(classes: tuple[type, ...], attr: str) -> Any:
    for entry in classes:
        if _shadowed_dict(type(entry)) is _MISSING:
            try:
                return entry.__dict__[attr]
            except KeyError:
                pass
    return _MISSING


def _shadowed_dict(klass: type) -> Any:
    """What stands as ``__dict__`` in ``klass``'s classes if it is not the
    type's own (then ``entry.__dict__`` may run code: not asked)."""
    for entry in _MRO.__get__(klass):
        try:
            class_dict = _DICT.__get__(entry)["__dict__"]
        except KeyError:
            continue
        if not (type(class_dict) is types.GetSetDescriptorType
                and class_dict.__name__ == "__dict__" and class_dict.__objclass__ is entry):
            return class_dict
    return _MISSING


class _Text:
    """A signature as ``dataclasses`` uses it: its text."""

    def __init__(self, text: str) -> None:
        self._text = text

    def __str__(self) -> str:
        return self._text


def dataclass_signature(cls: Any) -> Any:
    """``inspect.signature(cls)`` for what dataclasses does with it (its
    text, for the docstring of a class without one): written here for a
    plain class whose ``__init__`` is a plain function (dataclasses'), the
    real module's for any other."""
    init = _plain_init(cls) if _SIGNATURES_KNOWN else None
    if init is None:
        return _real().signature(cls)
    code = init.__code__
    names = code.co_varnames
    positional = code.co_argcount
    kw_only = code.co_kwonlyargcount
    if positional == 0:
        return _real().signature(cls)  # no self: the real error
    annotations = init.__annotations__
    defaults = init.__defaults__ or ()
    kwdefaults = init.__kwdefaults__ or {}
    first_default = positional - len(defaults)
    posonly = code.co_posonlyargcount
    parts = []
    for index in range(1, positional):  # self is bound
        if index == posonly > 1:  # after the positional-only ones but self
            parts.append("/")
        default = defaults[index - first_default] if index >= first_default else _MISSING
        parts.append(_parameter(names[index], annotations, default))
    if 1 < posonly == positional:
        parts.append("/")
    at = positional + kw_only
    if code.co_flags & _CO_VARARGS:
        parts.append("*" + _parameter(names[at], annotations, _MISSING))
        at += 1
    elif kw_only:
        parts.append("*")
    parts += [_parameter(name, annotations, kwdefaults.get(name, _MISSING))
              for name in names[positional:positional + kw_only]]
    if code.co_flags & _CO_VARKEYWORDS:
        parts.append("**" + _parameter(names[at], annotations, _MISSING))
    text = f"({', '.join(parts)})"
    if "return" in annotations:
        text += f" -> {_annotation(annotations['return'])}"
    return _Text(text)


def _plain_init(cls: Any) -> types.FunctionType | None:
    """``cls.__init__`` if inspect would take the class's signature from it
    and that function's own code alone (no wrapper, no signature set on it)."""
    if not isinstance(cls, type) or type(cls).__call__ is not type.__call__:
        return None
    init = cls.__dict__.get("__init__")
    if (type(init) is not types.FunctionType or cls.__new__ is not object.__new__
            or any("__new__" in base.__dict__ for base in cls.__mro__[:-1])):
        return None
    marks = ("__wrapped__", "__signature__", "_partialmethod")
    if any(hasattr(cls, mark) or hasattr(init, mark) for mark in marks):
        return None
    if getattr(init, "__text_signature__", None) or not isinstance(init.__annotations__, dict):
        return None
    return init


def _parameter(name: str, annotations: dict, default: object) -> str:
    text = name
    if name in annotations:
        text += f": {_annotation(annotations[name])}"
        if default is not _MISSING:
            text += f" = {default!r}"
    elif default is not _MISSING:
        text += f"={default!r}"
    return text


def _annotation(annotation: Any) -> str:
    """An annotation as ``inspect.formatannotation`` writes it."""
    if getattr(annotation, "__module__", None) == "typing":
        return re.sub(r"[\w\.]+", lambda match: match.group().removeprefix("typing."),
                      repr(annotation))
    if isinstance(annotation, types.GenericAlias):
        return str(annotation)
    if isinstance(annotation, type):
        if annotation.__module__ in ("builtins", None):
            return annotation.__qualname__
        return f"{annotation.__module__}.{annotation.__qualname__}"
    return repr(annotation)
