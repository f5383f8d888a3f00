"""Threads with a duty crash loudly: in a running session, a stray thread's
death and a journal callback that fails are logged and reported as events,
and the journal's fsync thread goes on acknowledging."""

from __future__ import annotations

import threading

import pytest

from choragos.actors import messages as m
from choragos.actors.handle import Handle
from choragos.actors.session import Session, SessionOptions
from choragos.board.events import default_path, read_events
from choragos.config.model import load_config
from choragos.control import wire
from tests.conftest import wait_until
from tests.integration.harness import git_init, role_toml


@pytest.fixture
def session(short_tmp):
    work = short_tmp / "work"
    work.mkdir()
    git_init(work)
    (work / ".choragos.toml").write_text(role_toml("orchestrator", start=True))
    started = Session(load_config(None, work),
                      SessionOptions(workdir=work, socket=short_tmp / "run" / "s.sock"))
    before = threading.excepthook
    started.start()
    try:
        yield started
    finally:
        started.stop()
    assert threading.excepthook is before  # the session put the hook back


def events(session: Session, name: str) -> list[dict]:
    return [e for e in read_events(default_path(session.workdir)) if e["event"] == name]


@pytest.mark.timeout(60)
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_stray_thread_death_is_logged_and_reported_to_the_top_of_the_tree(session, caplog):
    def duty() -> None:
        raise RuntimeError("the pump lost its socket")

    stray = threading.Thread(target=duty, name="attach-pump")
    stray.start()
    stray.join()
    died = wait_until(lambda: events(session, "thread died"), 10,
                      message="a thread died event")[0]
    assert died["thread"] == "attach-pump" and died["supervisor"] == "session"
    assert died["error"] == "RuntimeError: the pump lost its socket"
    assert "thread attach-pump died" in caplog.text


@pytest.mark.timeout(60)
def test_a_failed_journal_callback_is_an_event_and_acks_go_on(session):
    removed = Handle("coder")
    removed.close("removed by a reload")
    journal = session.journal
    called = threading.Event()

    def type_line() -> None:
        called.set()
        removed.tell("type this")

    journal.append("alive")
    journal.after_sync(type_line)
    assert called.wait(5)
    journal.append("alive")  # a later ack's records
    assert journal.wait_synced(timeout=5) == ""
    failed = wait_until(lambda: events(session, "journal callback failed"), 10,
                        message="a journal callback failed event")[0]
    assert "ActorGone" in failed["error"]
    ping = m.Dispatch(wire.parse_request(b'{"cmd": "ping"}'))
    assert session.core.ask(ping, timeout=5)["status"] == "ok"
