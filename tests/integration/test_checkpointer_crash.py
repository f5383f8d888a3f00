"""A checkpointer that crashes mid-snapshot answers before it goes.

Nothing is typed into a role while its task's checkpoint is being taken, so
a snapshot that never answered (the actor crashed, the supervisor started a
fresh one, the message was gone with the old) left that role's queue
waiting for good.  Now the crash answers as a failed checkpoint (the task
goes out unprotected, the log says why) and the restarted checkpointer
takes the next one.
"""

from __future__ import annotations

from pathlib import Path

from choragos.gitstore.checkpoints import CheckpointStore
from tests.conftest import Told, wait_until
from tests.integration.gitrepo import (  # noqa: F401 - the fixture is autouse
    init_repo,
    isolated_git,
    write,
)


def test_a_crash_mid_snapshot_answers_and_the_next_snapshot_is_taken(tmp_path: Path) -> None:
    from choragos.actors import messages as m
    from choragos.actors.checkpointer import CheckpointerActor
    from choragos.actors.supervisor import ChildSpec, StartChild, StopAll, Supervisor
    from choragos.board.events import EventLog, read_events

    repo = init_repo(tmp_path / "repo")
    events, core = EventLog(tmp_path / "events.jsonl"), Told()
    sup = Supervisor.start(on_event=events.write)
    store = CheckpointStore(repo, watch=True)
    taken = store.snapshot

    def crash_once(*args, **kwargs):
        store.snapshot = taken  # the restarted actor's snapshot works
        raise RuntimeError("a bug in the walk")

    store.snapshot = crash_once
    try:
        handle = sup.ask(StartChild(ChildSpec(
            "checkpointer", lambda h: CheckpointerActor.start(store, core, events, sup))))
        write(repo, "work.txt", "one\n")
        handle.tell(m.Snapshot("T1", "coder", "first"))
        handle.tell(m.Snapshot("T2", "coder", "second"))  # waits in the inbox meanwhile
        wait_until(lambda: len(core.told) == 2, 20, message="both snapshots answered")
    finally:
        sup.ask(StopAll())
        sup.stop()
        events.close()
    crashed, second = core.told
    assert (crashed.task_id, crashed.ref) == ("T1", None)
    assert crashed.error == ("the checkpointer crashed taking it (RuntimeError: a bug in the "
                             "walk); it is restarted")
    assert second.task_id == "T2" and second.ref.startswith("refs/choragos/checkpoints/")
    restarts = [e for e in read_events(tmp_path / "events.jsonl")
                if e["event"] == "actor restarted"]
    assert [(e["actor"], e["error"]) for e in restarts] == [
        ("checkpointer", "RuntimeError: a bug in the walk")]
