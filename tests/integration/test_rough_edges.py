"""Rough edges a new user hit, each against a real headless session."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.integration.harness import role_toml

TEAM = role_toml("lead", start=True) + role_toml("coder")


def test_refused_second_serve_writes_nothing_into_the_live_log(serve) -> None:
    session = serve(TEAM)
    session.wait_booted(["lead", "coder"])
    log = session.workdir / ".choragos" / "logs" / "events.jsonl"
    before = log.read_bytes()
    second = subprocess.run([sys.executable, "-m", "choragos", "serve", "--headless"],
                            cwd=session.workdir, env=session.env, capture_output=True,
                            text=True, timeout=30)
    assert second.returncode == 1, second.stderr
    assert "already running" in second.stderr
    assert log.read_bytes() == before
    out = session.cli("report", "--all", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["runs"] == 1


def test_the_gateway_off_notice_is_not_a_warning(serve) -> None:
    session = serve(TEAM)
    session.wait_booted(["lead"])
    lines = [line for line in session.stderr().splitlines() if "gateway off" in line]
    assert lines and all(" INFO " in line for line in lines), lines
