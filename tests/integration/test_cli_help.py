"""A CLI that helps: examples under every --help, "did you mean", shell
completion and a man page, all from the one command registry."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from choragos.cli import _parsers, man
from choragos.control import commands
from tests.integration.harness import base_env

pytestmark = pytest.mark.timeout(60)
BIN = Path(sys.executable).parent


def choragos(*args: str, cwd: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "choragos", *args], cwd=cwd,
                          env=base_env({"XDG_RUNTIME_DIR": str(cwd), **extra}),
                          capture_output=True, text=True, timeout=30)


@pytest.mark.parametrize("verb", list(commands.VERBS))
def test_every_verb_shows_an_example_under_its_help(verb: str) -> None:
    examples = commands.VERBS[verb].examples
    assert examples, f"{verb} declares no example"
    shown = _parsers.verb_parser(verb).format_help()
    assert all(f"  {line}\n" in shown for line in examples), shown


def test_a_mistyped_verb_option_or_choice_gets_a_suggestion(tmp_path: Path) -> None:
    verb = choragos("stauts", cwd=tmp_path)
    assert verb.returncode == 2
    assert "unknown command 'stauts' (did you mean status?)" in verb.stderr
    option = choragos("delegate", "--to", "coder", "--taks", "x", cwd=tmp_path)
    assert option.returncode == 2 and "(--taks: did you mean --task?)" in option.stderr
    choice = choragos("gate", "aprove", "T1", cwd=tmp_path)
    assert choice.returncode == 2 and "(aprove: did you mean approve?)" in choice.stderr
    nothing_close = choragos("ls", "--zzz", cwd=tmp_path)
    assert "did you mean" not in nothing_close.stderr


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_bash_completes_verbs_and_options_from_the_registry(tmp_path: Path) -> None:
    script = r'''
eval "$(choragos completion bash)"
complete_line() {
    COMP_LINE="$1"; COMP_POINT=${#COMP_LINE}; read -ra COMP_WORDS <<< "$1"
    COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); COMP_TYPE=9
    _python_argcomplete choragos "${COMP_WORDS[-1]}" "${COMP_WORDS[-2]}"
    printf '%s|' "${COMPREPLY[@]}"; echo
}
complete_line "choragos stat"
complete_line "choragos logs --fo"
complete_line "choragos gate appr"
complete_line "choragos logs co"
complete_line "choragos delegate --to "
'''
    (tmp_path / ".choragos.toml").write_text(
        '[[roles]]\nname = "lead"\ncommand = "claude"\nstart = true\n'
        '[[roles]]\nname = "coder"\ncommand = "claude"\n')
    env = base_env({"PATH": f"{BIN}:{os.environ['PATH']}"})
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=30)
    assert done.stdout.replace(" ", "").split() == [
        "status|", "--follow|", "approve|", "coder|", "lead|coder|"], done.stderr


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_zsh_and_fish_get_their_own_completion_code(shell: str, tmp_path: Path) -> None:
    done = choragos("completion", shell, cwd=tmp_path)
    assert done.returncode == 0 and "_ARGCOMPLETE" in done.stdout
    assert ("#compdef choragos" if shell == "zsh" else "complete --command choragos") \
        in done.stdout


def test_a_completion_request_never_runs_the_verb(tmp_path: Path) -> None:
    # what the shell sends at Tab after `choragos kill `: answered, nothing killed
    done = choragos("kill", cwd=tmp_path, _ARGCOMPLETE="1", COMP_LINE="choragos kill ",
                    COMP_POINT="14", _ARGCOMPLETE_IFS="\n")
    assert done.returncode == 1 and "no choragos session" not in done.stderr


def test_the_man_page_has_every_verb_its_options_and_examples(tmp_path: Path) -> None:
    page = man.page()
    for name in commands.VERBS:
        assert f'.SS "{name.replace("-", chr(92) + "-")}"' in page
    assert r"\-\-require\-live" in page and r"choragos delegate \-\-to coder" in page
    written = choragos("man", cwd=tmp_path)
    assert written.returncode == 0 and written.stdout == page
    if shutil.which("groff"):
        rendered = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z"], input=page,
                                  capture_output=True, text=True, timeout=30)
        assert rendered.returncode == 0 and rendered.stderr == ""
