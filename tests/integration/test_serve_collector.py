"""``choragos serve`` runs its start without the cyclic collector (some 45
collections, 4-5 ms of CPU before the first agent is spawned), and turns it
on again once the session is made, the start's objects moved into its
oldest generation, not left frozen."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# `serve --headless` through the command's entry; a thread ends it once the
# collector is back (the start done), by the signal a user's kill sends.
SERVE = """
import gc, json, os, signal, sys, threading, time
collections = []
gc.callbacks.append(lambda phase, info: phase == "start" and collections.append(info))
from choragos.terminal import ptyspawn
real_spawn, at_spawn = ptyspawn.spawn, []

def spawn(*args, **kwargs):
    if not at_spawn:
        at_spawn.append([len(collections) - before, gc.isenabled()])
    return real_spawn(*args, **kwargs)

ptyspawn.spawn = spawn

def stop_once_started():
    deadline = time.monotonic() + 40
    while not (at_spawn and gc.isenabled()) and time.monotonic() < deadline:
        time.sleep(0.02)
    os.kill(os.getpid(), signal.SIGTERM)

threading.Thread(target=stop_once_started, daemon=True).start()
from choragos.cli.main import _dispatch
before = len(collections)  # (what importing this much ran)
code = _dispatch(["serve", "--headless", "--dir", sys.argv[1]])
print(json.dumps([code, at_spawn, gc.isenabled(), gc.get_freeze_count(), gc.get_count()[0] < 700]))
"""


@pytest.mark.timeout(90)
def test_serve_starts_without_the_collector_and_turns_it_on_once_started(
        short_tmp: Path) -> None:
    (short_tmp / ".choragos.toml").write_text(
        '[[roles]]\nname = "solo"\ncommand = "sleep"\nargs = ["30"]\nstart = true\n\n'
        "[checkpoints]\nenabled = false\n")
    env = {"PATH": os.environ["PATH"], "HOME": str(short_tmp), "LANG": "C.UTF-8",
           "XDG_CACHE_HOME": str(short_tmp / "cache")}
    out = subprocess.run([sys.executable, "-c", SERVE, str(short_tmp)], capture_output=True,
                         text=True, timeout=80, env=env, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    code, at_spawn, enabled, frozen, young = json.loads(out.stdout.splitlines()[-1])
    assert code == 0
    # No collection from the verb's start to the agent's spawn: the collector off.
    assert at_spawn == [[0, False]]
    assert enabled is True  # on again once the session was made
    assert frozen == 0  # the start's objects are not kept from it
    assert young  # and its youngest generation started again empty, not with them
