"""The session is wiring only: its class is built on none of the project's
classes and stays under ~550 lines; what it used to hold lives in parts of
their own (the child table, the crew, the roles' view, the reload actor)."""

from __future__ import annotations

from tests.unit.test_deck_parts import MOST_LINES, ROOT, classes

PARTS = {"Session": "session.py", "Crew": "crew.py", "RolesView": "rolesview.py",
         "ReloadActor": "reload.py", "Child": "children.py", "GatewayGate": "gatewaygate.py"}


def test_the_session_and_its_parts_are_small_and_made_of_no_project_class():
    found = classes(ROOT / "actors")
    for name, file in PARTS.items():
        where, lines, bases = found[name]
        assert where == file
        assert lines <= MOST_LINES, f"{name}: {lines} lines"
        assert [base for base in bases if base in found and base != "Actor"] == [], name
