"""docs/configuration.md and docs/cli.md against the code: every config key
the loader takes is documented with its default, and every documented key is
taken; every verb's options are listed.  Both lists come from the code, so
neither doc can drift from it again."""

from __future__ import annotations

import argparse
import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from choragos.cli import _parsers, man
from choragos.config import model
from choragos.config import schema as cs
from choragos.control import commands
from choragos.durations import format_duration, parse_duration
from choragos.remote.hosts import HostSpec

ROOT = Path(__file__).resolve().parents[2]
CONFIG_DOC = ROOT / "docs" / "configuration.md"

# Each table's section as the docs head it, and the class holding its defaults.
DEFAULTS: dict[str, object] = {
    "roles": model.RoleSpec, "hosts": HostSpec, "checkpoints": model.CheckpointSettings,
    "sphragis": model.SphragisSettings, "gateway": model.ProxySettings,
    "gateway.upstream": model.Upstreams, "pricing": model.Price, "budget": model.BudgetSettings,
    "metrics": model.MetricsSettings, "web": model.WebSettings, "notify": model.NotifySettings,
    "ui": model.UISettings, "ui.theme": dict(model.DEFAULT_THEME), "keys": model.Keys,
}
# Defaults the docs say in words, because the code's is worked out at load time.
SAID_IN_WORDS = {
    ("roles", "name"): "*required*", ("roles", "command"): "*required*",
    ("roles", "can_delegate"): "the start role: `true`; others: `false`",
    ("roles", "base_url_env"): "per CLI", ("roles", "budget"): "none",
    ("roles", "budget_tokens"): "none", ("roles", "min_terminal"): "`[ui] min_terminal`",
    ("roles", "host"): '`""` (this machine)', ("hosts", "ssh"): "required",
    ("hosts", "workdir"): '`"choragos-work/<project>"`',
    ("hosts", "work_limit"): '`"1GiB"`',
    ("sphragis", "enabled"): "*soft* (see below)", ("gateway", "addr"): "`[sphragis] addr`",
    ("budget", "session"): "none", ("ui", "min_free_memory"): f'`"{model.DEFAULT_FLOOR}"`',
}
DURATIONS = (cs.optional_duration, cs.positive_duration)


def code_keys(schema: cs.Schema, section: str = "") -> Iterator[tuple[str, str, object]]:
    """(section, key, converter) for every key the loader takes."""
    for key, entry in schema.items():
        if not isinstance(entry, cs.Nested):
            yield section, key, entry
        elif entry.read.__name__ in ("_read_roles", "_read_pricing", "read_hosts"):
            # An array or a map of tables: the docs head it by the section's name.
            yield from ((key, k, c) for k, c in entry.keys.items())
        else:
            assert entry.keys is not None, f"{key}: a table whose keys the docs cannot check"
            yield from code_keys(entry.keys, f"{section}.{key}" if section else key)


def doc_rows() -> dict[tuple[str, str], str]:
    """(section, key) -> the Default cell, for every key row of every section's table."""
    rows: dict[tuple[str, str], str] = {}
    section, column = None, None
    for line in CONFIG_DOC.read_text(encoding="utf-8").splitlines():
        heading = re.match(r"#{2,3} (.*)", line)
        if heading:
            named = re.match(r"`\[+([a-z.]+)", heading[1])
            section = named[1].rstrip(".") if named else None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if section and cells[0] == "Key":
            column = cells.index("Default") if "Default" in cells else None
        key = re.fullmatch(r"`([a-z_]+)`", cells[0]) if section and line.startswith("|") else None
        if key and column is not None:
            assert (section, key[1]) not in rows, f"{section}.{key[1]} is documented twice"
            rows[(section, key[1])] = cells[column]
    return rows


def shown_default(section: str, key: str, convert: object) -> str:
    """The default as the docs write it."""
    if (section, key) in SAID_IN_WORDS:
        return SAID_IN_WORDS[(section, key)]
    owner = DEFAULTS[section]
    if isinstance(owner, dict):
        return f"`{owner[key]}`"
    found = {f.name: f for f in dataclasses.fields(owner)}[key]
    value = found.default if found.default is not dataclasses.MISSING else found.default_factory()
    if convert in DURATIONS:
        return '`""`' if value is None else f'`"{format_duration(value)}"`'
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, str):
        return f'`"{value}"`'
    if isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, int) for v in value):
        return '`"{}x{}"`'.format(*value)
    if value == ():
        return "`[]`"
    if isinstance(value, float) and value.is_integer():
        return f"`{int(value)}`"
    return f"`{value}`"


ACCEPTED = [(s, k, c) for s, k, c in code_keys(model._TOP)]


def test_every_key_documented_is_one_the_loader_takes() -> None:
    taken = {(s, k) for s, k, _ in ACCEPTED}
    assert sorted(set(doc_rows()) - taken) == []


@pytest.mark.parametrize(("section", "key", "convert"), ACCEPTED,
                         ids=[f"{s}.{k}" for s, k, _ in ACCEPTED])
def test_every_key_the_loader_takes_is_documented_with_its_default(section: str, key: str,
                                                                   convert: object) -> None:
    rows = doc_rows()
    assert (section, key) in rows, f"[{section}] {key} is taken but not in configuration.md"
    written = rows[(section, key)]
    expected = shown_default(section, key, convert)
    if convert in DURATIONS and expected != '`""`':  # "60s" and "1m" are one default
        token = re.match(r'`"([^"]*)"`', written)
        assert token and parse_duration(token[1]) == parse_duration(expected[2:-2]), written
    else:
        assert written == expected or written.startswith(expected + " ("), (written, expected)


# ---- docs/cli.md, the man page and completion against the verbs' parsers -------------

CLI_DOC = ROOT / "docs" / "cli.md"


def parser_words(made: argparse.ArgumentParser) -> set[str]:
    """Every option string and positional argument of a verb, --help aside."""
    words = set()
    for action in made._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        words |= set(action.option_strings) or {action.metavar or action.dest.upper()}
    return words


def documented_rows() -> dict[str, dict[str, str]]:
    """verb -> each option or argument its rows of the options table name -> the row's text."""
    section = CLI_DOC.read_text(encoding="utf-8").split(
        "\n## Every verb's arguments and options\n", 1)[1].split("\n## ", 1)[0]
    found: dict[str, dict[str, str]] = {}
    for line in section.splitlines():
        row = re.match(r"\| `([a-z-]+)` \| (.*?) \| (.*) \|$", line)
        if row:
            for word in re.findall(r"`([^`]+)`", row[2]):
                spelled = word.split(" ", 1)[0] if word.startswith("-") else word
                found.setdefault(row[1], {})[spelled] = row[3].replace("\\|", "|")
    return found


def documented_words() -> dict[str, set[str]]:
    return {verb: set(rows) for verb, rows in documented_rows().items()}


@pytest.mark.parametrize("verb", list(commands.VERBS))
def test_every_verb_s_options_are_in_the_cli_docs(verb: str) -> None:
    made = _parsers.verb_parser(verb)
    assert documented_words().get(verb, set()) == parser_words(made)
    rows = documented_rows()[verb] if parser_words(made) else {}
    for action in made._actions:  # each row says what the verb's --help says
        if not isinstance(action, argparse._HelpAction):
            said = (action.help or "") % {"default": action.default}
            word = (action.option_strings or [action.metavar or action.dest.upper()])[0]
            assert rows[word].startswith(said), (word, rows[word], said)


def test_the_cli_docs_name_no_verb_that_is_not_one() -> None:
    assert set(documented_words()) <= set(commands.VERBS)


def test_the_json_column_names_exactly_the_verbs_with_json() -> None:
    table = CLI_DOC.read_text(encoding="utf-8").split("\n## Verbs\n", 1)[1].split("\n## ")[0]
    said = {verb for line in table.splitlines() if line.startswith("| `")
            for verb in re.findall(r"`([a-z-]+)`", line.split(" | ")[0])
            if line.rstrip(" |").split(" | ")[-1].startswith("yes")}
    has = {verb for verb in commands.VERBS
           if "--json" in parser_words(_parsers.verb_parser(verb))}
    assert said == has


@pytest.mark.parametrize("verb", list(commands.VERBS))
def test_the_man_page_and_completion_carry_every_option(verb: str) -> None:
    page = man.page()
    block = page.split(f'.SS "{verb.replace("-", chr(92) + "-")}"', 1)[1].split(".SS ", 1)[0]
    for word in parser_words(_parsers.verb_parser(verb)):
        if word.startswith("-"):
            assert word.replace("-", "\\-") in block, word
    completed = [p for p in _parsers.verbs_of(_parsers.root_parser()) if p.prog.endswith(
        f" {verb}")]
    assert len(completed) == 1 and parser_words(completed[0]) == parser_words(
        _parsers.verb_parser(verb))
