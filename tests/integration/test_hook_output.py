"""A hook that prints without end does not grow the server."""

from __future__ import annotations

import time

from tests.integration.harness import role_toml

MB = 1024 * 1024


def rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as handle:
        line = next(x for x in handle if x.startswith("VmRSS:"))
    return int(line.split()[1]) * 1024


def test_an_endless_hook_keeps_the_server_under_100_mb(serve, short_tmp):
    marker = short_tmp / "hook-started"
    team = (role_toml("orchestrator", start=True) + role_toml("coder", approve=True)
            + f"[ui]\non_gate = 'touch {marker}; yes choragos-endless-output'\n")
    s = serve(team)
    s.wait_booted(["orchestrator", "coder"])
    assert s.cli("delegate", "--to", "coder", "--task", "gated").returncode == 0
    s.wait(marker.exists, 10, message="the hook to start")
    peak, end = 0, time.monotonic() + 8
    while time.monotonic() < end:  # `yes` writes gigabytes in this time
        peak = max(peak, rss(s.proc.pid))
        time.sleep(0.2)
    assert peak < 100 * MB, f"the server grew to {peak // MB} MB"
    assert s.cli("ping").returncode == 0
