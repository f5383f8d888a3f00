"""The deck is made of parts, not of mixins: no class in ui/ is composed
of two or more of the project's classes, and none is over ~550 lines with
the project's classes it is built on."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MOST_LINES = 550


def classes(folder: Path) -> dict[str, tuple[str, int, list[str]]]:
    """Class name -> (file, lines, the names of its bases)."""
    found = {}
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = [ast.unparse(base).rsplit(".", 1)[-1] for base in node.bases]
                found[node.name] = (path.name, node.end_lineno - node.lineno + 1, bases)
    return found


def test_no_class_of_the_deck_is_made_of_the_projects_classes_or_too_big():
    found = classes(ROOT / "ui")
    assert "Deck" in found and "PtyScreen" in found  # the walk sees the deck
    too_many, too_big = [], []
    for name, (file, lines, bases) in found.items():
        ours = [base for base in bases if base in found]
        if len(ours) >= 2:
            too_many.append(f"{file}:{name}({', '.join(ours)})")
        total = lines + sum(found[base][1] for base in ours)
        if total > MOST_LINES:
            too_big.append(f"{file}:{name} {total} lines")
    assert (too_many, too_big) == ([], [])
