"""Roles reach the running choragos whatever the user's PATH (choragos/roles/selfpath.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from choragos import __version__
from tests.integration.harness import ROOT, Serve, role_toml

ENTRY = Path(sys.executable).parent / "choragos"


@pytest.mark.skipif(not ENTRY.exists(), reason="needs the installed choragos entry point")
def test_a_session_started_by_path_gives_every_role_choragos(short_tmp):
    work = short_tmp / "work"
    work.mkdir()
    # env_allow keeps only the baseline (PATH among it) and AGENT_LOG: PYTHONPATH
    # is gone, so the worker's `choragos` must come from the session alone.
    config = (role_toml("orchestrator", start=True)
              + role_toml("coder", "--worker", "--cli", "choragos",
                          env_allow=["AGENT_LOG"]))
    session = Serve(work, config, sock=short_tmp / "s.sock")
    session.env["PATH"] = "/usr/bin:/bin"  # no choragos anywhere on it
    session.env.pop("PYTHONPATH")
    assert subprocess.run(["sh", "-c", "command -v choragos"], env=session.env,
                          capture_output=True).returncode != 0
    session.start(command=[str(ENTRY)])
    try:
        session.wait_booted(["orchestrator", "coder"])
        out = session.cli("delegate", "--to", "coder", "--task", "say hi")
        assert out.returncode == 0, out.stderr
        session.wait(lambda: session.board()["T1"]["state"] == "done", 20,
                     message="the worker's choragos work-done")
        reported = session.wait(lambda: session.agents("ack", "coder"), 10, message="ack")
        assert reported[0]["text"].startswith("0 reported T1"), reported
        shim = work / ".choragos" / "bin" / "choragos"
        version = subprocess.run([str(shim), "--version"], env={"PATH": "/usr/bin:/bin"},
                                 capture_output=True, text=True, timeout=15)
        assert version.stdout.strip() == f"choragos {__version__}"
        assert sys.executable in shim.read_text()
    finally:
        assert session.stop() == 0, session.stderr()
        session.assert_no_leftovers()


def test_doctor_names_the_choragos_roles_get(short_tmp):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(short_tmp), "PYTHONPATH": str(ROOT),
           "CHORAGOS_SOCK": str(short_tmp / "s.sock")}
    out = subprocess.run([sys.executable, "-m", "choragos", "doctor"], cwd=short_tmp,
                         env=env, capture_output=True, text=True, timeout=30)
    line = next(x for x in out.stdout.splitlines() if "first on PATH" in x)
    assert line.startswith("OK") and sys.executable in line and __version__ in line
    assert "not on your own PATH" in line
    shim = short_tmp / ".choragos" / "bin" / "choragos"
    shim.parent.mkdir(parents=True)
    shim.write_text("#!/bin/sh\nexec /usr/bin/python3 -m choragos \"$@\"\n")
    out = subprocess.run([sys.executable, "-m", "choragos", "doctor"], cwd=short_tmp,
                         env=env, capture_output=True, text=True, timeout=30)
    assert any(x.startswith("WARN") and "runs another choragos" in x
               for x in out.stdout.splitlines()), out.stdout
    assert os.access(sys.executable, os.X_OK)
