"""An option is taken by its whole name only, by every verb: ``choragos
kill --al`` once meant ``kill --all``; a destructive verb doing what a typo
asked.  The agents' quick readers (choragos/cli/_quickargs.py) agree."""

from __future__ import annotations

import argparse

import pytest

from choragos.cli import _client, _parsers, delegate, serve, workdone
from choragos.cli._quickargs import quick
from choragos.control import commands


def _filled(parser: argparse.ArgumentParser) -> list[str]:
    """The verb's required options and positionals, each given something it takes."""
    argv: list[str] = []
    for action in parser._actions:
        value = str(next(iter(action.choices))) if action.choices else "1"
        if action.option_strings and action.required:
            argv += [action.option_strings[-1], value]
        elif not action.option_strings and action.nargs in (None, "+"):
            argv.append(value)
    return argv


def _abbreviations(parser: argparse.ArgumentParser) -> list[str]:
    """Each long option less its last letter, where that is no option itself."""
    return [flag[:-1] for flag in parser._option_string_actions
            if flag.startswith("--") and len(flag) > 4
            and flag[:-1] not in parser._option_string_actions]


@pytest.mark.parametrize("verb", list(commands.VERBS))
def test_no_verb_takes_an_abbreviated_option(verb: str) -> None:
    parser = _parsers.verb_parser(verb)
    base = _filled(parser)
    parser.parse_args(base)  # the whole names are taken: the refusal below is the abbreviation's
    shortened = _abbreviations(parser)
    assert shortened or verb in ("man", "demo", "completion", "doctor") or not parser._actions
    for word in shortened:
        with pytest.raises(_client.Failure) as refused:
            parser.parse_args([*base, word])
        assert f"unrecognized arguments: {word}" in refused.value.message, word
        assert refused.value.code == _client.EXIT_USAGE


def test_kill_al_is_refused_with_the_whole_name_suggested() -> None:
    with pytest.raises(_client.Failure) as refused:
        _parsers.verb_parser("kill").parse_args(["--al"])
    assert refused.value.message == ("unrecognized arguments: --al (--al: did you mean "
                                     "--all?) (see `choragos kill --help`)")


def test_the_root_parser_takes_no_abbreviation_either() -> None:
    with pytest.raises(_client.Failure):
        _parsers.root_parser("kill").parse_args(["kill", "--al"])


@pytest.mark.parametrize(("options", "argv"), [
    ((*delegate.OPTIONS, _client.SOCK), ["--to", "coder", "--tas", "x"]),
    ((*workdone.OPTIONS, _client.SOCK), ["--id", "T3", "--do", "--task", "x"]),
    (serve.OPTIONS, ["--detac"]),
])
def test_the_quick_readers_leave_an_abbreviation_to_argparse_which_refuses_it(
        options: tuple, argv: list[str]) -> None:
    assert quick(argv, options) is None


def test_only_the_whole_json_asks_for_the_envelope() -> None:
    assert _client.wants_json(["status", "--json"]) and _client.wants_json(["--json=1"])
    assert not _client.wants_json(["kill", "--js"])
