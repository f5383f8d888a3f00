"""The session core is an executor of policies, not one class over many
files: no class of the core is made of two or more of the project's
classes, none is over ~550 lines with the project's classes it is built
on, and no part of it reaches into another object's privates."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MOST_LINES = 550
# The core actor and its policies, with the port and the journal's side.
CORE = ("core", "coreport", "corejournal", "durable", "resume", "delegation", "delivery",
        "fresh", "timeouts", "workdone", "workcheck", "judging", "holds", "mergeflow",
        "isolationrestore", "guardrails", "budgetflow", "limitflow", "admission",
        "tokenusage", "rollbackcmd")


def classes() -> dict[str, tuple[str, int, list[str]]]:
    """Every class in actors/: name -> (file, lines, the names of its bases)."""
    found = {}
    for path in sorted((ROOT / "actors").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = [ast.unparse(base).rsplit(".", 1)[-1] for base in node.bases]
                found[node.name] = (path.stem, node.end_lineno - node.lineno + 1, bases)
    return found


def test_no_class_of_the_core_is_made_of_the_projects_classes_or_too_big():
    found = classes()
    assert {"CoreActor", "Guardrails", "Delivery"} <= set(found)  # the walk sees the core
    assert found["CoreActor"][2] == ["Actor"]
    too_many, too_big = [], []
    for name, (file, lines, bases) in found.items():
        if file not in CORE:
            continue
        ours = [base for base in bases if base in found]
        if len(ours) >= 2:
            too_many.append(f"{file}:{name}({', '.join(ours)})")
        total = lines + sum(found[base][1] for base in ours)
        if total > MOST_LINES:
            too_big.append(f"{file}:{name} {total} lines")
    assert (too_many, too_big) == ([], [])


def test_no_part_of_the_core_reaches_into_another_objects_privates():
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
