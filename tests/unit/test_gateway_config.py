"""The ``[gateway]`` section and per-profile routing of a role's model traffic."""

from __future__ import annotations

from pathlib import Path

import pytest

from choragos.config.model import RoleSpec, Upstreams
from choragos.gateway.routing import routed, routing
from tests.unit.test_config import LEAD, fail, load

URL = "http://127.0.0.1:8787/agent/r"


def test_gateway_defaults_and_builtin_takes_the_sphragis_addr(tmp_path: Path) -> None:
    config = load(tmp_path, LEAD)
    assert not config.gateway.builtin and config.gateway.upstream == Upstreams()
    assert config.gateway.upstream.anthropic == "https://api.anthropic.com"
    config = load(tmp_path, LEAD + '[sphragis]\naddr = "127.0.0.1:9100"\n'
                              '[gateway]\nbuiltin = true\ntimeout = "90s"\n'
                              '[gateway.upstream]\nopenai = "http://127.0.0.1:5000/"\n')
    assert config.gateway.addr == config.sphragis.addr == "127.0.0.1:9100"
    assert config.gateway.timeout == 90.0 and config.sphragis.fail_closed
    assert config.gateway.upstream.openai == "http://127.0.0.1:5000"


def test_gateway_addr_becomes_the_address_the_session_scrapes(tmp_path: Path) -> None:
    config = load(tmp_path, LEAD + '[gateway]\nbuiltin = true\naddr = "127.0.0.1:9200"\n')
    assert config.sphragis.base_url == "http://127.0.0.1:9200" and not config.warnings


def test_a_builtin_gateway_beyond_loopback_warns(tmp_path: Path) -> None:
    config = load(tmp_path, LEAD + '[gateway]\nbuiltin = true\naddr = "0.0.0.0:8787"\n')
    assert len(config.warnings) == 1
    assert config.warnings[0].startswith(".choragos.toml:gateway.addr: the built-in gateway "
                                         'listens on "0.0.0.0:8787", beyond this machine')


def test_metrics_beyond_loopback_warn_as_the_gateway_does(tmp_path: Path) -> None:
    config = load(tmp_path, LEAD + '[metrics]\nlisten = "0.0.0.0:9464"\n')
    assert config.warnings == (
        '.choragos.toml:metrics.listen: the session\'s metrics listen on "0.0.0.0:9464", '
        "beyond this machine: anyone who reaches it can read the crew's roles, tasks, "
        "tokens and costs",)
    for local in ("127.0.0.1:9464", "localhost:9464", "[::1]:9464"):
        assert not load(tmp_path, LEAD + f'[metrics]\nlisten = "{local}"\n').warnings


@pytest.mark.parametrize("text,where,message", [
    ('[sphragis]\nenabled = false\n[gateway]\nbuiltin = true\n', "gateway.builtin",
     "conflicts with [sphragis] enabled = false"),
    ('[sphragis]\naddr = "127.0.0.1:1"\n[gateway]\nbuiltin = true\naddr = "127.0.0.1:2"\n',
     "gateway.addr", "differs from [sphragis] addr"),
    ('[gateway.upstream]\nanthropic = "ftp://x"\n', "gateway.upstream.anthropic",
     "is not an http:// or https:// URL"),
    ('[gateway.upstream]\ngemini = "https://k:s@h"\n', "gateway.upstream.gemini",
     "no credentials in the URL"),
    ('[gateway.upstream]\nopenai = "https://h/v1?x=1"\n', "gateway.upstream.openai",
     "no query or fragment"),
    ('[gateway]\nbuiltin = "yes"\n', "gateway.builtin", "expected true or false"),
    ('[gateway]\naddr = "nowhere"\n', "gateway.addr", "is not host:port"),
])
def test_bad_gateway_settings_are_clear_errors(tmp_path: Path, text: str, where: str,
                                               message: str) -> None:
    errors = fail(tmp_path, LEAD + text)
    assert len(errors) == 1 and errors[0].startswith(f".choragos.toml:{where}: "), errors
    assert message in errors[0]


@pytest.mark.parametrize("command,env,args", [
    ("claude", {"ANTHROPIC_BASE_URL": URL}, ()),
    ("/opt/bin/gemini", {"GOOGLE_GEMINI_BASE_URL": URL}, ()),
    ("python3", {"ANTHROPIC_BASE_URL": URL}, ()),
])
def test_routing_defaults_follow_the_agent_profile(command: str, env: dict, args: tuple) -> None:
    assert routing(RoleSpec("r", command), URL) == (env, args)


def test_codex_gets_a_provider_on_its_command_line_after_its_own_args() -> None:
    spec = routed(RoleSpec("r", "codex", args=("--sandbox", "read-only"), model="gpt-x"), URL)
    assert routing(RoleSpec("r", "codex"), URL)[0] == {}
    assert spec.argv() == [
        "codex", "--sandbox", "read-only",
        "-c", 'model_providers.choragos={ name = "choragos gateway", '
              f'base_url = "{URL}/v1", wire_api = "responses", env_key = "OPENAI_API_KEY" }}',
        "-c", 'model_provider="choragos"', "--model", "gpt-x"]


def test_written_base_url_env_wins_and_adds_no_arguments() -> None:
    spec = RoleSpec("r", "codex", base_url_env=("OPENAI_BASE_URL",))
    assert routing(spec, URL) == ({"OPENAI_BASE_URL": URL}, ())
    assert routed(spec, URL) is spec
    assert routing(RoleSpec("r", "claude", base_url_env=()), URL) == ({}, ())


def test_doctor_says_the_session_runs_a_builtin_gateway(tmp_path: Path) -> None:
    from choragos.cli.doctor import _gateway

    check = _gateway(load(tmp_path, LEAD + '[gateway]\nbuiltin = true\n'))
    assert check.level == "OK"
    assert check.message == "gateway: built in; the session runs it on 127.0.0.1:8787"


def test_with_a_role_key_the_url_carries_it_and_codex_takes_it_from_a_variable() -> None:
    key = "0123456789abcdef" * 2
    env, args = routing(RoleSpec("r", "claude"), URL, key)
    assert env == {"ANTHROPIC_BASE_URL": f"{URL}/{key}"} and args == ()
    env, args = routing(RoleSpec("r", "x", base_url_env=("A", "B")), URL, key)
    assert env == {"A": f"{URL}/{key}", "B": f"{URL}/{key}"}
    env, args = routing(RoleSpec("r", "codex"), URL, key)
    # Not in the arguments, which every local user can read in /proc.
    assert env == {"CHORAGOS_GATEWAY_KEY": key} and key not in "".join(args)
    assert (f'base_url = "{URL}/v1", wire_api = "responses", env_key = "OPENAI_API_KEY", '
            'env_http_headers = { "X-Choragos-Key" = "CHORAGOS_GATEWAY_KEY" } }') in args[1]
    # An external gateway knows no keys: the documented URL shape, unchanged.
    assert routing(RoleSpec("r", "claude"), URL) == ({"ANTHROPIC_BASE_URL": URL}, ())
    assert "env_http_headers" not in routing(RoleSpec("r", "codex"), URL)[1][1]


def test_a_role_key_is_made_from_the_session_key_and_the_role_only() -> None:
    from choragos.gateway.roles import Roles, role_key

    one, two = bytes(32), bytes(range(32))
    assert role_key(one, "coder") == role_key(one, "coder") != role_key(two, "coder")
    assert role_key(one, "coder") != role_key(one, "reviewer")
    roles = Roles(one)
    good = roles.caller(f"/agent/coder/{role_key(one, 'coder')}/v1/messages", None)
    assert (good.role, good.rest, good.shown, good.refusal) == (
        "coder", "/v1/messages", "/agent/coder/…/v1/messages", "")
    assert roles.caller("/agent/coder/v1/messages", role_key(one, "coder")).refusal == ""
    assert roles.caller("/agent/coder/v1/messages", role_key(one, "x")).role == "(unknown)"
    assert roles.caller("/v1/messages", None) is None
    assert Roles().caller("/agent/anyone/v1/messages", None).role == "anyone"
