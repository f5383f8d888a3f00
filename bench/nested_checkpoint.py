"""What a nested repository costs a checkpoint and a rollback's plan.

Builds a repository of ``--files`` small files holding one nested
repository (made with git, everything committed, dated an hour back) of
``--nested-files``, and times, in-process:

* snapshot:   a long-lived, watching store (the session's checkpointer)
              after 5 files of the main tree changed;
* unchanged:  the same store once more with nothing changed;
* plan:       a fresh store's ``plan_rollback`` (``choragos rollback`` in a
              shell), which always walks.

``--nested-changed N`` (measures something new: the nested repository's
files kept by each checkpoint and put back by a rollback): N files of the
nested repository are edited, uncommitted, before the first checkpoint and
again in each round, so each snapshot keeps N new blobs there and each
plan restores N files in it.

Run it with this tree on the path, and again with an older checkout on
``PYTHONPATH`` to compare (pairs, alternating); a version that does not
survey nested repositories measures what the survey adds.  Medians of
``--rounds``.

Run: .venv/bin/python bench/nested_checkpoint.py [--files N] [--nested-files N] [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import emit
from choragos.gitstore.checkpoints import CheckpointStore

AGE = 3600
GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@example.invalid",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "b@example.invalid"}


def _fill(root: Path, count: int, tag: str) -> None:
    for i in range(count):
        path = root / f"d{i // 100:03}" / f"{tag}{i:05}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{tag} file {i}\n" * 20)


def _commit(root: Path) -> None:
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "c"]):
        subprocess.run(["git", *args], cwd=root, check=True, env=GIT_ENV, capture_output=True)


def build(root: Path, files: int, nested_files: int) -> None:
    root.mkdir()
    _fill(root, files, "m")
    if nested_files:
        nested = root / "lib"
        nested.mkdir()
        _fill(nested, nested_files, "n")
        _commit(nested)
    _commit(root)
    then = time.time() - AGE
    for folder, dirs, names in os.walk(root):
        for name in names + dirs:
            os.utime(os.path.join(folder, name), (then, then), follow_symlinks=False)
    # Both repositories' indexes again, so their stat data matches the dates.
    for repo in (root / "lib", root):
        if (repo / ".git").exists():
            subprocess.run(["git", "update-index", "-q", "--really-refresh"], cwd=repo,
                           env=GIT_ENV, capture_output=True)


def _edit_nested(root: Path, count: int, round_: int) -> None:
    """``count`` files of the nested repository, one a directory, edited."""
    for i in range(count):
        (root / "lib" / f"d{i % 50:03}" / f"n{i * 100 % 5000:05}.txt").write_text(
            f"edited in round {round_}\n")


def timed(call: Callable[..., object], *args: object) -> float:
    started = time.perf_counter()
    call(*args)
    return time.perf_counter() - started


def run(root: Path, rounds: int, nested_changed: int = 0) -> dict[str, float]:
    samples: dict[str, list[float]] = {"snapshot": [], "unchanged": [], "plan": []}
    _edit_nested(root, nested_changed, 0)
    store = CheckpointStore(root, watch=True)
    store.snapshot("T0", "coder", "first")
    for n in range(1, rounds + 1):
        for i in range(5):
            (root / "d000" / f"m{i:05}.txt").write_text(f"round {n}\n")
        _edit_nested(root, nested_changed, n)
        samples["snapshot"].append(timed(store.snapshot, f"T{n}", "coder", "b"))
        samples["unchanged"].append(timed(store.snapshot, f"U{n}", "coder", "b"))
        with CheckpointStore(root) as fresh:
            samples["plan"].append(timed(fresh.plan_rollback, "T0"))
    store.close()
    return {key: statistics.median(values) for key, values in samples.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--nested-files", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--nested-changed", type=int, default=0,
                        help="nested files edited before the first checkpoint and each round")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="chg-nested-bench-"))
    try:
        build(tmp / "repo", args.files, args.nested_files)
        medians = run(tmp / "repo", args.rounds, args.nested_changed)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for key, value in medians.items():
        print(f"{key:<10} {value * 1000:8.1f} ms")
    emit("nested_checkpoint", {}, files=args.files, nested_files=args.nested_files,
         rounds=args.rounds, nested_changed=args.nested_changed,
         **{f"{k}_ms": round(v * 1000, 1) for k, v in medians.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
