"""A Claude Code role's own conversation id: chosen, kept, resumed, moved with its state."""

from __future__ import annotations

import json
import stat
import uuid
from pathlib import Path

import pytest

from choragos.board import journal
from choragos.roles import conversations


@pytest.mark.parametrize("argv", [
    ["claude", "--continue"], ["claude", "-c"], ["claude", "--resume", "x"], ["claude", "-r"],
    ["claude", "--session-id", "u"], ["claude", "--session-id=u"], ["claude", "--resume=u"],
    ["sh", "-c", "claude"], ["/bin/bash", "-lc", "exec claude"],
    ["env", "A=1", "zsh", "-ic", "claude"],
])
def test_a_command_that_picks_its_conversation_or_runs_a_shell_gets_nothing(argv) -> None:
    assert conversations.chooses_its_own(argv)


@pytest.mark.parametrize("argv", [
    ["claude"], ["npx", "@anthropic-ai/claude-code", "--model", "sonnet"],
    ["claude", "--allowedTools", "Bash", "--verbose"], ["env", "A=1", "claude"],
])
def test_a_plain_claude_command_gets_an_id(argv) -> None:
    assert not conversations.chooses_its_own(argv)


def test_each_start_gets_a_new_id_until_a_briefed_one_is_resumed(tmp_path: Path) -> None:
    flag, first = conversations.start_args(tmp_path, "coder", resumed=False)
    assert flag == "--session-id" and str(uuid.UUID(first)) == first
    path = conversations.path_for(tmp_path, "coder")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    # Never briefed: Claude Code would refuse to resume it, so a new id instead.
    flag, second = conversations.start_args(tmp_path, "coder", resumed=True)
    assert flag == "--session-id" and second != first
    conversations.mark_used(tmp_path, "coder", second)
    assert conversations.start_args(tmp_path, "coder", resumed=True) == ["--resume", second]
    # A restart within the session (not resumed) starts a new conversation.
    flag, third = conversations.start_args(tmp_path, "coder", resumed=False)
    assert flag == "--session-id" and third not in (first, second)
    # Roles are kept apart.
    conversations.mark_used(tmp_path, "coder", third)
    assert conversations.saved(tmp_path, "lead") is None
    assert conversations.saved(tmp_path, "coder") == third


@pytest.mark.parametrize("content", ["", "{", "[]", '{"id": "not-a-uuid", "used": true}',
                                     '{"id": 7, "used": true}'])
def test_a_damaged_record_starts_a_new_conversation(tmp_path: Path, content: str) -> None:
    path = conversations.path_for(tmp_path, "coder")
    path.parent.mkdir(parents=True)
    path.write_text(content)
    flag, new = conversations.start_args(tmp_path, "coder", resumed=True)
    assert flag == "--session-id"
    assert json.loads(path.read_text()) == {"id": new, "used": False}


def test_the_ids_move_with_a_state_kept_aside(tmp_path: Path) -> None:
    home, kept = journal.state_dir(tmp_path), tmp_path / "kept"
    conversations.mark_used(tmp_path, "coder", str(uuid.uuid4()))
    saved = conversations.saved(tmp_path, "coder")
    journal.move_state(home, kept)
    assert conversations.saved(tmp_path, "coder") is None
    conversations.mark_used(tmp_path, "coder", str(uuid.uuid4()))  # a later session's
    journal.move_state(kept, home)
    assert conversations.saved(tmp_path, "coder") == saved
