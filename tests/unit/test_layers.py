"""The layers import downward: the core knows no actor and no deck, the
actors know no deck, and the deck knows neither the command-line verbs nor
the git store (its domain reads go through commands or a core helper).
Every import counts, the ones inside functions too."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GIT_MODULES = tuple(f"choragos.{name}" for name in (
    "checkpoints", "checkpointtrees", "gitobjects", "gitwalk", "worktrees"))


def imports(path: Path) -> Iterator[tuple[int, str]]:
    """(line, module) for every import in ``path``, absolute names as written."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module
            for alias in node.names:  # `from choragos import ui`
                yield node.lineno, f"{node.module}.{alias.name}"


def breaches(folder: str, forbidden: tuple[str, ...], skip: tuple[str, ...] = ()) -> list[str]:
    found = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if relative.startswith(skip):
            continue
        for line, module in imports(path):
            if module.startswith(forbidden):
                found.append(f"{relative}:{line} imports {module}")
    return found


@pytest.mark.parametrize(("folder", "forbidden", "skip"), [
    # The core, its command-line verbs aside (serve starts the deck).
    ("choragos", ("choragos.actors", "choragos.ui", "actors", "ui"), ("choragos/cli/",)),
    ("actors", ("choragos.ui", "ui"), ()),
    ("ui", ("choragos.cli", *GIT_MODULES), ()),
], ids=["core", "actors", "ui"])
def test_layers_import_downward(folder: str, forbidden: tuple[str, ...],
                                skip: tuple[str, ...]) -> None:
    assert breaches(folder, forbidden, skip) == []


def test_the_check_sees_a_lazy_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from choragos.ui.uiactor import start_ui\n")
    assert list(imports(module)) == [(2, "choragos.ui.uiactor"),
                                     (2, "choragos.ui.uiactor.start_ui")]
