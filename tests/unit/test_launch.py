"""The one function that says how a role is launched."""

from pathlib import Path

import pytest

from choragos.config.model import RoleSpec
from choragos.roles import selfpath
from choragos.roles.launch import LaunchContext, launch

WORKDIR = Path("/proj")
SOCK = Path("/run/choragos-0/abc.sock")
BASE = {"PATH": "/usr/bin:/bin", "HOME": "/home/u", "SECRET_TOKEN": "s3cret", "LANG": "C"}


def ctx(gateway: bool = False) -> LaunchContext:
    url = (lambda role: f"http://127.0.0.1:9/agent/{role}") if gateway else None
    return LaunchContext(WORKDIR, SOCK, BASE, url)


def test_plain_role_gets_the_verbs_environment_and_the_project_dir() -> None:
    got = launch(RoleSpec(name="coder", command="claude", model="opus"), ctx())
    assert got.argv == ["claude", "--model", "opus"]
    assert got.cwd == WORKDIR
    assert got.profile.name == "claude"
    assert got.env["CHORAGOS_SOCK"] == str(SOCK)
    assert got.env["CHORAGOS_ROLE"] == "coder"
    assert got.env["CHORAGOS_DIR"] == str(WORKDIR)
    assert got.env["PATH"].split(":")[0] == str(selfpath.bin_dir(WORKDIR))
    assert "ANTHROPIC_BASE_URL" not in got.env


def test_worktree_is_the_working_directory() -> None:
    tree = Path("/proj/.choragos/worktrees/coder")
    assert launch(RoleSpec(name="coder", command="sh"), ctx(), tree).cwd == tree


@pytest.mark.parametrize(("command", "variable"), [
    ("claude", "ANTHROPIC_BASE_URL"),
    ("gemini", "GOOGLE_GEMINI_BASE_URL"),
])
def test_gateway_url_goes_to_the_variable_the_cli_reads(command: str, variable: str) -> None:
    got = launch(RoleSpec(name="r1", command=command), ctx(gateway=True))
    assert got.env[variable] == "http://127.0.0.1:9/agent/r1"
    assert got.argv == [command]


def test_codex_gets_its_provider_on_the_command_line_after_its_own_args() -> None:
    got = launch(RoleSpec(name="r2", command="codex", args=("--full-auto",)),
                 ctx(gateway=True))
    assert got.argv[:2] == ["codex", "--full-auto"]
    assert any("http://127.0.0.1:9/agent/r2/v1" in arg for arg in got.argv)


def test_allowlist_and_deny_shape_the_environment_but_never_cut_the_verbs_off() -> None:
    spec = RoleSpec(name="w", command="sh", env_allow=("LANG",),
                    env_deny=("CHORAGOS_*", "PATH"))
    got = launch(spec, ctx())
    assert "SECRET_TOKEN" not in got.env
    assert got.env["LANG"] == "C"
    assert got.env["CHORAGOS_SOCK"] == str(SOCK)
    assert got.env["CHORAGOS_ROLE"] == "w"
    assert "CHORAGOS_DIR" not in got.env  # a convenience env_deny may drop
    assert got.env["PATH"].startswith(str(selfpath.bin_dir(WORKDIR)))


def test_launch_is_pure() -> None:
    spec = RoleSpec(name="coder", command="claude")
    context = ctx(gateway=True)
    assert launch(spec, context) == launch(spec, context)
    assert BASE == {"PATH": "/usr/bin:/bin", "HOME": "/home/u", "SECRET_TOKEN": "s3cret",
                    "LANG": "C"}


def test_with_the_sessions_gateway_each_role_carries_its_own_key() -> None:
    keyed = LaunchContext(WORKDIR, SOCK, BASE, lambda role: f"http://127.0.0.1:9/agent/{role}",
                          lambda role: f"key-of-{role}")
    got = launch(RoleSpec(name="r1", command="claude"), keyed)
    assert got.env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9/agent/r1/key-of-r1"
    # Codex: never on its command line, which any local user can read.
    got = launch(RoleSpec(name="r2", command="codex"), keyed)
    assert got.env["CHORAGOS_GATEWAY_KEY"] == "key-of-r2"
    assert not any("key-of-r2" in arg for arg in got.argv)
    # env_deny cannot cut a role off from its key.
    got = launch(RoleSpec(name="r2", command="codex", env_deny=("CHORAGOS_*",)), keyed)
    assert got.env["CHORAGOS_GATEWAY_KEY"] == "key-of-r2"
