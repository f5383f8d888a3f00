"""A demo left running (``--detach``, or the deck detached) says how to come
back to it and how to stop it, and the command it names does stop it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from choragos.control import paths
from tests.conftest import wait_until
from tests.integration.harness import base_env

pytestmark = pytest.mark.timeout(120)


def _choragos(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "choragos", *args], cwd=cwd, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=90)


def test_a_detached_demo_says_how_to_stop_it_and_that_stops_it(short_tmp: Path) -> None:
    # Its own runtime directory: the demo's socket is found from its
    # directory alone, as in the operator's shell (no $CHORAGOS_SOCK).
    env = base_env({"XDG_RUNTIME_DIR": str(short_tmp), "XDG_CACHE_HOME": str(short_tmp)})
    demo, elsewhere = short_tmp / "demo", short_tmp / "elsewhere"
    elsewhere.mkdir()
    sock = paths.socket_path(demo, env)
    try:
        started = _choragos(env, elsewhere, "demo", "--detach", "--dir", str(demo))
        assert started.returncode == 0, started.stderr
        said = started.stderr.splitlines()[-1]
        assert said == (f"choragos demo: the demo runs on in {demo}: `choragos demo --dir "
                        f"{demo}` shows its deck, `cd {demo} && choragos kill` stops it"), said
        assert sock.exists()
    finally:
        stopped = _choragos(env, demo, "kill")
    assert stopped.returncode == 0, stopped.stderr
    wait_until(lambda: not sock.exists(), 30, message="the demo's session to stop")
