"""A role's ``command`` written as a whole command line says where its words go."""

from __future__ import annotations

import pytest

from choragos.terminal.ptyproc import SpawnError, resolve_command


@pytest.mark.parametrize("command", ["sh -c 'seq 1 5; exec sleep 600'", "/usr/bin/env claude"])
def test_a_command_line_in_command_points_at_args(tmp_path, command):
    """The spawn failed with "not found on PATH" alone: true, but the fix
    (the words after the program go in ``args``) was the operator's to guess."""
    with pytest.raises(SpawnError) as failed:
        resolve_command(command, {"PATH": "/usr/bin:/bin"}, tmp_path)
    first = command.split()[0]
    assert f'command = "{first}", args = [...]' in str(failed.value)


def test_a_plain_missing_program_gets_no_hint(tmp_path):
    with pytest.raises(SpawnError) as failed:
        resolve_command("no-such-agent-cli", {"PATH": "/usr/bin:/bin"}, tmp_path)
    assert "args" not in str(failed.value)
