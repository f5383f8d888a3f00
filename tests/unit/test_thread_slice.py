"""A thread's slice where the system cannot give one: every call says so
and nothing is raised; a kernel that refuses is said once in the log."""

from __future__ import annotations

import ctypes
import logging

from choragos.terminal import timeslice


def test_without_the_calls_nothing_changes_and_nothing_raises(monkeypatch):
    monkeypatch.setattr(timeslice, "_sched_call", False)
    assert timeslice.short_slice() is False
    assert timeslice.default_slice() is False
    assert timeslice.slice_of() is None


def test_a_refusing_kernel_is_logged_once(monkeypatch, caplog):
    def refuse(*_args: object) -> int:
        ctypes.set_errno(1)
        return -1

    monkeypatch.setattr(timeslice, "_sched_call", (refuse, (315, 314)))
    monkeypatch.setattr(timeslice, "_slice_told", False)
    with caplog.at_level(logging.DEBUG, logger="choragos"):
        assert timeslice.short_slice() is False
        assert timeslice.short_slice(1234) is False
    said = [r for r in caplog.records if "sched_setattr" in r.getMessage()]
    assert len(said) == 1 and "errno 1" in said[0].getMessage()
