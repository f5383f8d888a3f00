"""Deliveries typed once, whatever state the agent left its terminal in."""

from __future__ import annotations

import os
import subprocess

import pytest

from choragos.control import wire
from tests.integration.harness import Serve, role_toml


@pytest.mark.parametrize("charset", ["G0", "SO"])
def test_the_echo_check_sees_text_drawn_in_the_line_drawing_set(serve, charset):
    s = serve(role_toml("orchestrator", start=True)
              + role_toml("coder", "--dec-graphics", charset))
    s.wait_booted(["orchestrator", "coder"])
    assert s.cli("delegate", "--to", "coder", "--task", "quirky text").returncode == 0
    s.wait(lambda: s.board()["T1"]["state"] in ("delivered", "failed"), 20,
           message="T1 delivered or failed")
    assert s.board()["T1"]["state"] == "delivered", s.board()["T1"]
    tasks = [x for x in s.submitted("coder") if "New task T1" in x]
    assert len(tasks) == 1 and tasks[0].count("New task") == 1, tasks


def test_bidi_controls_never_reach_a_typed_line(serve):
    s = serve(role_toml("orchestrator", start=True) + role_toml("coder"))
    s.wait_booted(["orchestrator", "coder"])
    assert s.cli("delegate", "--to", "coder", "--task", "x").returncode == 0
    s.wait(lambda: s.board()["T1"]["state"] == "delivered", message="T1 delivered")
    summary = "fine \u202eexe.txt\u202c and \u2066isolated\u2069 \u200fmark"
    ack = wire.request(s.sock, {"cmd": "work-done", "id": "T1", "task": summary})
    assert ack["status"] == "ok", ack
    s.wait(lambda: any("isolated" in x for x in s.submitted("orchestrator")), 15,
           message="the report")
    line = next(x for x in s.submitted("orchestrator") if "isolated" in x)
    assert not set(line) & set("\u202e\u202c\u2066\u2069\u200f"), ascii(line)


def test_choragos_dir_is_injected_unless_denied(serve):
    s = serve(role_toml("orchestrator", start=True)
              + role_toml("coder", env_deny=["CHORAGOS_DIR"]))
    s.wait_booted(["orchestrator", "coder"])
    env = {}
    for record in s.agents("start"):
        with open(f"/proc/{record['text']}/environ", "rb") as handle:
            pairs = [item.split(b"=", 1) for item in handle.read().split(b"\0") if item]
        env[record["role"]] = {k.decode(): v.decode() for k, v in pairs}
    assert env["orchestrator"]["CHORAGOS_DIR"] == str(s.workdir)
    assert "CHORAGOS_DIR" not in env["coder"]
    assert env["coder"]["CHORAGOS_ROLE"] == "coder" and env["coder"]["CHORAGOS_SOCK"]


def test_temporary_objects_left_by_a_crashed_checkpoint_are_removed_at_start(short_tmp):
    work = short_tmp / "work"
    work.mkdir()
    s = Serve(work, role_toml("orchestrator", start=True), sock=short_tmp / "s.sock")
    dead = subprocess.Popen(["true"])
    dead.wait()
    objects = work / ".git" / "objects"
    (objects / "ab").mkdir(exist_ok=True)
    (objects / "pack").mkdir(exist_ok=True)
    stale = [objects / "ab" / f"tmp_obj_choragos_{dead.pid}_3",
             objects / "pack" / f"tmp_pack_choragos_{dead.pid}_1",
             objects / "pack" / f"tmp_pack_choragos_{dead.pid}_1.idx"]
    alive = objects / "ab" / f"tmp_obj_choragos_{os.getpid()}_1"  # a writer still at it
    for path in [*stale, alive]:
        path.write_bytes(b"x" * 1000)
    s.start()
    try:
        gone = s.wait_event(lambda e: e["event"] == "checkpoint temporaries removed")
        assert gone["count"] == 3
        assert not [p for p in stale if p.exists()] and alive.exists()
    finally:
        assert s.stop() == 0
    s.assert_no_leftovers()
