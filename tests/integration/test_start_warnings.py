"""What the start finds wrong reaches the operator, not only the server's log.

Checkpoints off (no git repository), the session's /metrics and the web
view unable to listen: each is one of the start's notices, which ``serve``
prints on its terminal (and the deck shows on its first frame), once,
saying what is wrong and what to do; the session runs without them.
"""

from __future__ import annotations

import json
import socket

import pytest

from tests.integration.harness import role_toml

pytestmark = pytest.mark.timeout(90)


def _taken() -> socket.socket:
    """A port some other program listens on (the test's, for its length)."""
    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    held.listen(1)
    return held


def test_checkpoints_metrics_web_and_memory_admission_off_are_start_notices(serve, short_tmp):
    meminfo = short_tmp / "meminfo"  # as macOS: no MemAvailable reading
    meminfo.write_text("MemTotal: 24683792 kB\n")
    with _taken() as metrics, _taken() as web:
        listen = {name: f"127.0.0.1:{held.getsockname()[1]}"
                  for name, held in (("metrics", metrics), ("web", web))}
        s = serve(role_toml("lead", start=True)
                  + f'[metrics]\nlisten = "{listen["metrics"]}"\n'
                  + f'[web]\nlisten = "{listen["web"]}"\n', git=False,
                  env={"CHORAGOS_TEST_MEMINFO": str(meminfo)})
        s.wait_booted(["lead"])
        said = {
            "memory": "choragos: admission by memory is off: this system gives no MemAvailable "
                      f"reading ({meminfo}), so roles start whatever memory is left; ",
            "checkpoints": "choragos: checkpoints are off: ",
            "metrics": ("choragos: the session's /metrics is off: "
                        f"cannot listen on {listen['metrics']} ("),
            "web": f"choragos: the web view is off: cannot listen on {listen['web']} (",
        }
        s.wait(lambda: all(line in s.stderr() for line in said.values()), 10, "the notices")
        lines = s.stderr().splitlines()
        for line in said.values():
            told = [text for text in lines if text.startswith(line)]
            assert len(told) == 1, s.stderr()  # once: not again as a bare log line
        told = {name: next(t for t in lines if t.startswith(line)) for name, line in said.items()}
        # What to do, in the same sentence.
        assert "run `git init` to have them" in told["checkpoints"]
        assert told["metrics"].endswith("change [metrics] listen, then restart the session")
        assert told["web"].endswith("change [web] listen, then restart the session")
        assert told["memory"].endswith('set [ui] min_free_memory = "0" to turn it off and this '
                                       'notice with it')
        events = [e["event"] for e in s.events()]
        assert {"checkpoints off", "metrics off", "web off", "memory admission off"} <= set(events)
        # Said again wherever the session is looked at later (a detached
        # start's terminal is gone): `status`, its JSON, the web view's.
        notices = json.loads(s.cli("status", "--json").stdout)["notices"]
        assert sorted(notices) == sorted(line.removeprefix("choragos: ")
                                         for line in told.values())
        shown = s.cli("status").stdout
        for name in said:
            assert f"at the start: {told[name].removeprefix('choragos: ')}" in shown, shown
