"""Checkpoints past ``keep`` are pruned while the session runs, not only at
its start, and never the checkpoint of a task still at work."""

from __future__ import annotations

import subprocess
from pathlib import Path

from choragos.actors.checkpointer import PRUNE_EVERY
from choragos.gitstore.checkpoints import CheckpointStore
from tests.conftest import Told, wait_until
from tests.integration.gitrepo import (  # noqa: F401 - the fixture is autouse
    init_repo,
    isolated_git,
    write,
)
from tests.integration.harness import role_toml


def test_the_checkpointer_prunes_as_it_goes_and_keeps_what_is_at_work(tmp_path: Path) -> None:
    from choragos.actors import messages as m
    from choragos.actors.checkpointer import CheckpointerActor
    from choragos.actors.supervisor import ChildSpec, StartChild, StopAll, Supervisor
    from choragos.board.events import EventLog, read_events

    repo = init_repo(tmp_path / "repo")
    with CheckpointStore(repo) as store:
        held = store.snapshot("T1", "coder", "at work since the last run", now=1000.0).ref
    events, core = EventLog(tmp_path / "events.jsonl"), Told()
    sup = Supervisor.start(on_event=events.write)
    tasks = 2 * PRUNE_EVERY + 5
    try:
        store = CheckpointStore(repo, watch=True)
        handle = sup.ask(StartChild(ChildSpec(
            "checkpointer", lambda h: CheckpointerActor.start(store, core, events, sup))))
        assert handle.ask(m.Prune(2, frozenset({"T1"}))) == []
        for n in range(2, tasks + 2):
            write(repo, "work.txt", f"{n}\n")
            handle.ask(m.Snapshot(f"T{n}", "coder", "work", at_work=frozenset({"T1"})))
        wait_until(lambda: len(core.told) == tasks, 20, message="every checkpoint")
    finally:
        sup.ask(StopAll())
        sup.stop()
        events.close()
    with CheckpointStore(repo) as store:
        left = [c.ref for c in store.list()]
    taken = [done.ref for done in core.told]
    assert held in left
    assert taken[:-3:-1] == left[:2]  # the newest two, as keep says
    # Pruned every PRUNE_EVERY snapshots: never more than that past keep.
    assert len(left) <= 2 + PRUNE_EVERY
    pruned = [e for e in read_events(tmp_path / "events.jsonl")
              if e["event"] == "checkpoints pruned"]
    assert len(pruned) == tasks // PRUNE_EVERY


def _checkpoint_refs(workdir: Path) -> list[str]:
    out = subprocess.run(["git", "for-each-ref", "--format=%(refname)", "refs/choragos/"],
                         cwd=workdir, capture_output=True, text=True, check=True)
    return out.stdout.split()


def test_a_session_keeps_the_checkpoint_of_a_long_task_while_it_prunes(serve):
    team = (role_toml("lead", start=True) + role_toml("slow", "--worker", "--work", "60")
            + role_toml("quick", "--worker") + "[checkpoints]\nkeep = 2\n")
    s = serve(team)
    s.wait_booted(["slow", "quick"])
    out = s.cli("delegate", "--to", "slow", "--task", "the long one")
    assert out.returncode == 0, out.stderr
    long_task = out.stdout.split()[1]
    s.wait(lambda: s.board()[long_task].get("checkpoint"), 20, "the long task's checkpoint")
    held = s.board()[long_task]["checkpoint"]
    for n in range(PRUNE_EVERY + 2):
        out = s.cli("delegate", "--to", "quick", "--task", f"quick {n}")
        assert out.returncode == 0, out.stderr
        task = out.stdout.split()[1]
        s.wait(lambda t=task: s.board()[t]["state"] == "done", 20, f"{task} done")
    s.wait_event(lambda e: e["event"] == "checkpoints pruned", 20, "a prune while running")
    refs = _checkpoint_refs(s.workdir)
    assert held in refs
    assert len(refs) < PRUNE_EVERY + 3  # 13 taken


def test_a_snapshot_taken_at_a_report_goes_with_its_tasks_checkpoint(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    with CheckpointStore(repo) as store:
        for n in range(1, 4):
            write(repo, "work.txt", f"{n}\n")
            store.snapshot(f"T{n}", "coder", "work", now=1000.0 + 10 * n)
            write(repo, "work.txt", f"{n} done\n")
            store.snapshot(f"done-T{n}", "coder", "reported", now=1005.0 + 10 * n)
        removed = store.prune(2)  # the two newest tasks, each with its report's snapshot
        left = sorted(c.task_id for c in store.list())
    assert left == ["T2", "T3", "done-T2", "done-T3"]
    assert sorted(ref.rpartition("-")[2] for ref in removed) == ["T1", "T1"]
