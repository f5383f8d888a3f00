"""Conventions every verb shares: quiet broken pipes, usage errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _env(tmp: Path) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp),
            "LANG": "C.UTF-8", "PYTHONPATH": str(ROOT), "XDG_RUNTIME_DIR": str(tmp / "run")}


def _big_log(path: Path) -> Path:
    records = [{"t": 1_780_000_000.0, "event": "deck starting", "dir": "/p"}]
    for n in range(400):
        records.append({"t": 1_780_000_001.0 + n, "event": "delegate", "task": f"T{n}",
                        "role": f"role{n}"})
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.mark.parametrize("argv", [["report", "--all", "LOG"], ["ls", "--json"], ["-h"],
                                  ["report", "--json", "LOG"]])
def test_a_closed_pipe_ends_quietly(tmp_path: Path, argv: list[str]) -> None:
    log = _big_log(tmp_path / "events.jsonl")
    argv = [str(log) if a == "LOG" else a for a in argv]
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first write, as with `| head -0`
    try:
        done = subprocess.run([sys.executable, "-m", "choragos", *argv], cwd=tmp_path,
                              env=_env(tmp_path), stdout=write_end, stderr=subprocess.PIPE,
                              text=True, timeout=30)
    finally:
        os.close(write_end)
    assert done.stderr == ""
    assert done.returncode == 141


def test_bare_choragos_prints_usage_and_exits_2(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "choragos"], cwd=tmp_path,
                          env=_env(tmp_path), capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert "usage:" in done.stderr and done.stdout == ""
