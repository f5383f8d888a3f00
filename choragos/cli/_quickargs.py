"""The agents' verbs read their usual arguments without argparse.

``choragos delegate`` and ``choragos work-done`` run many times a session,
and argparse (with gettext and locale, which it loads for its messages)
is a good part of their start.  Such a verb lists its options once, as
:class:`Option` s: its argparse parser is built from that list (for
``--help``, completion, the man page and every error), and :func:`quick`
reads the plain spellings itself: ``--opt value``, ``--opt=value`` and
flags.  Anything else (a word it does not know, an abbreviation, a value
that starts with ``-`` or is ``--``, an option given twice, a required one missing,
``--help``) returns None, and the verb parses with argparse, which answers
as it always did (an abbreviation it refuses too: see ``_argparser.Parser``).
Standard library only, and only what is loaded anyway.
"""

from __future__ import annotations

from types import SimpleNamespace

# typing is needed for annotations only; the CLI verbs skip its import cost.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import ArgumentParser
    from collections.abc import Sequence
    from typing import Any

VALUE, APPEND, TRUE, CONST = "value", "append", "true", "const"


class Option:
    """One ``--name``: what argparse is told, and what :func:`quick` reads."""

    __slots__ = ("const", "default", "dest", "flag", "group", "help", "kind", "metavar",
                 "required")

    def __init__(self, flag: str, kind: str, help: str, *, metavar: str | None = None,
                 required: bool = False, dest: str | None = None, const: Any = None,
                 default: Any = None, group: str = "") -> None:
        self.flag, self.kind, self.help, self.metavar = flag, kind, help, metavar
        self.required, self.const, self.group = required, const, group
        self.dest = dest or flag.lstrip("-").replace("-", "_")
        self.default = False if kind == TRUE and default is None else default

    def takes_value(self) -> bool:
        return self.kind in (VALUE, APPEND)


def add(parser: ArgumentParser, options: Sequence[Option]) -> None:
    """Declare ``options`` on ``parser`` (a group name: mutually exclusive)."""
    groups: dict[str, Any] = {}
    for option in options:
        target = parser
        if option.group:
            if option.group not in groups:
                groups[option.group] = parser.add_mutually_exclusive_group()
            target = groups[option.group]
        settings: dict[str, Any] = {"help": option.help, "dest": option.dest}
        if option.kind == CONST:
            settings.update(action="store_const", const=option.const)
        elif option.kind == TRUE:
            settings["action"] = "store_true"
        else:
            settings.update(action="append" if option.kind == APPEND else "store",
                            metavar=option.metavar, required=option.required)
        target.add_argument(option.flag, **settings)
        if option.default is not None and option.kind == CONST:
            parser.set_defaults(**{option.dest: option.default})


def quick(argv: Sequence[str], options: Sequence[Option]) -> SimpleNamespace | None:
    """The arguments as argparse would read them, or None: argparse must read them."""
    by_flag = {option.flag: option for option in options}
    values: dict[str, Any] = {option.dest: option.default for option in options}
    seen: set[str] = set()
    groups: set[str] = set()
    words = iter(argv)
    for word in words:
        flag, equals, value = word.partition("=")
        option = by_flag.get(flag)
        if option is None or (flag in seen and option.kind != APPEND):
            return None
        if option.group:
            if option.group in groups:
                return None
            groups.add(option.group)
        seen.add(flag)
        if not option.takes_value():
            if equals:
                return None
            values[option.dest] = True if option.kind == TRUE else option.const
            continue
        if not equals:
            value = next(words, None)
            if value is None or value.startswith("-"):
                return None
        elif value == "--":  # argparse drops a "--" even as an option's value
            return None
        if option.kind == APPEND:
            values[option.dest] = [*(values[option.dest] or ()), value]
        else:
            values[option.dest] = value
    if any(option.required and option.flag not in seen for option in options):
        return None
    return SimpleNamespace(**values)
