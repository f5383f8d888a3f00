"""A role's environment holds exactly what its policy allows."""

from __future__ import annotations

import pytest

from choragos.config.envpolicy import BASELINE, build_env, matches, validate_pattern

DECK_ENV = {
    "PATH": "/usr/bin", "HOME": "/home/u", "USER": "u", "LOGNAME": "u", "SHELL": "/bin/sh",
    "TERM": "xterm-256color", "COLORTERM": "truecolor", "LANG": "C.UTF-8",
    "LANGUAGE": "en", "LC_ALL": "C", "LC_CTYPE": "C", "TZ": "UTC", "TMPDIR": "/tmp",
    "XDG_RUNTIME_DIR": "/run/user/1", "XDG_CONFIG_HOME": "/home/u/.config",
    "ANTHROPIC_API_KEY": "sk-a", "GEMINI_API_KEY": "g", "GOOGLE_CLOUD_PROJECT": "p",
    "GOOGLE": "bare", "AWS_SECRET_ACCESS_KEY": "s", "AWS_REGION": "r",
    "GITHUB_TOKEN": "ghp", "SSH_AUTH_SOCK": "/tmp/agent", "HTTPS_PROXY": "http://u:p@proxy",
    "DISPLAY": ":0", "TERM_PROGRAM": "iTerm.app", "PWD": "/work", "EDITOR": "vim",
}
INJECT = {"CHORAGOS_SOCK": "/tmp/c.sock", "CHORAGOS_ROLE": "coder"}
BASELINE_NAMES = {
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "COLORTERM", "LANG", "LANGUAGE",
    "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME",
}


@pytest.mark.parametrize("pattern", ["PATH", "GOOGLE_*", "LC_*", "_X", "http_proxy", "A*", "x1"])
def test_valid_patterns(pattern: str) -> None:
    assert validate_pattern(pattern) is None


@pytest.mark.parametrize(("pattern", "fragment"), [
    ("*", "every variable"),
    ("A*B", "only one"),
    ("A**", "only one"),
    ("*_KEY", "only one"),
    ("FOO-BAR", "not a variable name"),
    ("1ABC", "not a variable name"),
    ("", "not a variable name"),
    ("A B", "not a variable name"),
    ("A=B", "not a variable name"),
    (5, "expected a variable name"),
])
def test_invalid_patterns_say_why(pattern: object, fragment: str) -> None:
    assert fragment in (validate_pattern(pattern) or "")


def test_matches_exact_and_prefix() -> None:
    assert matches("PATH", ["PATH"])
    assert not matches("PATHX", ["PATH"])
    assert matches("GOOGLE_API_KEY", ["GOOGLE_*"])
    assert matches("GOOGLE_", ["GOOGLE_*"])
    assert not matches("GOOGLE", ["GOOGLE_*"])  # the prefix is literal, "_" included
    assert matches("GOOGLE", ["GOOGLE*"])
    assert not matches("google_api_key", ["GOOGLE_*"])  # case-sensitive, like the env
    assert not matches("X", [])


def test_inherit_mode_passes_everything_through() -> None:
    env = build_env(DECK_ENV, allow=[], deny=[], inject=INJECT)
    assert env == {**DECK_ENV, **INJECT}


def test_inherit_mode_applies_deny() -> None:
    env = build_env(DECK_ENV, allow=[], deny=["AWS_*", "GITHUB_TOKEN"], inject=INJECT)
    assert not {"AWS_SECRET_ACCESS_KEY", "AWS_REGION", "GITHUB_TOKEN"} & env.keys()
    assert env["ANTHROPIC_API_KEY"] == "sk-a"


def test_allow_mode_is_baseline_plus_the_list() -> None:
    env = build_env(DECK_ENV, allow=["ANTHROPIC_API_KEY"], deny=[], inject=INJECT)
    assert set(env) == BASELINE_NAMES | {"ANTHROPIC_API_KEY"} | set(INJECT)


def test_allow_mode_prefix_wildcard() -> None:
    env = build_env(DECK_ENV, allow=["GEMINI_API_KEY", "GOOGLE_*"], deny=[], inject={})
    assert {"GEMINI_API_KEY", "GOOGLE_CLOUD_PROJECT"} <= env.keys()
    assert "GOOGLE" not in env
    assert "ANTHROPIC_API_KEY" not in env


def test_deny_beats_allow() -> None:
    env = build_env(DECK_ENV, allow=["GOOGLE_*"], deny=["GOOGLE_CLOUD_PROJECT"], inject={})
    assert "GOOGLE_CLOUD_PROJECT" not in env


def test_deny_can_strip_baseline() -> None:
    env = build_env(DECK_ENV, allow=["X"], deny=["XDG_*"], inject={})
    assert not any(name.startswith("XDG_") for name in env)
    assert "PATH" in env


def test_credentials_and_capabilities_are_not_baseline() -> None:
    env = build_env(DECK_ENV, allow=["NOTHING_HERE"], deny=[], inject={})
    for name in ("ANTHROPIC_API_KEY", "AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "SSH_AUTH_SOCK",
                 "HTTPS_PROXY", "DISPLAY", "TERM_PROGRAM", "PWD", "EDITOR"):
        assert name not in env, name


def test_baseline_patterns_are_themselves_valid() -> None:
    assert all(validate_pattern(p) is None for p in BASELINE)


@pytest.mark.parametrize(("allow", "deny"), [([], []), (["X"], []), ([], ["CHORAGOS_*"]),
                                             (["X"], ["CHORAGOS_SOCK", "CHORAGOS_ROLE"])])
def test_inject_is_always_present(allow: list[str], deny: list[str]) -> None:
    base = {**DECK_ENV, "CHORAGOS_SOCK": "/stale.sock"}
    env = build_env(base, allow=allow, deny=deny, inject=INJECT)
    assert env["CHORAGOS_SOCK"] == "/tmp/c.sock"
    assert env["CHORAGOS_ROLE"] == "coder"


def test_base_is_not_modified() -> None:
    base = dict(DECK_ENV)
    build_env(base, allow=["X"], deny=["AWS_*"], inject=INJECT)
    assert base == DECK_ENV
