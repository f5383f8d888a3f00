"""A thread's slice where the system cannot give one: every call says so
and nothing is raised; a kernel that refuses is said once in the log, and
asked no more."""

from __future__ import annotations

import ctypes
import errno
import logging

import pytest

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


class _Kernel:
    """A stand-in for libc's ``syscall`` that counts its calls and answers
    ``refusal`` (an errno) to the call numbered in ``refused`` (sched_getattr
    315, sched_setattr 314) for the threads in ``on`` (all when None)."""

    def __init__(self, refusal: int, refused: int, on: set[int] | None = None) -> None:
        self.calls = 0
        self.refusal, self.refused, self.on = refusal, refused, on

    def __call__(self, number: int, tid: int, *_rest: object) -> int:
        self.calls += 1
        if number == self.refused and (self.on is None or tid in self.on):
            ctypes.set_errno(self.refusal)
            return -1
        return 0  # the struct left as zeros: SCHED_OTHER, a fair thread


@pytest.mark.parametrize(("refusal", "refused"), [
    (errno.ENOSYS, 315), (errno.EPERM, 315), (errno.EPERM, 314),
    # A kernel before EEVDF's slices, which reads the struct but refuses a
    # runtime for a fair thread.
    (errno.EINVAL, 314)])
def test_a_refusal_of_the_system_is_asked_once(monkeypatch, refusal, refused):
    kernel = _Kernel(refusal, refused)
    monkeypatch.setattr(timeslice, "_sched_call", (kernel, (315, 314)))
    assert timeslice.short_slice() is False
    asked = kernel.calls
    assert asked == (1 if refused == 315 else 2)  # sched_getattr, then sched_setattr
    # As a typed pane's reader asks at each key's echo: no call more.
    for _ in range(5):
        assert timeslice.short_slice() is False
    assert timeslice.default_slice() is False
    assert timeslice.short_slice(1234) is False
    assert timeslice.slice_of() is None
    assert kernel.calls == asked


def test_a_thread_that_has_gone_fails_its_own_call_only(monkeypatch):
    kernel = _Kernel(errno.ESRCH, 315, on={1234})
    monkeypatch.setattr(timeslice, "_sched_call", (kernel, (315, 314)))
    assert timeslice.short_slice(1234) is False
    assert timeslice.short_slice(1234) is False
    assert kernel.calls == 2  # asked each time: another thread may be there
    assert timeslice.short_slice() is True
    assert timeslice.default_slice() is True
    assert kernel.calls == 6
