"""docs/architecture.md's message table stays true: every message an actor
handles (a ``handle.register`` handler in actors/ or ui/) is named in it."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def handled_messages() -> dict[str, str]:
    """Message type name -> the handler that takes it, as ``path:Class.method``."""
    found = {}
    for path in sorted([*(ROOT / "actors").glob("*.py"), *(ROOT / "ui").glob("*.py")]):
        for cls in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(cls, ast.ClassDef):
                continue
            for fn in cls.body:
                if isinstance(fn, ast.FunctionDef) and any(
                        _registers(d) for d in fn.decorator_list):
                    name = ast.unparse(fn.args.args[1].annotation).rsplit(".", 1)[-1]
                    found[name] = f"{path.relative_to(ROOT)}:{cls.name}.{fn.name}"
    return found


def _registers(decorator: ast.expr) -> bool:
    """``@handle.register`` or ``@handle.register(Message)``."""
    if isinstance(decorator, ast.Call):
        decorator = decorator.func
    return ast.unparse(decorator).endswith("handle.register")


def test_every_handled_message_is_in_the_architecture_table():
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    table = text[text.index("### Who sends what to whom"):text.index("### Tell upward")]
    handled = handled_messages()
    assert "Dispatch" in handled and "RoleReported" in handled  # the walk finds them
    assert [f"{name} ({where})" for name, where in handled.items()
            if f"`{name}" not in table] == []
