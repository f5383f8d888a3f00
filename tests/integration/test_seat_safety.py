"""Nothing is ever typed into a question, whatever program a seat runs.

A fixture agent started through wrappers (``env``, ``sh -c``) gets the
generic profile, yet its numbered "Do you want to proceed?" dialog must read
*waiting*, fire ``on_input``, and receive no keys, however long it stays
quiet.  Its Enter would pick the preselected "1. Yes".
"""

from __future__ import annotations

import json
import shlex
import sys

from tests.e2e.scenario import holds_for
from tests.integration.harness import AGENT, Serve, role_toml
from tests.integration.test_roles import hooks_toml, read_env

QUIET_IDLE = 3.0  # actors/rolescreen.py: quiet without a busy marker otherwise means idle


def wrapped_role(name: str, command: str, args: list[str]) -> str:
    return (f"[[roles]]\nname = {json.dumps(name)}\ncommand = {json.dumps(command)}\n"
            f"args = {json.dumps(args)}\n")


def status(s: Serve) -> dict[str, dict]:
    return {r["name"]: r for r in json.loads(s.cli("status", "--json").stdout)["roles"]}


def test_a_startup_dialog_under_env_is_waiting_and_never_typed_into(serve, short_tmp):
    coder = wrapped_role("coder", "env", ["SEAT=1", sys.executable, str(AGENT), "--menu", "boot"])
    s = serve(role_toml("orchestrator", start=True) + coder + hooks_toml(short_tmp))
    s.wait(lambda: status(s)["coder"]["state"] == "waiting", 15, "the dialog read as waiting")
    s.wait(lambda: (short_tmp / "on_input.env").exists(), 5, "the on_input hook")
    assert read_env(short_tmp / "on_input.env")["CHORAGOS_ROLE"] == "coder"
    view = status(s)["coder"]
    assert view["profile"] == "generic"
    assert any("1. Yes" in line for line in view["preview"]), view
    # Well past the quiet-means-idle delay: still waiting, nothing typed.
    assert holds_for(lambda: status(s)["coder"]["state"] == "waiting", QUIET_IDLE + 1.5)
    s.cli("delegate", "--to", "coder", "--task", "do not type me")
    s.wait(lambda: status(s)["coder"]["queued"] == 1, 5, "the task to queue")
    assert holds_for(lambda: status(s)["coder"]["queued"] == 1, 1.0)
    assert not s.agents("answer", "coder") and not s.agents("dropped", "coder")
    assert not [e for e in s.events() if e["event"] == "boot injection" and e["role"] == "coder"]
    assert s.board()["T1"]["state"] == "queued"


def test_a_question_in_no_profile_s_words_is_never_briefed_into(serve, short_tmp):
    # npx's own question before it runs an agent it has to install: "Ok to
    # proceed? (y)" is no marker of any profile, and read as working, then
    # quiet, its brief answered it (a line starting with "Y" is a yes).
    asks = "Need to install the following packages:\\n  some-agent@1.0.0\\nOk to proceed? (y) "
    coder = role_toml("coder", "--menu", "boot", "--question", asks)
    s = serve(role_toml("orchestrator", start=True) + coder + hooks_toml(short_tmp))
    s.wait(lambda: status(s)["coder"]["state"] == "waiting", 15, "the question read as waiting")
    s.wait(lambda: (short_tmp / "on_input.env").exists(), 5, "the on_input hook")
    assert read_env(short_tmp / "on_input.env")["CHORAGOS_ROLE"] == "coder"
    assert holds_for(lambda: status(s)["coder"]["state"] == "waiting", QUIET_IDLE + 1.0)
    assert not s.agents("answer", "coder") and not s.agents("dropped", "coder")
    assert not [e for e in s.events() if e["event"] == "boot injection" and e["role"] == "coder"]


def test_a_dialog_mid_session_under_sh_c_holds_every_delivery(serve, short_tmp):
    script = f"exec {shlex.quote(sys.executable)} {shlex.quote(str(AGENT))} --menu 'New task'"
    s = serve(role_toml("orchestrator", start=True)
              + wrapped_role("coder", "sh", ["-c", script]) + hooks_toml(short_tmp))
    s.wait_booted(["coder"])
    s.cli("delegate", "--to", "coder", "--task", "first")
    s.wait(lambda: status(s)["coder"]["state"] == "waiting", 10, "the dialog read as waiting")
    s.wait(lambda: (short_tmp / "on_input.env").exists(), 5, "the on_input hook")
    s.cli("delegate", "--to", "coder", "--task", "second")
    assert holds_for(lambda: status(s)["coder"]["state"] == "waiting"
                     and status(s)["coder"]["queued"] == 1, QUIET_IDLE + 1.5)
    assert not s.agents("answer", "coder")  # the dialog's Enter would have said "Yes"
    assert s.board()["T2"]["state"] == "queued"


def test_a_screen_never_drawn_is_never_idle_nor_briefed(serve):
    # Quiet for longer than the quiet-means-idle delay, but nothing on screen yet.
    coder = role_toml("coder", "--blank", str(QUIET_IDLE + 2))
    s = serve(role_toml("orchestrator", start=True) + coder)
    assert holds_for(lambda: status(s)["coder"]["state"] == "booting", QUIET_IDLE + 0.5)
    assert not [e for e in s.events() if e["event"] == "boot injection" and e["role"] == "coder"]
    s.wait_booted(["coder"], timeout=20)
    assert not s.agents("dropped", "coder")  # the brief waited for the program to draw
    assert s.submitted("coder") and "You are the coder role" in s.submitted("coder")[0]
