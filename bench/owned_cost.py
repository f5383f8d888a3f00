"""What a team with owned files pays per task in the journal, and on the way
from ``delegate`` to ``delivered``.

A real ``choragos serve --headless`` (checkpoints on, the journal never
compacted) with a fixture worker that runs ``work-done`` and a role owning
``--owned`` files; ``--tasks`` tasks are delegated one at a time, each
waited for until done.  Prints the journal's records and bytes per task
(its records about tasks, and all of them), and the median time from the
``delegate`` event to the ``delivered`` event.  Written to compare two
checkouts (run each checkout's copy, in turn): it has no reference of its
own, so its ratios are empty.

    .venv/bin/python bench/owned_cost.py [--tasks N] [--owned N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.common import emit, scratch  # noqa: E402
from tests.integration.harness import Serve, role_toml  # noqa: E402


def measure(root: Path, tasks: int, owned: int) -> dict:
    work = root / "work"
    work.mkdir()
    files = [f"owned/file{n}.md" for n in range(owned)]
    for name in files:  # there, so each fingerprint is a digest (an absent file's is null)
        (work / name).parent.mkdir(exist_ok=True)
        (work / name).write_text(f"{name}\n")
    config = (role_toml("lead", start=True) + role_toml("coder", "--worker", "--edit")
              + role_toml("keeper", owns_files=files))
    serve = Serve(work, config, sock=root / "s.sock")
    serve.env["CHORAGOS_JOURNAL_COMPACT"] = str(10**9)
    serve.start()
    try:
        serve.wait_booted(["lead", "coder"], timeout=60)
        log = work / ".choragos" / "state" / "journal.log"
        before = _records(log)
        for n in range(1, tasks + 1):
            serve.cli("delegate", "--to", "coder", "--task", f"job {n}\nwrite out/{n}.txt {n}")
            serve.wait(lambda n=n: sum(e["event"] == "work-done" for e in serve.events())
                       >= n and serve.board()[f"T{n}"]["state"] == "done", 60, "done")
        after = _records(log)
        events = serve.events()
    finally:
        serve.stop()
    created = {e["task"]: e["t"] for e in events if e["event"] == "delegate"}
    waits = [e["t"] - created[e["task"]] for e in events if e["event"] == "delivered"]
    grown = after[len(before):]
    about = [size for kind, size in grown if kind == "task"]
    return {"tasks": tasks, "owned": owned,
            "task_records_per_task": round(len(about) / tasks, 2),
            "task_bytes_per_task": round(sum(about) / tasks),
            "records_per_task": round(len(grown) / tasks, 2),
            "bytes_per_task": round(sum(size for _, size in grown) / tasks),
            "delivered_ms_median": round(statistics.median(waits) * 1000, 1),
            "load": round(os.getloadavg()[0], 1)}


def _records(log: Path) -> list[tuple[str, int]]:
    """Each record's kind and its framed size, in order."""
    lines = log.read_bytes().split(b"\n")[:-1]
    return [(json.loads(line[18:])["kind"], len(line) + 1) for line in lines]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--owned", type=int, default=2, help="files the keeper owns")
    args = parser.parse_args()
    with scratch("chg-owned-") as root:
        figures = measure(root, args.tasks, args.owned)
    print(figures, flush=True)
    emit("owned_cost", {}, **figures)


if __name__ == "__main__":
    main()
