"""The session's threading.excepthook: a thread's death is logged, reported,
and still reaches a hook someone set before (a test runner's)."""

from __future__ import annotations

import threading

from choragos.actors import threadhook


def test_a_thread_death_is_reported_and_passed_on_then_the_hook_is_put_back(
        monkeypatch, caplog):
    earlier: list[str] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: earlier.append(args.thread.name))
    before = threading.excepthook
    reported: list[threadhook.ThreadDied] = []
    uninstall = threadhook.install(reported.append)

    def duty() -> None:
        raise ValueError("lost")

    worker = threading.Thread(target=duty, name="pump")
    worker.start()
    worker.join()
    uninstall()
    assert reported == [threadhook.ThreadDied("pump", "ValueError: lost")]
    assert earlier == ["pump"]
    assert "thread pump died" in caplog.text and "ValueError: lost" in caplog.text
    assert threading.excepthook is before


def test_a_report_that_fails_is_logged_and_the_thread_exit_is_quiet(monkeypatch, caplog):
    monkeypatch.setattr(threading, "excepthook", threading.__excepthook__)

    def broken(died: threadhook.ThreadDied) -> None:
        raise RuntimeError("the tree is down")

    uninstall = threadhook.install(broken)
    try:
        worker = threading.Thread(target=lambda: 1 / 0, name="reader")
        worker.start()
        worker.join()
    finally:
        uninstall()
    assert "reporting the death of thread reader failed" in caplog.text
