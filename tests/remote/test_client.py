"""The copy of the agent verbs a remote host gets runs with those files alone."""

from __future__ import annotations

import io
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from choragos.remote.link import CLIENT_VERBS, client_archive

VERBS = [verb if verb != "workdone" else "work-done" for verb in CLIENT_VERBS]


@pytest.fixture
def unpacked(tmp_path: Path) -> Path:
    with tarfile.open(fileobj=io.BytesIO(client_archive(str(tmp_path))), mode="r") as archive:
        archive.extractall(tmp_path, filter="data")
    # The copy's python3 without site-packages: this checkout's editable
    # install would otherwise supply any module the copy lacks.
    bare = tmp_path / "python"
    bare.mkdir()
    (bare / "python3").write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "$@"\n')
    (bare / "python3").chmod(0o700)
    return tmp_path


def _env(unpacked: Path) -> dict[str, str]:
    return {"PATH": f"{unpacked / 'python'}:/usr/bin:/bin"}


@pytest.mark.parametrize("verb", VERBS)
def test_each_verb_of_the_copy_runs_with_the_copied_modules_alone(unpacked: Path,
                                                                  verb: str) -> None:
    done = subprocess.run([str(unpacked / "bin" / "choragos"), verb, "--help"],
                          capture_output=True, text=True, timeout=30, env=_env(unpacked))
    assert done.returncode == 0, done.stderr
    assert "usage:" in done.stdout


def test_a_verb_the_copy_lacks_is_named_not_a_traceback(unpacked: Path) -> None:
    done = subprocess.run([str(unpacked / "bin" / "choragos"), "rollback", "T1"],
                          capture_output=True, text=True, timeout=30, env=_env(unpacked))
    assert done.returncode == 2
    assert "rollback is not available here" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_launcher_and_shim_are_private(unpacked: Path) -> None:
    assert (unpacked / "bin" / "choragos").stat().st_mode & 0o077 == 0
    assert (unpacked / "seat.py").stat().st_mode & 0o077 == 0
