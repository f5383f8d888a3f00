"""The switch interval is short while the operator types, and back to the
session's own once the keys stop (on a fake clock)."""

from __future__ import annotations

import sys

import pytest

from choragos.ui.handover import Handover


@pytest.fixture
def usual():
    saved = sys.getswitchinterval()
    sys.setswitchinterval(0.0005)
    yield 0.0005
    sys.setswitchinterval(saved)


def test_keys_shorten_the_interval_until_a_window_without_keys(usual):
    clock = [100.0]
    handover = Handover(typing=0.0001, window=2.0, now=lambda: clock[0])
    assert handover.due_ms() is None  # nothing lowered: the pump sleeps as before
    handover.typed()
    assert sys.getswitchinterval() == pytest.approx(0.0001)
    clock[0] += 1.5
    handover.typed()  # a key inside the window extends it, lowering nothing again
    assert handover.lowered == 1
    assert handover.due_ms() == 2001
    clock[0] += 1.9
    handover.check()
    assert sys.getswitchinterval() == pytest.approx(0.0001)
    clock[0] += 0.2
    handover.check()
    assert sys.getswitchinterval() == pytest.approx(usual)
    assert handover.due_ms() is None and not handover.active


def test_restore_puts_the_usual_interval_back_at_once(usual):
    handover = Handover(typing=0.0001, window=60.0)
    handover.typed()
    handover.restore()
    assert sys.getswitchinterval() == pytest.approx(usual)
    handover.restore()  # twice is harmless
    assert sys.getswitchinterval() == pytest.approx(usual)


def test_an_interval_already_as_short_is_left_alone():
    saved = sys.getswitchinterval()
    sys.setswitchinterval(0.00005)
    try:
        handover = Handover(typing=0.0001)
        handover.typed()
        assert not handover.active and sys.getswitchinterval() == pytest.approx(0.00005)
    finally:
        sys.setswitchinterval(saved)
