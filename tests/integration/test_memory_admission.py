"""Admission by memory in a real session: the reading comes from a fake
meminfo file the test rewrites (``CHORAGOS_TEST_MEMINFO``)."""

from __future__ import annotations

from tests.integration.harness import role_toml
from tests.integration.test_loud import fired, hook_toml, roles

SHORT = "MemTotal: 24683792 kB\nMemAvailable: 204800 kB\n"    # 200 MiB
PLENTY = "MemTotal: 24683792 kB\nMemAvailable: 8388608 kB\n"  # 8 GiB


def test_roles_wait_for_memory_and_start_in_order_once_it_is_back(serve, short_tmp):
    meminfo = short_tmp / "meminfo"
    meminfo.write_text(SHORT)
    s = serve(role_toml("orchestrator", start=True) + role_toml("coder")
              + hook_toml(short_tmp, "on_input", min_free_memory="1GiB"),
              env={"CHORAGOS_TEST_MEMINFO": str(meminfo)})
    s.wait(lambda: len(fired(short_tmp, "on_input")) == 2, 15, "a hook per held role")
    held = [e for e in s.events() if e["event"] == "role held"]
    assert sorted(e["role"] for e in held) == ["coder", "orchestrator"]
    assert held[0]["reason"].startswith("200 MiB of memory available, under the 1 GiB floor")
    crew = roles(s)
    for name in ("orchestrator", "coder"):
        # Never run, so never "exited": held before its first spawn.
        assert crew[name]["state"] == "starting" and crew[name]["pid"] is None
        assert crew[name]["marks"] == ["held: memory"]
        assert crew[name]["detail"].startswith("held: memory: 200 MiB of memory available")
    assert "coder is held: 200 MiB of memory available" in s.stderr()
    table = s.cli("status").stdout  # why, under the table
    assert "\ncoder starting: held: memory: 200 MiB of memory available" in table, table

    # Its work waits in its queue rather than failing.
    out = s.cli("delegate", "--to", "coder", "--task", "after the memory")
    assert out.returncode == 0
    assert "coder is held: memory: 200 MiB" in out.stderr and "the task waits for it" in out.stderr
    assert s.board()["T1"]["state"] == "queued"
    # Memory still short: nobody starts, no hook fires again.
    assert len(fired(short_tmp, "on_input")) == 2
    assert not [e for e in s.events() if e["event"] == "role admitted"]

    meminfo.write_text(PLENTY)
    s.wait_booted(["orchestrator", "coder"])
    admitted = [e["role"] for e in s.events() if e["event"] == "role admitted"]
    assert admitted == [e["role"] for e in held]  # in the order they asked
    assert all(r["marks"] == [] for r in roles(s).values())
    s.wait(lambda: s.board()["T1"]["state"] == "delivered", 20, "the task delivered")
    assert len(fired(short_tmp, "on_input")) == 2


def test_a_restart_is_held_too(serve, short_tmp):
    meminfo = short_tmp / "meminfo"
    meminfo.write_text(PLENTY)
    s = serve(role_toml("orchestrator", start=True)
              + role_toml("coder", "--crash-after", "1", restart="always")
              + hook_toml(short_tmp, "on_input", min_free_memory="1GiB"),
              env={"CHORAGOS_TEST_MEMINFO": str(meminfo)})
    s.wait_booted(["orchestrator"])
    meminfo.write_text(SHORT)
    event = s.wait_event(lambda e: e["event"] == "role held", 20, "the restart held")
    assert event["role"] == "coder"
    assert roles(s)["coder"]["marks"] == ["held: memory"]
    assert fired(short_tmp, "on_input") == ["coder|"]
    meminfo.write_text(PLENTY)
    s.wait_event(lambda e: e["event"] == "role admitted" and e["role"] == "coder", 10,
                 "the restart let in")
    s.wait(lambda: roles(s)["coder"]["marks"] == [], 10, "the mark cleared")
