"""The one command registry: each command declared once, everything else derived.

Every declared command has its handler in the session core, its verb (when it
has one) and its row in docs/protocol.md; no other table of commands is left.
"""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path

import pytest

from choragos.actors.core import CoreActor
from choragos.cli import main
from choragos.control import authority, commands, wire

ROOT = Path(__file__).resolve().parents[2]
PROTOCOL = (ROOT / "docs" / "protocol.md").read_text()
DECLARED = sorted(commands.COMMANDS)


def _section(heading: str) -> str:
    return PROTOCOL.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def _doc_row(first_cell: str) -> str:
    """The row of the requests table whose first cell is exactly ``first_cell``."""
    rows = [line for line in _section("Requests").splitlines()
            if line.startswith(f"| {first_cell} |")]
    assert len(rows) == 1, f"docs/protocol.md has {len(rows)} rows for {first_cell}"
    return rows[0]


@pytest.mark.parametrize("name", DECLARED)
def test_each_command_has_a_handler_in_the_core(name: str) -> None:
    handler = getattr(CoreActor, commands.COMMANDS[name].handler, None)
    assert callable(handler), f"the core has no {commands.COMMANDS[name].handler}"


def test_the_core_handles_nothing_that_is_not_declared() -> None:
    handlers = {attr for attr in dir(CoreActor) if attr.startswith("_cmd_")}
    assert handlers == {command.handler for command in commands.COMMANDS.values()}


@pytest.mark.parametrize("name", DECLARED)
def test_each_command_and_each_of_its_fields_is_in_the_protocol_docs(name: str) -> None:
    row = _doc_row(f"`{name}`")
    for field in commands.COMMANDS[name].fields:
        assert f"`{field.name}`" in row, f"{name}: field {field.name} is not documented"


def test_the_docs_list_exactly_the_operator_commands() -> None:
    documented = set()
    for line in _section("Who may send what").splitlines():
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if len(cells) == 4 and cells[1:] == ["yes", "refused", "refused"]:
            documented |= set(re.findall(r"`([^`]+)`", cells[0]))
    declared = set()
    for command in commands.COMMANDS.values():
        if isinstance(command.operator, commands.When):
            declared |= {f"{command.name} {value}" for value in command.operator.values}
        elif command.operator:
            declared.add(command.name)
    assert documented == declared


@pytest.mark.parametrize("verb", list(commands.VERBS))
def test_each_verb_has_a_module_with_run(verb: str) -> None:
    module = importlib.import_module(commands.VERBS[verb].module)
    assert callable(module.run)


def test_each_verb_is_in_the_cli_docs() -> None:
    table = (ROOT / "docs" / "cli.md").read_text().split("\n## Verbs\n", 1)[1].split("\n## ")[0]
    listed = {name for line in table.splitlines() if line.startswith("| `")
              for name in re.findall(r"`([a-z-]+)`", line.split("|")[1])}
    assert listed == set(commands.VERBS)


def test_a_verb_that_sends_a_command_names_a_declared_one() -> None:
    sent = {verb.command for verb in commands.VERBS.values() if verb.command}
    assert sent <= set(commands.COMMANDS)
    assert commands.VERBS["keys"].command == "input"
    # whoami is asked by other verbs and tools, rollback by the deck.
    assert set(commands.COMMANDS) - sent == {"whoami", "rollback"}


def test_the_cli_verb_table_and_help_come_from_the_registry() -> None:
    assert list(main.VERBS) == list(commands.VERBS)
    usage = main.usage()
    for verb in commands.VERBS.values():
        assert re.search(rf"^  choragos {re.escape(verb.name)} +{re.escape(verb.help)}$",
                         usage, re.M)


def test_no_other_table_of_commands_is_left() -> None:
    assert not hasattr(wire, "_COMMANDS")
    assert not hasattr(wire, "GATEWAY_EXEMPT")
    assert not hasattr(authority, "OPERATOR_COMMANDS")
    assert frozenset(commands.COMMANDS) == wire.COMMANDS
    # Handlers are found through the registry only, never by building their name.
    sources = [p for folder in ("choragos", "actors", "ui") for p in (ROOT / folder).rglob("*.py")]
    builders = [p.relative_to(ROOT) for p in sources
                if p.name != "commands.py" and '"_cmd_"' in p.read_text()]
    assert builders == []


@pytest.mark.parametrize(("request_", "operator_only"), [
    ({"cmd": "gate", "action": "approve", "id": "T1"}, True),
    ({"cmd": "gate", "action": "list"}, False),
    ({"cmd": "handoff"}, True),
    ({"cmd": "input", "role": "coder", "text": "y"}, True),
    ({"cmd": "restart", "gateway": True}, True),
    ({"cmd": "budget", "role": "coder", "amount": "100"}, True),
    ({"cmd": "budget", "session": True, "amount": "100"}, True),
    ({"cmd": "board"}, False),
    ({"cmd": "work-done", "id": "T1", "task": "t"}, False),
])
def test_the_authority_rule_is_the_declared_one(request_: dict, operator_only: bool) -> None:
    parsed = wire.parse_request(json.dumps(request_).encode())
    refused = authority.refusal(parsed, "coder", may_delegate=True)
    assert (refused is not None) == operator_only
    if refused:
        spoken = "gate approve" if request_["cmd"] == "gate" else request_["cmd"]
        assert refused.startswith(f"{spoken} is an operator command")


def test_restarting_the_gateway_passes_the_gate_it_reopens_and_a_role_restart_does_not() -> None:
    """While an enforced gateway is down, ``restart --gateway`` is what brings
    it back: refused then, it could never be sent."""
    gateway = wire.parse_request(b'{"cmd": "restart", "gateway": true}')
    assert gateway["role"] is None
    assert wire.gateway_refusal(gateway) is None
    role = wire.parse_request(b'{"cmd": "restart", "role": "coder"}')
    assert role["gateway"] is False and wire.gateway_refusal(role) is not None
    with pytest.raises(wire.WireError, match='needs "role"'):
        wire.parse_request(b'{"cmd": "restart"}')


def test_a_new_declaration_is_validated_by_its_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    """Adding a command is a declaration: the wire checks it with no code of its own."""
    echo = commands.Command("echo", (
        commands.Field("times", commands.SECONDS, default=2, limit=10),
        commands.Field("what", commands.CHOICE, default="a", choices=("a", "b", "c")),
        commands.Field("note", commands.TEXT, default="", limit=5,
                       when=commands.When("what", "c")),
    ))
    monkeypatch.setitem(commands.COMMANDS, "echo", echo)

    def parse(**fields: object) -> dict:
        return wire.parse_request(json.dumps({"cmd": "echo", **fields}).encode())

    assert parse() == {"cmd": "echo", "times": 2, "what": "a", "note": ""}
    assert parse(what="c", note="hi") == {"cmd": "echo", "times": 2, "what": "c", "note": "hi"}
    assert parse(what="b", note="ignored")["note"] == ""
    for fields, reason in [
        ({"times": 11}, '"times" must be a number of seconds from 1 to 10'),
        ({"what": "d"}, "\"what\" must be \"a\", \"b\" or \"c\", not 'd'"),
        ({"what": "c", "note": "toolong"}, '"note" is 7 characters; the limit is 5'),
    ]:
        with pytest.raises(wire.WireError) as refused:
            parse(**fields)
        assert refused.value.reason == reason


def test_the_agent_verbs_are_declared_and_trusted_in_each_seat() -> None:
    from choragos.agents import seatsetup

    agent = [name for name, verb in commands.VERBS.items() if verb.agent]
    assert agent == ["delegate", "work-done"]
    assert seatsetup.VERBS == ("choragos delegate", "choragos work-done")
    assert seatsetup.CLAUDE_RULES == ("Bash(choragos delegate:*)", "Bash(choragos work-done:*)")
    # An agent verb an operator-only command would refuse from inside a role.
    for name in agent:
        assert commands.COMMANDS[commands.VERBS[name].command].operator is False
