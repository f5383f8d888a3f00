"""What a checkpoint could not read is not in it, so a rollback cannot bring
it back: the session's event log names it with the checkpoint, rather than
leaving it in statistics nobody reads.  A real core and a real checkpointer
on a real repository; only the unreadable file is faked (the tests run as
root, whom a 0o000 file does not stop)."""

from __future__ import annotations

import os
from pathlib import Path

import pykka
import pytest

from choragos.actors import messages as m
from choragos.actors.checkpointer import CheckpointerActor
from choragos.actors.core import CoreActor, CoreState, Seat
from choragos.actors.supervisor import ChildSpec, StartChild, StopAll, Supervisor
from choragos.board.events import EventLog, read_events
from choragos.config.model import Config, RoleSpec
from choragos.gitstore.checkpoints import CheckpointStore
from choragos.gitstore.objects import ObjectWriter
from tests.conftest import Told, wait_until
from tests.integration.gitrepo import (  # noqa: F401 - the fixture is autouse
    init_repo,
    isolated_git,
    write,
)


def test_the_checkpoint_event_names_what_could_not_be_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = init_repo(tmp_path / "repo")
    write(repo, "ok.txt", "fine\n")
    for n in range(25):
        write(repo, f"locked/{n:02}.txt", "no\n")
    real = ObjectWriter.put_file

    def refuse(self: ObjectWriter, path: bytes, *, write: bool = True) -> bytes:
        if b"/locked/" in path:
            raise PermissionError(13, "Permission denied", os.fsdecode(path))
        return real(self, path, write=write)

    monkeypatch.setattr(ObjectWriter, "put_file", refuse)
    config = Config(roles=(RoleSpec(name="orchestrator", command="x", start=True),
                           RoleSpec(name="coder", command="x")))
    log = tmp_path / "events.jsonl"
    events = EventLog(log)
    state = CoreState(config=config, workdir=repo, events=events)
    for name in ("orchestrator", "coder"):
        state.seats[name] = Seat(name, Told(), m.RoleView(name, "idle", ready=True))
    sup = Supervisor.start(on_event=events.write)
    store = CheckpointStore(repo, watch=True)
    try:
        core = sup.ask(StartChild(ChildSpec("core", lambda h: CoreActor.start(state, sup))))
        state.checkpointer = sup.ask(StartChild(ChildSpec(
            "checkpointer", lambda h: CheckpointerActor.start(store, core, events, sup))))
        ack = core.ask(m.Dispatch({"cmd": "delegate", "to": ["coder"], "task": "work",
                                   "brief": None}), timeout=5)
        assert ack["tasks"][0]["id"] == "T1", ack
        wait_until(lambda: [e for e in read_events(log) if e["event"] == "checkpoint"], 10,
                   message="the checkpoint event")
    finally:
        sup.ask(StopAll())
        sup.stop()
        events.close()
    (logged,) = [e for e in read_events(log) if e["event"] == "checkpoint"]
    assert logged["skipped"] == [f"locked/{n:02}.txt" for n in range(20)]
    assert logged["skipped_count"] == 25
    assert not [a for a in pykka.ActorRegistry.get_all() if a.is_alive()]
