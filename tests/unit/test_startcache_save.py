"""The start's caches written when the start is made (``save``) and again
at their release only if something was compiled anew in between
(choragos/classcode.py, choragos/session/modulecode.py): what a thread
loads lazily just after the start is in the files for the next start, and
threads loading side by side with a save lose nothing and break nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

# A run: a module with a dataclass imported with the start, the caches
# saved (twice: the second writes nothing), then another module with a
# dataclass, on a thread (LATE), or with the start (EARLY); then released.
RUN = """
import json, os, sys, threading
from choragos import classcode
from choragos.session import modulecode

cpath, mpath, folder, when = sys.argv[1:]
classcode.install(cpath)
modulecode.install(mpath)
sys.path.insert(0, folder)

def files():
    return [os.stat(p).st_ino if os.path.exists(p) else None for p in (cpath, mpath)]

import early
if when == "early":
    import late
saved = [classcode.save(), modulecode.save()]
written = files()
again = [classcode.save(), modulecode.save()]
unchanged = files() == written
if when == "late":
    thread = threading.Thread(target=lambda: __import__("late"))
    thread.start()
    thread.join()
released = [classcode.release(), modulecode.release()]
print(json.dumps({"saved": saved, "again": again, "unchanged": unchanged,
                  "released": released, "rewritten": files() != written,
                  "late": repr(sys.modules["late"].Late(3))}))
"""

MODULE = '''
from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class {name}:
    {name}_alpha: int
    {name}_beta: str = "b"
'''


def _run(tmp: Path, when: str) -> dict:
    folder = tmp / "src"
    if not folder.exists():
        folder.mkdir()
        for name in ("early", "late"):
            (folder / f"{name}.py").write_text(MODULE.format(name=name.title()))
    out = subprocess.run([sys.executable, "-c", RUN, str(tmp / "dc.marshal"),
                          str(tmp / "mod.marshal"), str(folder), when],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_what_comes_after_the_save_is_written_at_the_release(tmp_path: Path) -> None:
    first = _run(tmp_path, "late")
    # The start's own: the early class's 10 methods (and the rest of
    # dataclasses' use here), its module; written once, not at a second save.
    assert first["saved"][0] >= 10 and first["saved"][1] == 1
    assert first["again"] == first["saved"] and first["unchanged"]
    # The late class's 10 methods and its module, compiled on a thread
    # after the save: counted, and the files written again.
    assert first["released"][0] == first["saved"][0] + 10
    assert first["released"][1] == 2 and first["rewritten"]
    assert first["late"] == "Late(Late_alpha=3, Late_beta='b')"
    # The next start loads it with the start: from the files.
    second = _run(tmp_path, "early")
    assert second["saved"] == [0, 0] and second["released"] == [0, 0]
    assert not second["rewritten"] and second["late"] == first["late"]


def test_nothing_compiled_after_the_save_writes_nothing_again(tmp_path: Path) -> None:
    first = _run(tmp_path, "early")
    assert first["saved"][0] >= 20 and first["saved"][1] == 2
    assert first["released"] == first["saved"] and not first["rewritten"]
    later = _run(tmp_path, "late")  # every module and method from the files
    assert later["released"] == [0, 0] and not later["rewritten"]


# Threads making classes and importing modules while the main thread saves
# the caches: once when each has done half its work, then again and again
# as they go on.
BUSY = """
import json, sys, threading
from dataclasses import make_dataclass
from choragos import classcode
from choragos.session import modulecode

cpath, mpath, folder = sys.argv[1:]
classcode.install(cpath)
modulecode.install(mpath)
sys.path.insert(0, folder)
saved = [classcode.save(), modulecode.save()]  # the start: nothing of it yet
halfway = threading.Barrier(5)
go_on = threading.Event()

def work(n):
    for i in range(50):
        if i == 25:
            halfway.wait()
            go_on.wait()
        make_dataclass(f"C{n}_{i}", [(f"f{n}_{i}_{j}", int) for j in range(3)], order=True)
        __import__(f"m{n}_{i}")

threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
for thread in threads:
    thread.start()
halfway.wait()
half = [classcode.save(), modulecode.save()]
go_on.set()
while any(thread.is_alive() for thread in threads):
    classcode.save()
    modulecode.save()
for thread in threads:
    thread.join()
print(json.dumps({"half": half, "released": [classcode.release(), modulecode.release()]}))
"""


def test_threads_loading_beside_the_saves_lose_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "src"
    folder.mkdir()
    for n in range(4):
        for i in range(50):
            (folder / f"m{n}_{i}.py").write_text(f"def f():\n    return {n * 50 + i}\n")
    runs = []
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", BUSY, str(tmp_path / "dc.marshal"),
                              str(tmp_path / "mod.marshal"), str(folder)],
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        runs.append(json.loads(out.stdout))
    # Half the classes' methods (__init__, __repr__, __eq__, 4 orders) and
    # modules when half were made, then all: each counted once, all kept,
    # the next run compiles none.
    assert runs[0]["half"][1] == 100 and runs[0]["half"][0] >= 100 * 7
    assert runs[0]["released"][1] == 200 and runs[0]["released"][0] >= 200 * 7
    assert runs[1]["half"] == [0, 0] and runs[1]["released"] == [0, 0]
