"""Message handlers are registered by the class they name.

``singledispatch``'s ``register`` without a class reads the handler's
annotations with ``typing.get_type_hints``, which compiles and evaluates
each annotation's text (under ``from __future__ import annotations`` every
one is text): 92 of them in the modules the server loads before its first
frame, about 2 ms of its start.  Every handler names its class in the
decorator instead, the same class its annotation names.

And an actor finds a message's handler without reading ``self.handle``,
which on Python 3.11 makes a new wrapper (``functools.update_wrapper``) for
every message it handles."""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from pathlib import Path

from choragos.actors.base import Actor, Crashed
from tests.unit.test_server_imports import SERVER
from tests.unit.test_supervision import Add, Boom, Counter, CounterActor, NamedCounter, Total

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("choragos", "actors", "ui")

COUNT_HINTS = """
import typing
asked = []
real = typing.get_type_hints
def counting(obj, *args, **kwargs):
    asked.append(getattr(obj, "__qualname__", repr(obj)))
    return real(obj, *args, **kwargs)
typing.get_type_hints = counting
"""


def _registrations() -> list[tuple[str, str, str | None]]:
    """(where, the annotation's text, the class the decorator names) for every
    ``@x.register`` handler of the three packages."""
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            source = path.read_text()
            tree = ast.parse(source)
            for node in ast.walk(tree):
                if not isinstance(node, ast.ClassDef | ast.Module):
                    continue
                in_class = isinstance(node, ast.ClassDef)
                for item in node.body:
                    if isinstance(item, ast.FunctionDef):
                        found.extend(_handler(path, source, item, in_class))
    return found


def _handler(path: Path, source: str, func: ast.FunctionDef,
             in_class: bool) -> list[tuple[str, str, str | None]]:
    out = []
    for decorator in func.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if not (isinstance(target, ast.Attribute) and target.attr == "register"):
            continue
        params = func.args.posonlyargs + func.args.args
        annotation = params[1 if in_class else 0].annotation
        named = (ast.get_source_segment(source, decorator.args[0])
                 if isinstance(decorator, ast.Call) and decorator.args else None)
        where = f"{path.relative_to(ROOT)}:{func.lineno} {func.name}"
        out.append((where, ast.get_source_segment(source, annotation), named))
    return out


def test_every_handler_names_the_class_its_annotation_names() -> None:
    found = _registrations()
    assert len(found) > 100  # the scan finds the actors', the deck's and the web view's
    assert [(where, text, named) for where, text, named in found if named != text] == []


def test_the_server_s_imports_read_no_handler_s_annotations() -> None:
    code = COUNT_HINTS + SERVER.replace("print(json.dumps(sorted(sys.modules)))",
                                        "print(json.dumps(asked))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60, cwd=ROOT)
    assert out.stdout.strip() == "[]"  # 92 handlers' annotations read before


def test_an_actor_handles_its_messages_without_making_a_wrapper_for_each(monkeypatch) -> None:
    made = []
    real = functools.update_wrapper

    def counting(wrapper, wrapped, *args, **kwargs):
        made.append(getattr(wrapped, "__qualname__", "?"))
        return real(wrapper, wrapped, *args, **kwargs)

    state = Counter()
    ref = NamedCounter.start("named", state, None)  # a subclass that inherits its handlers
    try:
        monkeypatch.setattr(functools, "update_wrapper", counting)
        for n in range(50):
            ref.tell(Add(n))
        total = ref.ask(Total(), timeout=10)
        crashed = ref.ask(Boom(ValueError), timeout=10)  # a crash still reaches the caller
    finally:
        monkeypatch.undo()
        if ref.is_alive():
            ref.stop()
    assert total == sum(range(50))
    assert crashed == Crashed("ValueError: boom")
    assert made == []  # before, one for each message
    assert state.seen == list(range(50))


def test_a_message_with_no_handler_is_refused_as_before() -> None:
    ref = CounterActor.start(Counter(), None)
    try:
        assert ref.ask("what", timeout=10) == Crashed("TypeError: counter cannot handle str")
    finally:
        if ref.is_alive():
            ref.stop()


def test_an_actor_whose_handle_is_a_plain_method_still_gets_its_messages() -> None:
    class Plain(Actor):
        def handle(self, message):
            return ("plain", message)

    ref = Plain.start("plain")
    try:
        assert ref.ask(3, timeout=10) == ("plain", 3)
    finally:
        ref.stop()
