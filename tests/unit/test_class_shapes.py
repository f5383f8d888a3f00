"""Classes in actors/ and ui/ are parts, not one object spread over files:
none is composed of two or more of the project's classes, none is over ~550
lines counting the project's classes it is built on (the actors' base class
included), and the core's policies reach into no other object's privates."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MOST_LINES = 550
# The core actor and its policies, with the port and the journal's side.
CORE = ("core", "coreport", "corejournal", "durable", "resume", "delegation", "delivery",
        "fresh", "timeouts", "workdone", "workcheck", "judging", "holds", "mergeflow",
        "isolationrestore", "guardrails", "budgetflow", "limitflow", "admission",
        "tokenusage", "rollbackcmd", "roleexits", "reloadcmd")


def classes(folder: Path) -> dict[str, list[tuple[str, int, list[str]]]]:
    """Class name -> every definition: (file, lines, the names of its bases)."""
    found: dict[str, list[tuple[str, int, list[str]]]] = {}
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = [ast.unparse(base).rsplit(".", 1)[-1] for base in node.bases]
                found.setdefault(node.name, []).append(
                    (path.name, node.end_lineno - node.lineno + 1, bases))
    return found


def misshapen(found: dict[str, list[tuple[str, int, list[str]]]]) -> list[str]:
    """Each class built on two or more project classes, or too big with them."""
    wrong = []
    for name, definitions in found.items():
        for file, lines, bases in definitions:
            ours = [base for base in bases if base in found and base != name]
            if len(ours) >= 2:
                wrong.append(f"{file}:{name}({', '.join(ours)})")
            total = lines + sum(max(d[1] for d in found[base]) for base in ours)
            if total > MOST_LINES:
                wrong.append(f"{file}:{name} {total} lines")
    return wrong


@pytest.mark.parametrize(("folder", "seen"), [
    ("actors", {"CoreActor", "RoleActor", "Session", "Guardrails", "Typist", "Crew"}),
    ("ui", {"Deck", "Renderer", "InputRouter", "AttachServer", "PtyScreen"}),
])
def test_no_class_is_made_of_the_projects_classes_or_too_big(folder: str, seen: set) -> None:
    found = classes(ROOT / folder)
    assert seen <= found.keys()  # the walk sees the parts
    assert misshapen(found) == []


def test_the_check_catches_a_class_of_mixins_and_a_big_one() -> None:
    found = {"A": [("a.py", 10, [])], "B": [("b.py", 545, [])],
             "C": [("c.py", 20, ["A", "B"])], "D": [("d.py", 20, ["B"])]}
    assert misshapen(found) == ["c.py:C(A, B)", "c.py:C 575 lines", "d.py:D 565 lines"]


def test_no_part_of_the_core_reaches_into_another_objects_privates() -> None:
    """``x._name`` only on ``self`` (or a module's own private names)."""
    reaches = []
    for stem in CORE:
        path = ROOT / "actors" / f"{stem}.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                    and not node.attr.startswith("__")
                    and not (isinstance(node.value, ast.Name) and node.value.id == "self")):
                reaches.append(f"{stem}.py:{node.lineno} {ast.unparse(node)}")
    assert reaches == []
