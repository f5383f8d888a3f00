"""The main thread's stop flag: woken by a set from any thread, and by a
signal whichever thread the kernel gave it to, with no timer in between."""

from __future__ import annotations

import signal
import threading
import time

import pytest

from choragos.session.stopflag import StopFlag

pytestmark = pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                                reason="signals are set up on the main thread only")


def test_a_set_from_another_thread_wakes_the_sleeper_at_once():
    flag = StopFlag()
    setter = threading.Timer(0.2, flag.set)
    started = time.monotonic()
    setter.start()
    flag.sleep()
    assert flag.is_set()
    assert time.monotonic() - started < 5
    setter.join()


def test_a_signal_taken_by_another_thread_runs_its_handler_on_the_sleeping_main_thread():
    flag = StopFlag()
    handled: list[str] = []

    def on_signal(signum, frame) -> None:
        handled.append(threading.current_thread().name)
        flag.set()

    # Without the wake-up fd a main thread asleep on a lock never wakes for
    # this: the safety net below would end the sleep instead, after 10 s.
    safety = threading.Timer(10, flag.set)
    worker = threading.Thread(name="worker", target=lambda: (
        time.sleep(0.2), signal.pthread_kill(threading.get_ident(), signal.SIGUSR2)))
    previous = signal.signal(signal.SIGUSR2, on_signal)
    try:
        safety.start()
        started = time.monotonic()
        worker.start()
        flag.sleep()
        woke = time.monotonic() - started
    finally:
        safety.cancel()
        worker.join()
        signal.signal(signal.SIGUSR2, previous)
    assert handled == ["MainThread"]
    assert woke < 5


def test_a_flag_set_before_the_sleep_returns_at_once_and_leaves_no_descriptor(tmp_path):
    import os

    before = len(os.listdir("/proc/self/fd"))
    flag = StopFlag()
    flag.set()
    flag.sleep()
    assert len(os.listdir("/proc/self/fd")) == before
    assert signal.set_wakeup_fd(-1) == -1  # the previous wake-up fd (none) is back
