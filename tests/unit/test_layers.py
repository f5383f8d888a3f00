"""The layers import downward: the core knows no actor and no deck, the
actors know no deck, and the deck knows neither the command-line verbs nor
the git store (its domain reads go through commands or a core helper).
Inside the core, each sub-package imports only the shared modules at the
top of choragos/ and the sub-packages below it.  Every import counts, the
ones inside functions too."""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GIT_STORE = "choragos.gitstore"
# The git store's two reads the deck shares with the verbs: a task's diff, and
# its changed files as a cell.  The store itself (checkpoints, worktrees, the
# walk, objects) stays out of the deck.
GIT_READS = ("choragos.gitstore.taskdiff", "choragos.gitstore.changes")
# The core's sub-packages, bottom first: each may import the shared modules and
# the sub-packages before it here, never one after it (their __init__.py say so).
SUB_PACKAGES = ("terminal", "gitstore", "control", "agents", "config", "gateway", "board",
                "roles", "session", "web")
# What every sub-package may use: small modules that import no other of ours.
SHARED = ("classcode", "deferred", "durations", "fdwait", "inert", "mallocarenas", "namedfile",
          "onuse", "plural", "safeexec", "staticinspect", "statedir")
# The verbs, the demo and the remote seats sit above the core's sub-packages;
# the configuration reads the hosts' table only.
ABOVE = ("choragos.cli", "choragos.demo", "choragos.remote", "choragos.__main__")
ALLOWED_ABOVE = ("choragos.remote.hosts",)


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


def breaches(folder: str, forbidden: tuple[str, ...], skip: tuple[str, ...] = (),
             allowed: tuple[str, ...] = ()) -> list[str]:
    found = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if relative.startswith(skip):
            continue
        for line, module in imports(path):
            if module.startswith(forbidden) and not module.startswith(allowed):
                found.append(f"{relative}:{line} imports {module}")
    return found


@pytest.mark.parametrize(("folder", "forbidden", "skip", "allowed"), [
    # The core, its command-line verbs aside (serve starts the deck).
    ("choragos", ("choragos.actors", "choragos.ui", "actors", "ui"), ("choragos/cli/",), ()),
    ("actors", ("choragos.ui", "ui"), (), ()),
    ("ui", ("choragos.cli", GIT_STORE), (), GIT_READS),
], ids=["core", "actors", "ui"])
def test_layers_import_downward(folder: str, forbidden: tuple[str, ...],
                                skip: tuple[str, ...], allowed: tuple[str, ...]) -> None:
    assert breaches(folder, forbidden, skip, allowed) == []


def test_the_check_sees_a_lazy_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from choragos.ui.uiactor import start_ui\n")
    assert list(imports(module)) == [(2, "choragos.ui.uiactor"),
                                     (2, "choragos.ui.uiactor.start_ui")]


def sub_package_breaches(index: int) -> list[str]:
    """What sub-package ``index`` imports from a sub-package above it, or from above the core."""
    above = tuple(f"choragos.{name}" for name in SUB_PACKAGES[index + 1:]) + ABOVE
    return breaches(f"choragos/{SUB_PACKAGES[index]}", above, allowed=ALLOWED_ABOVE)


@pytest.mark.parametrize("index", range(len(SUB_PACKAGES)), ids=SUB_PACKAGES)
def test_sub_packages_import_downward(index: int) -> None:
    assert sub_package_breaches(index) == []


def test_shared_modules_import_no_sub_package() -> None:
    """A shared module may lean on another shared module, never on a sub-package."""
    shared = tuple(f"choragos.{name}" for name in SHARED)
    found = []
    for name in SHARED:
        path = ROOT / "choragos" / f"{name}.py"
        found += [f"{name}.py:{line} imports {module}" for line, module in imports(path)
                  if module.startswith("choragos.") and not module.startswith(shared)]
    assert found == []


def test_every_core_module_has_its_sub_package() -> None:
    """A new module goes in the sub-package of its concern (or, if every
    sub-package needs it and it imports nothing of ours but another shared
    module, into SHARED)."""
    loose = sorted(path.stem for path in (ROOT / "choragos").glob("*.py"))
    assert loose == sorted(["__init__", "__main__", *SHARED])
    packages = sorted(path.parent.name for path in (ROOT / "choragos").glob("*/__init__.py"))
    assert packages == sorted([*SUB_PACKAGES, "cli", "demo", "remote"])


@pytest.mark.parametrize("name", SUB_PACKAGES)
def test_each_sub_package_says_what_it_holds_and_may_import(name: str) -> None:
    tree = ast.parse((ROOT / "choragos" / name / "__init__.py").read_text(encoding="utf-8"))
    doc = ast.get_docstring(tree) or ""
    assert "Imports" in doc and len(tree.body) == 1  # the docstring, and no code


def test_the_rule_sees_an_import_from_a_sub_package_above(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    board = tmp_path / "choragos" / "board"
    board.mkdir(parents=True)
    (board / "m.py").write_text("from choragos.web.news import NewsHub\n"
                                "from choragos.remote.hosts import HostSpec\n"
                                "from choragos.gitstore import changes\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert sub_package_breaches(SUB_PACKAGES.index("board")) == [
        "choragos/board/m.py:1 imports choragos.web.news",
        "choragos/board/m.py:1 imports choragos.web.news.NewsHub"]
