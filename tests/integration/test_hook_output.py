"""A hook that prints without end is killed at once (it neither grows the
server nor takes its CPU), and a hook hung at the session's stop does not
outlive the server."""

from __future__ import annotations

from choragos.session.hooks import KILLED_AT_STOP
from tests.conftest import pid_alive, wait_until
from tests.integration.harness import role_toml

MB = 1024 * 1024


def rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as handle:
        line = next(x for x in handle if x.startswith("VmRSS:"))
    return int(line.split()[1]) * 1024


def test_an_endless_hook_is_killed_and_a_hung_one_ends_with_the_server(serve, short_tmp):
    pidfile = short_tmp / "hung.pid"
    script = (f'if [ "$CHORAGOS_TASK" = flood ]; then yes choragos-endless-output; '
              f"else sleep 300 & echo $! > {pidfile}; wait; fi")
    team = (role_toml("orchestrator", start=True) + role_toml("coder", approve=True)
            + f"[ui]\non_gate = '{script}'\n")
    s = serve(team)
    s.wait_booted(["orchestrator", "coder"])
    assert s.cli("delegate", "--to", "coder", "--task", "flood").returncode == 0

    def failed() -> list[str]:
        return [e["reason"] for e in s.events() if e["event"] == "hook failed"]

    s.wait(lambda: failed(), 15, message="the flooding hook to be killed")
    assert failed() == ["wrote more than 1 MiB of output; killed"]
    assert rss(s.proc.pid) < 100 * MB
    assert s.cli("delegate", "--to", "coder", "--task", "hang").returncode == 0
    s.wait(pidfile.exists, 15, message="the hung hook to start")
    hung = int(pidfile.read_text())
    assert s.stop() == 0
    assert failed()[1:] == [KILLED_AT_STOP]
    wait_until(lambda: not pid_alive(hung), 5, message="the hung hook's child to be gone")
