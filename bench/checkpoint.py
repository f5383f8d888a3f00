"""Checkpoint speed against git plumbing on a temporary index.

Builds two work trees in a temp dir -- 5,000 files / ~150 MB and 50,000
small files -- each a git repository with most files committed (and packed),
some untracked and some ignored, all dated an hour back.  Every round starts
from fresh copies, so git and choragos begin from identical repositories and
neither finds objects the other wrote.  Then, in the same run:

* first:        git ``add -A`` into a fresh temporary index + ``write-tree`` +
                ``commit-tree`` + ``update-ref``, against ``CheckpointStore.snapshot``
                with no private index -- "cold" where git's own index is stale
                (choragos hashes every file, as git does), and plain where it
                is fresh (choragos takes committed files' ids from it);
* incremental:  after editing 20 files, creating 10 and deleting 5, the same
                again with git's temporary index and our private index kept;
* unchanged:    once more with nothing changed.

choragos is timed in-process (the checkpointer is a long-lived actor, which
watches the tree it walks: an unchanged tree is then not walked again); the
"cli" column is a fresh CheckpointStore per snapshot, as ``choragos
rollback`` has, which always walks.  git's times include starting its four processes, which is
what the plumbing costs.  Medians and best samples are shown, as the machine
may be shared; ratios are choragos / git.  Prints one JSON line with the ratios.

Run: .venv/bin/python bench/checkpoint.py [--small] [--no-big] [--rounds N] [--first-rounds N]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import emit
from choragos.gitstore.checkpoints import CheckpointStore

AGE = 3600  # files are dated an hour back, as most of a real tree is
GIT_ENV = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid"}


def _text(rng: random.Random, size: int) -> bytes:
    line = b"def f_%d(x):\n    return x * %d + %d  # a line of source\n"
    out = bytearray()
    while len(out) < size:
        out += line % (rng.randrange(10**6), rng.randrange(1000), rng.randrange(1000))
    return bytes(out[:size])


def _write(root: Path, rel: str, data: bytes) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _git(root: Path, *args: str, env: dict[str, str] | None = None) -> str:
    full = {**os.environ, **GIT_ENV, **(env or {})}
    done = subprocess.run(["git", *args], cwd=root, env=full, check=True,
                          capture_output=True, text=True)
    return done.stdout.strip()


def build_tree(root: Path, files: int, big: int, small_size: int, seed: int) -> None:
    """``files`` text files of about ``small_size`` bytes, of which ``big`` are
    1.0-1.5 MB of random bytes instead; 80% committed, the rest untracked,
    plus ignored build output."""
    rng = random.Random(seed)
    root.mkdir(parents=True)
    _git(root, "init", "-q")
    # No background gc racing the copies below; history packed as in a real clone.
    _git(root, "config", "gc.auto", "0")
    _write(root, ".gitignore", b"build/\n*.o\n")
    names = [f"src/m{i % 50:02d}/p{(i // 50) % 20:02d}/f{i}.py" for i in range(files)]
    for i, name in enumerate(names):
        if i < big:
            data = os.urandom(rng.randrange(1 << 20, 3 << 19))
        else:
            data = _text(rng, rng.randrange(small_size // 2, small_size * 3 // 2))
        _write(root, name, data)
    for i in range(200):
        _write(root, f"build/out{i}.bin", _text(rng, 2000))
        _write(root, f"src/m{i % 50:02d}/obj{i}.o", b"\0" * 100)
    _age(root)
    committed = [n for i, n in enumerate(names) if i % 5]
    for start in range(0, len(committed), 2000):
        _git(root, "add", "--", *committed[start:start + 2000])
    _git(root, "add", ".gitignore")
    _git(root, "commit", "-q", "-m", "initial")
    _git(root, "repack", "-adq")
    _git(root, "prune-packed")


def _age(root: Path) -> None:
    then = time.time() - AGE
    for folder, dirs, names in os.walk(root):
        if ".git" in dirs:
            dirs.remove(".git")
        for name in names:
            os.utime(os.path.join(folder, name), (then, then), follow_symlinks=False)


def mutate(root: Path, rng: random.Random) -> None:
    """Edit 20 files, create 10, delete 5."""
    files = sorted(p for p in (root / "src").rglob("*.py"))
    for path in rng.sample(files, 20):
        with open(path, "ab") as f:
            f.write(b"# edited\n")
    for i in range(10):
        _write(root, f"src/new/n{rng.randrange(10**9)}_{i}.py", _text(rng, 3000))
    for path in rng.sample(files, 5):
        path.unlink(missing_ok=True)


def git_checkpoint(root: Path, index: Path, n: int) -> float:
    env = {"GIT_INDEX_FILE": str(index)}
    start = time.perf_counter()
    _git(root, "add", "-A", env=env)
    tree = _git(root, "write-tree", env=env)
    commit = _git(root, "commit-tree", tree, "-m", f"bench {n}", env=env)
    _git(root, "update-ref", f"refs/bench/git-{n}", commit)
    return time.perf_counter() - start


def ours(store: CheckpointStore, n: int) -> float:
    start = time.perf_counter()
    store.snapshot(f"T{n}", "bench", "benchmark")
    return time.perf_counter() - start


def ours_cli(root: Path, n: int) -> float:
    start = time.perf_counter()
    with CheckpointStore(root) as store:
        store.snapshot(f"C{n}", "bench", "benchmark")
    return time.perf_counter() - start


class Timings:
    """Samples per (run, tool).  The machine may be shared, and load only ever
    adds time, so both the median and the best sample are reported."""

    def __init__(self) -> None:
        self.samples: dict[tuple[str, str], list[float]] = {}
        self.stats: dict[str, str] = {}

    def add(self, run: str, tool: str, seconds: float) -> None:
        self.samples.setdefault((run, tool), []).append(seconds)

    def median(self, run: str, tool: str) -> float | None:
        found = self.samples.get((run, tool))
        return statistics.median(found) if found else None

    def best(self, run: str, tool: str) -> float | None:
        found = self.samples.get((run, tool))
        return min(found) if found else None


def fresh_copies(base: Path, names: tuple[str, ...]) -> list[Path]:
    copies = []
    for name in names:
        copy = base.with_name(f"{base.name}-{name}")
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(base, copy, symlinks=True)
        copies.append(copy)
    return copies


def first_runs(base: Path, timings: Timings, rounds: int) -> tuple[Path, Path, CheckpointStore]:
    """git vs choragos with no cache, on fresh copies each round."""
    for n in range(rounds):
        git_root, our_root, cold_root = fresh_copies(base, ("git", "ours", "cold"))
        # A copy has new inodes, so git's own index no longer matches the
        # files until refreshed -- as in a user's checkout.  The "cold" copy
        # stays unrefreshed: choragos must hash everything there, as git does.
        for copy in (git_root, our_root):
            _git(copy, "update-index", "-q", "--refresh")
        index = base.parent / f"{base.name}.index"
        index.unlink(missing_ok=True)
        timings.add("first", "git", git_checkpoint(git_root, index, n))
        with CheckpointStore(cold_root) as cold:
            timings.add("first, cold", "ours", ours(cold, n))
            timings.stats["first, cold"] = _stats(cold)
        store = long_lived(our_root)
        timings.add("first", "ours", ours(store, n))
        timings.stats["first"] = _stats(store)
    timings.samples[("first, cold", "git")] = timings.samples[("first", "git")]
    return git_root, our_root, store


def long_lived(root: Path) -> CheckpointStore:
    """A store as the session's checkpointer has it (watching, where it can;
    a version without watches, when the bench measures an older one)."""
    try:
        return CheckpointStore(root, watch=True)
    except TypeError:
        return CheckpointStore(root)


def run_case(base: Path, first_rounds: int, rounds: int) -> Timings:
    timings = Timings()
    git_root, our_root, store = first_runs(base, timings, first_rounds)
    index = base.parent / f"{base.name}.index"
    rng_git, rng_ours = random.Random(7), random.Random(7)
    for n in range(1, rounds + 1):
        mutate(git_root, rng_git)
        mutate(our_root, rng_ours)
        timings.add("incremental", "git", git_checkpoint(git_root, index, n))
        timings.add("incremental", "ours", ours(store, n))
        timings.stats["incremental"] = _stats(store)
        timings.add("unchanged", "git", git_checkpoint(git_root, index, 100 + n))
        timings.add("unchanged", "ours", ours(store, 100 + n))
        timings.stats["unchanged"] = _stats(store)
        timings.add("unchanged", "cli", ours_cli(our_root, n))
    store.close()
    return timings


def _stats(store: CheckpointStore) -> str:
    s = store.last_stats
    if s is not None and not getattr(s, "walked", True):
        return "not walked: the watch saw no change"
    return f"{s.hashed}/{s.seeded}/{s.listed}" if s else ""


def report(title: str, timings: Timings) -> dict[str, float]:
    ratios = {}
    for run in ("first, cold", "first", "incremental", "unchanged"):
        git_m, our_m = timings.median(run, "git"), timings.median(run, "ours")
        git_b, our_b = timings.best(run, "git"), timings.best(run, "ours")
        cli_s = timings.median(run, "cli")
        cli = f"{cli_s:7.3f}" if cli_s is not None else " " * 7
        count = len(timings.samples[(run, "ours")])
        print(f"{title:<20} {run:<12} {git_m:7.3f} {our_m:7.3f} {our_m / git_m:5.2f}   "
              f"{git_b:7.3f} {our_b:7.3f} {our_b / git_b:5.2f} {cli} {count:>3}  "
              f"{timings.stats.get(run, '')}")
        ratios[f"{title}, {run} (median)"] = our_m / git_m
        ratios[f"{title}, {run} (best)"] = our_b / git_b
    return ratios


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="a quick run on smaller trees")
    parser.add_argument("--first-rounds", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--keep", action="store_true", help="keep the temp dir")
    parser.add_argument("--no-big", action="store_true",
                        help="only the 50k-file tree (what make bench runs)")
    args = parser.parse_args()
    scale = 10 if args.small else 1
    tmp = Path(tempfile.mkdtemp(prefix="chg-bench-"))
    try:
        cases = [("5k files / ~150 MB", 5000 // scale, 100 // scale, 10_000),
                 ("50k files", 50_000 // scale, 0, 1000)][1 if args.no_big else 0:]
        results = []
        for i, (title, files, big, size) in enumerate(cases):
            base = tmp / f"tree{i}"
            started = time.perf_counter()
            build_tree(base, files, big, size, seed=i)
            print(f"built {title} in {time.perf_counter() - started:.1f}s", file=sys.stderr)
            results.append((title, run_case(base, args.first_rounds, args.rounds)))
        print(f"{'':<33} {'median':-^21}   {'best':-^21}")
        print(f"{'tree':<20} {'run':<12} {'git s':>7} {'ours s':>7} {'ratio':>5}   "
              f"{'git s':>7} {'ours s':>7} {'ratio':>5} {'cli s':>7} {'n':>3}  "
              "hashed/seeded/listed (last run)")
        ratios: dict[str, float] = {}
        for title, timings in results:
            ratios.update(report(title, timings))
        emit("checkpoint", {f"{k} ours/git": v for k, v in ratios.items()},
             rounds=args.rounds, first_rounds=args.first_rounds, small=args.small)
    finally:
        if args.keep:
            print(f"kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
