"""Plain programs as roles, through a real ``serve --headless`` in real PTYs.

A role whose command is not an agent CLI showed ``booting`` for as long as
it ran, in silence: ``cat`` draws nothing, so its screen never looked
ready for the brief, and a program that prints every 0.3 s is never quiet
for the boot's 1.2 s.  Past the boot's longest wait (20 s) each is now said
once (a ``boot held`` event, the ``on_input`` hook, the ``not briefed``
mark in ``status``), its status follows what it does (``cat`` quiet:
idle; the ticker: working), and nothing is typed into either.  A program
that draws nothing until a first line is typed and then shows a prompt (as
an agent still fetching itself would) gets its brief once it does.
"""

from __future__ import annotations

import json

import pytest

from tests.e2e.scenario import holds_for
from tests.integration.harness import role_toml
from tests.integration.test_seat_safety import status

TICKER = "while :; do echo tick; sleep 0.3; done"
READER = 'read -r first; while :; do printf "ready> "; read -r line; done'


def plain(name: str, command: str, *args: str) -> str:
    return (f'[[roles]]\nname = "{name}"\ncommand = "{command}"\n'
            f"args = {json.dumps(list(args))}\n")


def held(s, role: str) -> list[dict]:
    return [e for e in s.events() if e["event"] == "boot held" and e["role"] == role]


@pytest.mark.timeout(120)
def test_plain_programs_leave_booting_said_once_and_untyped(serve, short_tmp):
    s = serve(role_toml("orchestrator", start=True) + plain("cat", "cat")
              + plain("ticker", "sh", "-c", TICKER) + plain("reader", "sh", "-c", READER)
              + f"[ui]\non_input = 'echo $CHORAGOS_ROLE >> {short_tmp}/on_input'\n")
    s.wait(lambda: held(s, "cat") and held(s, "ticker") and held(s, "reader"), 60,
           "the held briefs said")
    roles = status(s)
    cat, ticker = roles["cat"], roles["ticker"]
    assert cat["state"] == "idle" and not cat["ready"] and "not briefed" in cat["marks"]
    assert "drawn nothing" in cat["detail"] and cat["preview"] == []  # nothing typed into it
    assert ticker["state"] == "working" and "not briefed" in ticker["marks"]
    assert "not paused" in ticker["detail"]
    alarmed = short_tmp / "on_input"
    s.wait(lambda: alarmed.exists() and len(alarmed.read_text().split()) == 3, 10, "on_input")
    assert sorted(alarmed.read_text().split()) == ["cat", "reader", "ticker"]
    # Said once each, and nothing typed meanwhile.
    assert holds_for(lambda: len(held(s, "cat")) == len(held(s, "ticker")) == 1
                     and status(s)["cat"]["preview"] == [], 1.5)
    assert not [e for e in s.events() if e["event"] == "boot injection"
                and e["role"] != "orchestrator"]
    # The operator types a line: the reader shows its prompt, rests, and only
    # then gets its brief, which it takes.
    assert s.cli("keys", "reader", "--text", "hello", "enter").returncode == 0
    s.wait_booted(["reader"], timeout=30)
    s.wait(lambda: "not briefed" not in status(s)["reader"]["marks"], 10, "the mark cleared")
    roles = status(s)
    assert roles["reader"]["detail"] == "" and roles["ticker"]["state"] == "working"
    assert roles["cat"]["preview"] == [] and len(held(s, "reader")) == 1
    assert sorted(alarmed.read_text().split()) == ["cat", "reader", "ticker"]
