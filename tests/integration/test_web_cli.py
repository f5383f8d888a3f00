"""``choragos web`` without a session: the configured address, a QR code, rotation."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.integration.harness import base_env, role_toml


def web(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = base_env({"CHORAGOS_SOCK": str(cwd / "none.sock")})
    return subprocess.run([sys.executable, "-m", "choragos", "web", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=30)


def test_the_link_a_qr_code_and_a_rotation(short_tmp: Path) -> None:
    (short_tmp / ".choragos.toml").write_text(role_toml("lead", start=True)
                                              + '[web]\nlisten = "8787"\n')
    shown = web(short_tmp)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    token = (short_tmp / ".choragos/state/web-token").read_text().strip()
    assert lines[0] == f"http://127.0.0.1:8787/?token={token}"
    code = [line for line in lines[1:] if "█" in line or "▀" in line or "▄" in line]
    assert len(code) >= 15 and len({len(line) for line in code}) == 1  # a square of blocks
    assert "no session serves it right now" in shown.stdout
    rotated = json.loads(web(short_tmp, "--rotate", "--json").stdout)
    assert rotated["ok"] and rotated["token"] != token and rotated["rotated"] is True
    assert json.loads(web(short_tmp, "--json").stdout)["token"] == rotated["token"]


def test_off_is_one_sentence_and_exit_1(short_tmp: Path) -> None:
    (short_tmp / ".choragos.toml").write_text(role_toml("lead", start=True))
    done = web(short_tmp)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip() == ('choragos web: the web view is off: set [web] listen = '
                                   '"127.0.0.1:8787" in .choragos.toml and start the session')
