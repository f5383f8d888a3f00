"""The checking machinery behind :mod:`choragos.config.model`.

A *schema* maps each key of a TOML table to a converter: a callable that
returns the checked value or raises ``ValueError`` with a message a person can
act on.  :func:`read_table` runs a schema over one table and files every
problem with a :class:`Report` instead of stopping at the first, so one run
of the loader shows the user everything that is wrong.
"""

from __future__ import annotations

import datetime
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from choragos import onuse
from choragos.config import envpolicy
from choragos.config.memfloor import parse_size
from choragos.durations import parse_duration
from choragos.inert import inert

Converter = Callable[[object], object]

HINT = "run `choragos doctor` for a full check"


class ConfigError(Exception):
    """The configuration cannot be used; ``errors`` holds every reason found."""

    def __init__(self, errors: list[str], warnings: tuple[str, ...] = ()) -> None:
        self.errors = list(errors)
        self.warnings = tuple(warnings)
        super().__init__(*self.errors)

    def __str__(self) -> str:
        return "\n".join([*self.errors, HINT])


@dataclass
class Report:
    """Errors and warnings found so far, each prefixed ``<file>:<location>: ``."""

    source: str
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def error(self, where: str, message: str) -> None:
        self.errors.append(f"{self.source}:{where}: {message}")

    def warn(self, where: str, message: str) -> None:
        self.warnings.append(f"{self.source}:{where}: {message}")

    def unknown(self, where: str, key: str, known: Mapping[str, object]) -> None:
        import difflib  # only for a key in error: every serve reads the config

        close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
        hint = f' (did you mean "{close[0]}"?)' if close else ""
        self.warn(where, f"unknown key, ignored{hint}")

    def raise_if_errors(self) -> None:
        if self.errors:
            raise ConfigError(self.errors, tuple(self.warnings))


# ---- locations ------------------------------------------------------------------------

_BARE_KEY = onuse.pattern(r"[A-Za-z0-9_-]+")


def join(where: str, key: str) -> str:
    """``where`` + ``.key``, quoting keys the way TOML would need them quoted."""
    shown = key if _BARE_KEY().fullmatch(key) else inert(json.dumps(key, ensure_ascii=False))
    return f"{where}.{shown}" if where else shown


def show(value: object) -> str:
    """A value as it would look in TOML, escaped so it is safe to print."""
    if isinstance(value, str):
        # json escapes the C0 controls; inert the C1 ones (\x9b opens a CSI) and bidi.
        return inert(json.dumps(value, ensure_ascii=False))
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(map(show, value)) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{join('', k)} = {show(v)}" for k, v in value.items()) + "}"
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    return repr(value)


def kind(value: object) -> str:
    """The TOML type name of a parsed value, for error messages."""
    for python_type, name in _KINDS:
        if isinstance(value, python_type):
            return name
    return type(value).__name__


# bool before int: in Python a bool is an int.
_KINDS: tuple[tuple[type, str], ...] = (
    (bool, "boolean"), (int, "integer"), (float, "float"), (str, "string"),
    (list, "array"), (dict, "table"),
    (datetime.datetime, "datetime"), (datetime.date, "date"), (datetime.time, "time"),
)


def expected(what: str, value: object) -> ValueError:
    return ValueError(f"expected {what}, got {kind(value)} {show(value)}")


# ---- converters -----------------------------------------------------------------------

def boolean(value: object) -> bool:
    if not isinstance(value, bool):
        raise expected("true or false", value)
    return value


def string(value: object) -> str:
    if not isinstance(value, str):
        raise expected("a string", value)
    return value


def word(value: object) -> str:
    """A non-empty string that can go into an argv (no NUL byte)."""
    text = string(value)
    if not text.strip():
        raise ValueError("must not be empty")
    if "\0" in text:
        raise ValueError("must not contain a NUL character")
    return text


def argv_string(value: object) -> str:
    """A possibly empty string that can go into an argv."""
    text = string(value)
    if "\0" in text:
        raise ValueError("must not contain a NUL character")
    return text


def integer(low: int | None = None, high: int | None = None) -> Converter:
    def convert(value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise expected("an integer", value)
        _check_range(value, low, high)
        return value
    return convert


def number(low: float = 0.0, above: bool = False) -> Converter:
    """A finite float or integer >= ``low`` (> ``low`` when ``above``)."""
    def convert(value: object) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise expected("a number", value)
        if not math.isfinite(value):
            raise ValueError(f"must be a finite number, got {show(value)}")
        if value < low or (above and value == low):
            raise ValueError(f"must be {'greater than' if above else 'at least'} {low:g}, "
                             f"got {show(value)}")
        return float(value)
    return convert


def _check_range(value: int, low: int | None, high: int | None) -> None:
    if low is not None and high is not None and not low <= value <= high:
        raise ValueError(f"must be between {low} and {high}, got {value}")
    if low is not None and value < low:
        raise ValueError(f"must be at least {low}, got {value}")
    if high is not None and value > high:
        raise ValueError(f"must be at most {high}, got {value}")


def choice(*options: str) -> Converter:
    def convert(value: object) -> str:
        text = string(value)
        if text not in options:
            listed = ", ".join(show(o) for o in options)
            raise ValueError(f"{show(text)} is not one of {listed}")
        return text
    return convert


# The longest duration a setting takes: a wait or socket timeout beyond some
# 292 years overflows the platform's time_t (every request through a gateway
# with such a timeout would fail), and nothing here waits a century anyway.
MAX_DURATION = 876000 * 3600.0  # "876000h", 100 years


def optional_duration(value: object) -> float | None:
    """A positive duration in seconds, at most :data:`MAX_DURATION`; ``""`` means none."""
    if not isinstance(value, str):
        raise expected('a duration string such as "45m"', value)
    if value == "":
        return None
    seconds = parse_duration(value)
    if seconds <= 0:
        raise ValueError(f"{show(value)} is zero; use \"\" for none")
    if seconds > MAX_DURATION:
        raise ValueError(f'{show(value)} is longer than 100 years ("876000h"), the most '
                         "a duration may be")
    return seconds


def positive_duration(value: object) -> float:
    """A duration string above zero, in seconds."""
    seconds = optional_duration(value)
    if seconds is None:
        raise ValueError('expected a duration such as "10m", got ""')
    return seconds


_SIZE = onuse.pattern(r"([0-9]{1,4})x([0-9]{1,4})")


def terminal_size(value: object) -> tuple[int, int]:
    """``"COLSxROWS"``, such as ``"80x24"``: a terminal size, at most 1000 each way."""
    text = string(value)
    match = _SIZE().fullmatch(text)
    if match is None:
        raise ValueError(f'{show(text)} is not a size written COLSxROWS, such as "80x24"')
    cols, rows = int(match[1]), int(match[2])
    if not (20 <= cols <= 1000 and 5 <= rows <= 1000):
        raise ValueError(f"{show(text)}: a terminal takes 20 to 1000 columns and 5 to 1000 rows")
    return cols, rows


def byte_size(value: object) -> int:
    """A size string (``"1GiB"``, ``"512MiB"``, ``"0"``), in bytes."""
    if not isinstance(value, str):
        raise expected('a size string such as "1GiB"', value)
    return parse_size(value)


MOST_MONEY = 1e9  # USD: no session spends it; a larger budget is a typo, not a cap


def money(value: object) -> float:
    """USD above zero and at most :data:`MOST_MONEY`, as a number or a decimal
    string (``"20.00"``)."""
    if isinstance(value, str):
        try:
            value = float(value.strip().removeprefix("$"))
        except ValueError:
            raise ValueError(f'{show(value)} is not an amount of USD (e.g. "20.00")') from None
    amount = number(0.0, above=True)(value)
    if amount > MOST_MONEY:
        raise ValueError(f"must be at most {MOST_MONEY:,.0f} USD, got {show(value)} (for no "
                         f"budget, leave it out)")
    return amount


def list_of(item: Converter) -> Converter:
    """An array whose every element passes ``item``; returned as a tuple."""
    def convert(value: object) -> tuple:
        if not isinstance(value, list):
            raise expected("an array", value)
        out, problems = [], []
        for index, element in enumerate(value, 1):
            try:
                out.append(item(element))
            except ValueError as exc:
                problems.append(f"element {index}: {exc}")
        if problems:
            raise ValueError("; ".join(problems))
        return tuple(out)
    return convert


def env_pattern(value: object) -> str:
    problem = envpolicy.validate_pattern(value)
    if problem:
        raise ValueError(problem)
    return str(value)


def env_name(value: object) -> str:
    """An exact variable name: a pattern without the wildcard."""
    name = env_pattern(value)
    if name.endswith("*"):
        raise ValueError(f"{show(name)}: a wildcard cannot name a variable to set")
    return name


def marker(value: object) -> str:
    text = string(value)
    if not text.strip():
        raise ValueError("an empty marker would match every line")
    return text


# ---- tables ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Nested:
    """A schema entry for a table (or array of tables) read by ``read(raw, where, report)``."""

    read: Callable[[Any, str, Report], object]
    shape: type = dict
    what: str = "a table"
    # The keys the table takes (each table's, for an array or a map of them),
    # when they are fixed: how the docs are checked against the code.
    keys: Schema | None = None


Schema = Mapping[str, "Converter | Nested"]


def read_table(raw: dict, schema: Schema, where: str, report: Report) -> dict[str, object]:
    """Check every key of ``raw`` against ``schema``; return the ones that passed.

    Keys that are absent stay absent, so the caller's dataclass defaults apply.
    """
    values: dict[str, object] = {}
    for key, value in raw.items():
        at = join(where, key)
        entry = schema.get(key)
        if entry is None:
            report.unknown(at, key, schema)
        elif isinstance(entry, Nested):
            if isinstance(value, entry.shape):
                values[key] = entry.read(value, at, report)
            else:
                report.error(at, str(expected(entry.what, value)))
        else:
            try:
                values[key] = entry(value)
            except ValueError as exc:
                report.error(at, str(exc))
    return values


# ---- deck keys and colours ------------------------------------------------------------

NAMED_KEYS = frozenset({
    "tab", "shift+tab", "enter", "esc", "space", "backspace",
    "up", "down", "left", "right", "pgup", "pgdn", "home", "end",
    *(f"f{n}" for n in range(1, 13)),
})
# A terminal sends the same byte for these chords as for the named key, so
# binding both would be two actions on one key that no check would catch.
_SAME_BYTES = {"ctrl+i": "tab", "ctrl+m": "enter"}
_KEY_HELP = "use one character, ctrl+<letter>, or a named key such as tab, enter, space, f1"


def key_name(value: object) -> str:
    """A deck key in canonical spelling; ``prefix+`` is dropped, ``minus`` is ``-``."""
    text = string(value)
    if text.lower().startswith("prefix+"):
        text = text[len("prefix+"):]
    if len(text) == 1:
        if text.isprintable() and not text.isspace():
            return text  # case matters: "R" is shift+r
        raise ValueError(f'{show(text)} is not a key; {_KEY_HELP} (write "space", not " ")')
    lowered = text.lower()
    if lowered == "minus":
        return "-"
    if lowered in NAMED_KEYS:
        return lowered
    if re.fullmatch(r"ctrl\+[a-z]", lowered):
        return _SAME_BYTES.get(lowered, lowered)
    raise ValueError(f"{show(text)} is not a key; {_KEY_HELP}")


def prefix_key(value: object) -> str:
    """The prefix chord: something agents never need typed, or every use would be eaten."""
    text = string(value)
    if text.lower().startswith("prefix+"):
        raise ValueError(f"{show(text)}: the prefix cannot be bound after itself")
    key = key_name(text)
    if key.startswith("ctrl+") or re.fullmatch(r"f\d+", key):
        return key
    raise ValueError(f"{show(text)}: the prefix must be ctrl+<letter> or f1..f12, "
                     "so ordinary typing still reaches the agents")


def colour(value: object) -> int | str:
    """A 256-colour palette index (int or numeric string) or ``#rrggbb`` (lower-cased)."""
    if isinstance(value, str) and re.fullmatch(r"#[0-9A-Fa-f]{6}", value):
        return value.lower()
    if isinstance(value, str) and value.isdigit() and value.isascii():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 255:
        return value
    raise ValueError(f"{show(value)} is not a colour (use 0-255 or \"#rrggbb\")")
