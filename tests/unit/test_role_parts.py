"""The role actor is made of parts: neither it nor its parts (the typist,
the watch, the screen reads, the host, the PTY traffic) is built on two or
more of the project's classes, and none is over ~550 lines with the
project's classes it is built on (the actors' base class counted)."""

from __future__ import annotations

from tests.unit.test_deck_parts import MOST_LINES, ROOT, classes

PARTS = ("role.py", "typist.py", "rolewatch.py", "rolescreen.py", "rolehost.py", "roleio.py")


def test_no_class_of_the_role_is_made_of_the_projects_classes_or_too_big():
    found = classes(ROOT / "actors")
    assert {"RoleActor", "Typist", "Watch"} <= found.keys()  # the walk sees the parts
    too_many, too_big = [], []
    for name, (file, lines, bases) in found.items():
        if file not in PARTS:
            continue
        ours = [base for base in bases if base in found]
        if len(ours) >= 2:
            too_many.append(f"{file}:{name}({', '.join(ours)})")
        total = lines + sum(found[base][1] for base in ours)
        if total > MOST_LINES:
            too_big.append(f"{file}:{name} {total} lines")
    assert (too_many, too_big) == ([], [])
