"""A shell seat is shown choragos's lines and runs none of them: the brief
and a notice full of shell syntax go in as a comment (or, for zsh, as the
quoted argument of ``:``), in a real shell in a real PTY."""

from __future__ import annotations

import shutil

import pytest

from choragos.actors import messages as m
from tests.conftest import wait_until
from tests.integration.test_role_actor import start_role, stop_role

pytestmark = pytest.mark.timeout(60)

HOSTILE = ("Report with `touch ticked` and $(touch dollar) ; touch semi | touch pipe "
           "&& touch and > redirected 'quoted' it's done")
LEFT_BEHIND = ("ticked", "dollar", "semi", "pipe", "and", "redirected")


def squeezed(text: str) -> str:
    """Without whitespace: a line the terminal wrapped reads whole."""
    return "".join(text.split())


def run_shell_seat(tmp_path, command: str, args: tuple[str, ...], **spec_keys) -> str:
    """The shell's screen (squeezed) after its brief and a hostile notice were typed in."""
    env = {"PS1": "$ ", "HOME": str(tmp_path), "ENV": "/dev/null", "TERM": "xterm-256color"}
    role = start_role(tmp_path, command, args, env, prompt_template="Say `touch briefed`",
                      **spec_keys)
    try:
        wait_until(lambda: role.core.outcomes(), 30, message="the boot brief")
        assert role.core.outcomes()[0].ok, role.core.outcomes()[0]
        role.handle.tell(m.Inject(m.Injection(7, "coder", HOSTILE, "notice")))
        wait_until(lambda: len(role.core.outcomes()) == 2, 30, message="the notice")
        assert role.core.outcomes()[1].ok, role.core.outcomes()[1]
        role.handle.tell(m.TypeKeys("touch typed-by-the-operator", ("enter",)))
        wait_until(lambda: (tmp_path / "typed-by-the-operator").exists(), 15,
                   message="the operator's own command to run")
        return squeezed("".join(role.state.terminal.whole_display()))
    finally:
        stop_role(role)


@pytest.mark.parametrize("args", [("--norc", "--noprofile"), ("-i",)])
def test_a_bash_seat_shows_the_brief_and_notices_as_comments(tmp_path, args):
    screen = run_shell_seat(tmp_path, "bash", args)
    assert squeezed("# Say `touch briefed` You are the coder role") in screen
    assert squeezed(f"# {HOSTILE}") in screen
    assert not [name for name in ("briefed", *LEFT_BEHIND) if (tmp_path / name).exists()]


@pytest.mark.skipif(shutil.which("dash") is None, reason="dash is not installed")
def test_the_quoted_form_is_inert_too_even_with_single_quotes(tmp_path):
    # The form zsh gets (comments are off in an interactive zsh by default),
    # tried in dash, whose quoting is the same.
    screen = run_shell_seat(tmp_path, "dash", ("-i",), agent="zsh")
    assert squeezed(": 'Report with `touch ticked`") in screen
    assert squeezed("it'\\''s done'") in screen
    assert not [name for name in ("briefed", *LEFT_BEHIND) if (tmp_path / name).exists()]
