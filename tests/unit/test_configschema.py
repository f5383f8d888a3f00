"""The config converters one by one: what passes, and the exact sentence for what does not."""

from __future__ import annotations

import datetime

import pytest

from choragos.config import schema as cs


def made(convert):
    """A converter factory (integer, number, choice, list_of) is called inside
    the test, so a mutation of the factory is in force when it runs."""
    return convert() if convert.__name__ == "<lambda>" else convert


BAD = [
    (cs.boolean, 1, "expected true or false, got integer 1"),
    (cs.string, 1.5, "expected a string, got float 1.5"),
    (cs.word, "  ", "must not be empty"),
    (cs.word, "a\0b", "must not contain a NUL character"),
    (cs.word, True, "expected a string, got boolean true"),
    (cs.argv_string, "a\0", "must not contain a NUL character"),
    (cs.argv_string, [], "expected a string, got array []"),
    (lambda: cs.integer(), True, "expected an integer, got boolean true"),
    (lambda: cs.integer(), 1.0, "expected an integer, got float 1.0"),
    (lambda: cs.integer(1, 5), 0, "must be between 1 and 5, got 0"),
    (lambda: cs.integer(1, 5), 6, "must be between 1 and 5, got 6"),
    (lambda: cs.integer(1), 0, "must be at least 1, got 0"),
    (lambda: cs.integer(high=5), 6, "must be at most 5, got 6"),
    (lambda: cs.number(), False, "expected a number, got boolean false"),
    (lambda: cs.number(), "1", 'expected a number, got string "1"'),
    (lambda: cs.number(), float("inf"), "must be a finite number, got inf"),
    (lambda: cs.number(), float("nan"), "must be a finite number, got nan"),
    (lambda: cs.number(0.5), 0.25, "must be at least 0.5, got 0.25"),
    (lambda: cs.number(0.0, above=True), 0, "must be greater than 0, got 0"),
    (lambda: cs.number(1.5, above=True), 1, "must be greater than 1.5, got 1"),
    (lambda: cs.choice("a", "b"), "c", '"c" is not one of "a", "b"'),
    (lambda: cs.choice("a"), 3, "expected a string, got integer 3"),
    (cs.optional_duration, 5, 'expected a duration string such as "45m", got integer 5'),
    (cs.optional_duration, "0s", '"0s" is zero; use "" for none'),
    (lambda: cs.list_of(cs.word), "x", 'expected an array, got string "x"'),
    (lambda: cs.list_of(cs.word), ["ok", "", 3],
     'element 2: must not be empty; element 3: expected a string, got integer 3'),
    (cs.env_pattern, "A-B", '"A-B" is not a variable name or PREFIX_* pattern '
                            "(letters, digits and _, not starting with a digit)"),
    (cs.env_name, "AWS_*", '"AWS_*": a wildcard cannot name a variable to set'),
    (cs.marker, " ", "an empty marker would match every line"),
    (cs.marker, 1, "expected a string, got integer 1"),
    (cs.colour, 256, "256 is not a colour (use 0-255 or \"#rrggbb\")"),
    (cs.colour, -1, "-1 is not a colour (use 0-255 or \"#rrggbb\")"),
    (cs.colour, True, "true is not a colour (use 0-255 or \"#rrggbb\")"),
    (cs.colour, "#12345g", '"#12345g" is not a colour (use 0-255 or "#rrggbb")'),
    (cs.colour, "٣", '"٣" is not a colour (use 0-255 or "#rrggbb")'),
    (cs.key_name, " ", '" " is not a key; use one character, ctrl+<letter>, or a named key '
                       'such as tab, enter, space, f1 (write "space", not " ")'),
    (cs.key_name, "ctrl+1", '"ctrl+1" is not a key; use one character, ctrl+<letter>, or a '
                            "named key such as tab, enter, space, f1"),
    (cs.prefix_key, "prefix+a", '"prefix+a": the prefix cannot be bound after itself'),
    (cs.prefix_key, "a", '"a": the prefix must be ctrl+<letter> or f1..f12, '
                         "so ordinary typing still reaches the agents"),
    # Past some 292 years a wait overflows time_t: a gateway with such a
    # timeout failed every request it forwarded.
    (cs.optional_duration, "3000000h",
     '"3000000h" is longer than 100 years ("876000h"), the most a duration may be'),
    (cs.positive_duration, "99999999999999999999h",
     '"99999999999999999999h" is longer than 100 years ("876000h"), the most a duration '
     "may be"),
    (cs.terminal_size, "\u0668\u0660x24",
     '"\u0668\u0660x24" is not a size written COLSxROWS, such as "80x24"'),
]


@pytest.mark.parametrize(("convert", "value", "message"), BAD)
def test_each_refusal_says_exactly_what_is_wrong(convert, value, message):
    with pytest.raises(ValueError) as refused:
        made(convert)(value)
    assert str(refused.value) == message


GOOD = [
    (cs.boolean, False, False), (cs.word, " x ", " x "), (cs.argv_string, "", ""),
    (lambda: cs.integer(1, 5), 1, 1), (lambda: cs.integer(1, 5), 5, 5),
    (lambda: cs.integer(), -7, -7), (lambda: cs.number(), 0, 0.0),
    (lambda: cs.number(0.5), 0.5, 0.5), (lambda: cs.number(1.0, above=True), 1.5, 1.5),
    (lambda: cs.choice("a", "b"), "b", "b"), (cs.optional_duration, "", None),
    (cs.optional_duration, "1m30s", 90.0), (cs.optional_duration, "876000h", 876000 * 3600.0),
    (lambda: cs.list_of(cs.word), ["a", "b"], ("a", "b")),
    (lambda: cs.list_of(cs.word), [], ()), (cs.env_name, "HOME", "HOME"),
    (cs.env_pattern, "LC_*", "LC_*"), (cs.marker, "> ", "> "),
    (cs.colour, 0, 0), (cs.colour, 255, 255), (cs.colour, "42", 42),
    (cs.colour, "#ABCdef", "#abcdef"), (cs.key_name, "R", "R"),
    (cs.key_name, "prefix+Tab", "tab"), (cs.key_name, "MINUS", "-"),
    (cs.key_name, "ctrl+i", "tab"), (cs.key_name, "Ctrl+M", "enter"),
    (cs.key_name, "ctrl+b", "ctrl+b"), (cs.key_name, "F12", "f12"),
    (cs.prefix_key, "ctrl+a", "ctrl+a"), (cs.prefix_key, "f1", "f1"),
]


@pytest.mark.parametrize(("convert", "value", "result"), GOOD)
def test_what_passes_comes_back_canonical(convert, value, result):
    got = made(convert)(value)
    assert got == result and type(got) is type(result)


@pytest.mark.parametrize(("value", "shown", "kind"), [
    ("a\x1b", '"a\\u001b"', "string"), (True, "true", "boolean"), (False, "false", "boolean"),
    # json leaves C1 controls (\x9b opens a CSI on some terminals) and bidi raw.
    ("a\x9b2J\u202e", '"a\\x9b2J\\u202e"', "string"),
    (3, "3", "integer"), (1.5, "1.5", "float"), ([1], "[1]", "array"), ({}, "{}", "table"),
    (datetime.datetime(2026, 1, 2, 3, 4), "2026-01-02T03:04:00", "datetime"),
    (datetime.date(2026, 1, 2), "2026-01-02", "date"),
    (datetime.time(3, 4), "03:04:00", "time"), (None, "None", "NoneType"),
    # Tables and arrays as TOML writes them, not as Python prints them.
    ({"name": "x", "a b": ["\x1b", True]}, '{name = "x", "a b" = ["\\u001b", true]}', "table"),
])
def test_values_are_shown_escaped_with_their_toml_kind(value, shown, kind):
    assert (cs.show(value), cs.kind(value)) == (shown, kind)


def test_locations_quote_keys_toml_would_quote():
    assert cs.join("", "roles") == "roles"
    assert cs.join("roles[1]", "env_allow") == "roles[1].env_allow"
    assert cs.join("ui", "a b") == 'ui."a b"'
    assert cs.join("ui", "é") == 'ui."é"'


def test_a_report_prefixes_the_file_and_suggests_a_close_key():
    report = cs.Report("team.toml")
    report.unknown("ui.colour", "colour", {"color": 1, "theme": 2})
    report.unknown("ui.zzz", "zzz", {"color": 1})
    report.error("roles[1].name", "bad")
    assert report.warnings == ['team.toml:ui.colour: unknown key, ignored (did you mean "color"?)',
                               "team.toml:ui.zzz: unknown key, ignored"]
    with pytest.raises(cs.ConfigError) as failed:
        report.raise_if_errors()
    assert failed.value.errors == ["team.toml:roles[1].name: bad"]
    assert failed.value.warnings == tuple(report.warnings)
    assert str(failed.value) == f"team.toml:roles[1].name: bad\n{cs.HINT}"


def test_read_table_checks_every_key_and_keeps_the_good_ones():
    report = cs.Report("f.toml")
    schema = {"n": cs.integer(0), "s": cs.string,
              "t": cs.Nested(lambda raw, at, rep: dict(raw))}
    got = cs.read_table({"n": -1, "s": "ok", "t": [], "x": 1}, schema, "ui", report)
    assert got == {"s": "ok"}
    assert report.errors == ["f.toml:ui.n: must be at least 0, got -1",
                             "f.toml:ui.t: expected a table, got array []"]
    assert report.warnings == ["f.toml:ui.x: unknown key, ignored"]
    assert cs.read_table({"t": {"a": 1}}, schema, "", report) == {"t": {"a": 1}}


def test_a_bad_duration_is_quoted_with_its_c1_controls_escaped():
    with pytest.raises(ValueError) as refused:
        cs.optional_duration("\x9b2J")
    assert str(refused.value) == '"\\x9b2J" is not a duration (use 45m, 1h30m, 90s)'


@pytest.mark.parametrize(("value", "error"), [
    ("20.00", None), (5, None), ("$1000000000", None),
    (0, "must be greater than 0"), ("1e308", "must be at most 1,000,000,000 USD"),
    (2e9, "must be at most 1,000,000,000 USD"), ("inf", "must be a finite number"),
])
def test_a_budget_is_a_sane_amount_of_usd(value: object, error: str | None) -> None:
    """A budget of 1e308 dollars is a typo: refused in one sentence, not shown as 309 digits."""
    if error is None:
        assert cs.money(value) > 0
        return
    with pytest.raises(ValueError, match=error):
        cs.money(value)
