"""dataclasses' methods compiled once and kept between runs (choragos/classcode.py)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

# A run: dataclasses made through the cache at ``path``, then used every way
# their generated methods are; prints what they did and what release said.
RUN = """
import dataclasses, inspect, json, sys
from choragos import classcode
classcode.install(sys.argv[1])

@dataclasses.dataclass(frozen=True)
class Point:
    x: int
    y: int = 2
    tags: tuple = ()

@dataclasses.dataclass(order=True)
class Box:
    size: float = dataclasses.field(default=1.5)
    name: str = "b"
EXTRA

p = Point(1)
try:
    p.x = 5
    frozen = False
except dataclasses.FrozenInstanceError:
    frozen = True
box = Box(3.0)
box.name = "c"
print(json.dumps({
    "released": classcode.release(), "repr": repr(p), "eq": p == Point(1, 2, ()),
    "hash": hash(p) == hash(Point(1)), "frozen": frozen, "order": Box(1.0) < box,
    "box": repr(box), "annotation": inspect.signature(Point.__init__).parameters["x"].annotation
    is int, "builtin_exec_again": not hasattr(dataclasses, "exec")}))
"""


def _run(path: Path, extra: str = "") -> dict:
    out = subprocess.run([sys.executable, "-c", RUN.replace("EXTRA", extra), str(path)],
                         capture_output=True, text=True, check=True, timeout=60)
    return json.loads(out.stdout)


SAME = {"repr": "Point(x=1, y=2, tags=())", "eq": True, "hash": True, "frozen": True,
        "order": True, "box": "Box(size=3.0, name='c')", "annotation": True,
        "builtin_exec_again": True}


def test_a_second_run_compiles_none_and_its_classes_behave_the_same(tmp_path: Path) -> None:
    path = tmp_path / "cache" / "dc.marshal"
    first = _run(path)
    assert first.pop("released") > 0  # a first run compiles, and writes the file
    assert first == SAME
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    second = _run(path)
    assert second.pop("released") == 0  # every method from the file
    assert second == SAME


def test_a_changed_class_is_compiled_and_the_file_keeps_what_other_runs_used(
        tmp_path: Path) -> None:
    """A start of another kind (headless, another team) makes classes this
    one does not: the file keeps them for the next start of that kind
    (it held what the last run used alone, and the two kinds took turns
    compiling)."""
    path = tmp_path / "dc.marshal"
    other = "\n@dataclasses.dataclass\nclass Other{n}:\n    a: int = 0\n    c: str = ''\n"
    _run(path, other.format(n=1) + other.format(n=2))
    with_other = path.stat().st_size
    changed = _run(path, "\n@dataclasses.dataclass\nclass New:\n    b: int = 0\n")
    assert changed.pop("released") > 0  # New's methods were not in the file
    assert changed == SAME
    assert path.stat().st_size > with_other  # New's added, Other's kept
    assert _run(path, "\n@dataclasses.dataclass\nclass New:\n    b: int = 0\n")[
        "released"] == 0
    again = _run(path, other.format(n=1) + other.format(n=2))
    assert again.pop("released") == 0 and again == SAME


def test_an_unreadable_or_foreign_file_is_not_used(tmp_path: Path) -> None:
    path = tmp_path / "dc.marshal"
    path.write_bytes(b"\x07\x00\x00\x00garbage" * 10)
    broken = _run(path)
    assert broken.pop("released") > 0 and broken == SAME  # compiled, and the file made again
    assert _run(path)["released"] == 0
    if os.getuid() == 0:
        os.chown(path, 12345, 12345)  # another user's file: its code is never run
        foreign = _run(path)
        assert foreign.pop("released") > 0 and foreign == SAME


def test_a_release_without_writing_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "dc.marshal"
    code = ("import dataclasses, sys\nfrom choragos import classcode\n"
            "classcode.install(sys.argv[1])\n"
            "@dataclasses.dataclass\nclass A:\n    a: int = 0\n"
            "print(classcode.release(write=False), hasattr(dataclasses, 'exec'))")
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                         text=True, check=True, timeout=60)
    assert out.stdout.split() == ["3", "False"]  # __init__, __repr__, __eq__: compiled
    assert not path.exists()


def test_without_install_release_says_so() -> None:
    code = "from choragos import classcode; print(classcode.release())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.strip() == "None"


def test_each_installation_has_a_file_of_its_own_and_the_shared_one_goes(
        tmp_path: Path) -> None:
    """Every checkout, bench and test on a machine shared one file, written
    by whichever last compiled something: another installation's start
    compiled its classes' methods again.  Writing an installation's own
    removes the shared one (of any interpreter) once no start has written
    it for a day, nothing else."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    from choragos import classcode

    mine = Path(classcode.cache_path(env) or "")
    assert mine.name.startswith(classcode.installation("dataclasses") + ".")
    assert classcode.installation("dataclasses") != "dataclasses"
    cache = mine.parent
    cache.mkdir(parents=True)
    shared = [cache / "dataclasses.cpython-311-a70d0d0a.marshal",
              cache / "dataclasses.cpython-312-cb0d0d0a.marshal"]
    others = [cache / "dataclasses-00c0ffee.cpython-311-a70d0d0a.marshal",
              cache / "modules.cpython-311-a70d0d0a.marshal", cache / "notes"]
    # An older version wrote this one an hour ago: still in use here, kept.
    recent = cache / "dataclasses.cpython-310-6f0d0d0a.marshal"
    for path in [*shared, *others, recent]:
        path.write_bytes(b"x")
    day_ago = time.time() - classcode.SHARED_IDLE - 60
    for path in [*shared, *others]:
        os.utime(path, (day_ago, day_ago))
    os.utime(recent, (time.time() - 3600,) * 2)
    assert _run(mine)["released"] > 0
    assert sorted(cache.iterdir()) == sorted([*others, recent, mine])


def test_an_installation_unused_for_a_month_leaves_no_file_behind(tmp_path: Path) -> None:
    """Each checkout or virtual environment has a file of its own, and one
    deleted long ago would keep it forever: writing an installation's file
    removes another's that no start has read or written for a month (a
    warm start only reads it), and nothing else."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    from choragos import classcode

    mine = Path(classcode.cache_path(env) or "")
    cache = mine.parent
    cache.mkdir(parents=True)
    month = time.time() - classcode.STALE_IDLE
    gone = cache / "dataclasses-0dead0ff.cpython-311-a70d0d0a.marshal"
    kept = {cache / "dataclasses-0a11ed0f.cpython-311-a70d0d0a.marshal": (month + 3600,) * 2,
            cache / "dataclasses-0bead0ff.cpython-311-a70d0d0a.marshal": (time.time(), month - 60),
            cache / "modules-0dead0ff.cpython-311-a70d0d0a.marshal": (month - 60,) * 2,
            cache / "dataclasses-notours.marshal": (month - 60,) * 2}
    for path, times in [(gone, (month - 60,) * 2), *kept.items()]:
        path.write_bytes(b"x")
        os.utime(path, times)
    assert _run(mine)["released"] > 0
    assert sorted(cache.iterdir()) == sorted([*kept, mine])
