"""The session is wiring only: its class is built on none of the project's
classes and stays under ~550 lines; what it used to hold lives in parts of
their own (the child table, the crew, the roles' view, the reload actor)."""

from __future__ import annotations

import ast

from tests.unit.test_deck_parts import MOST_LINES, ROOT

PARTS = {"session.py": "Session", "crew.py": "Crew", "rolesview.py": "RolesView",
         "reload.py": "ReloadActor", "children.py": "Child", "gatewaygate.py": "GatewayGate"}


def project_classes() -> set[str]:
    return {node.name for path in (ROOT / "actors").glob("*.py")
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.ClassDef)}


def test_the_session_and_its_parts_are_small_and_made_of_no_project_class():
    ours = project_classes() - {"Actor"}  # every actor is a pykka actor through Actor
    for file, name in PARTS.items():
        tree = ast.parse((ROOT / "actors" / file).read_text(encoding="utf-8"))
        (node,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name]
        lines = node.end_lineno - node.lineno + 1
        assert lines <= MOST_LINES, f"{name}: {lines} lines"
        bases = [ast.unparse(base).rsplit(".", 1)[-1] for base in node.bases]
        assert [base for base in bases if base in ours] == [], name
