"""A signal stops the session even when its log line cannot be written
(choragos/cli/serve.py's ``install_signals``)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# The handlers installed as serve installs them; the server's log stream
# refuses the signal's line as a stream being written by the thread the
# signal interrupts refuses a second write ("reentrant call").
SIGNALLED = """
import json, logging, os, signal, threading
from choragos.cli.serve import install_signals

class Busy(logging.Handler):
    def emit(self, record):
        raise RuntimeError("reentrant call inside <_io.BufferedWriter name='<stderr>'>")

log = logging.getLogger("choragos")
log.addHandler(Busy())
log.setLevel(logging.INFO)
stopped = threading.Event()
install_signals(stopped.set)
os.kill(os.getpid(), signal.SIGTERM)
print(json.dumps(stopped.wait(5)))
"""


@pytest.mark.timeout(30)
def test_a_signal_during_a_log_line_still_stops_the_session() -> None:
    """Beside a full run a SIGTERM came while the main thread wrote the
    "session running" line to stderr: the handler's own line raised, before
    the stop, and the session ran on until the test killed it."""
    out = subprocess.run([sys.executable, "-c", SIGNALLED], capture_output=True, text=True,
                         timeout=20)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout) is True


# The handler runs on the main thread between two bytecodes, here as it did
# beside a full run: inside the stop flag's own wait, its lock held.
INSIDE_THE_WAIT = """
import json, os, signal, threading
from choragos.cli.serve import install_signals
from choragos.session.stopflag import StopFlag

stopped = StopFlag()
install_signals(stopped.set)
handler = signal.getsignal(signal.SIGTERM)
hung = threading.Timer(5, os._exit, (3,))  # the old handler never came back
hung.start()
with stopped._cond:  # where Event.wait holds it, between its bytecodes
    handler(signal.SIGTERM, None)
hung.cancel()
print(json.dumps(stopped.wait(5)))
"""


@pytest.mark.timeout(30)
def test_a_signal_inside_the_stop_flags_own_wait_still_stops_the_session() -> None:
    """A detached start's SIGTERM came while the main thread was entering the
    stop flag's wait: the handler's set() waited for the lock its own thread
    held, the server hung for good, and so did every later stop."""
    out = subprocess.run([sys.executable, "-c", INSIDE_THE_WAIT], capture_output=True,
                         text=True, timeout=20)
    assert out.returncode == 0, f"the handler hung (exit {out.returncode}) {out.stderr[-2000:]}"
    assert json.loads(out.stdout) is True
