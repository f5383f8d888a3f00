"""The real Claude Code TUI in a PTY, read through pyte, against the fake model.

These tests pin down the facts choragos relies on for ``command = "claude"``
(docs/agents.md): how it boots, how typed text and Enter must be sent, and
what working / waiting / idle look like on screen.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from choragos.agents.profiles import CLAUDE
from choragos.agents.screenstatus import (
    IDLE,
    WAITING,
    WORKING,
    activity_preview,
    classify,
    find_input_box,
    input_landed,
    input_pending,
)
from tests.conftest import wait_until
from tests.e2e.claudeenv import FAKE_KEY, Terminal, claude_version, saved_reply
from tests.e2e.fakemodel import FakeModel, text, tool, turn_of

pytestmark = [pytest.mark.claude, pytest.mark.timeout(90)]

StartClaude = Callable[..., Terminal]
LONG = ("Read the file .choragos/worker-task-coder.md and do what it says; when done run "
        "choragos work-done exactly as the file instructs you to, with the id and a summary.")


def status_is(state: str) -> Callable[[list[str]], bool]:
    return lambda lines: classify(lines, CLAUDE) == state


def approve(terminal: Terminal, tries: int = 3) -> None:
    """Answer the permission dialog on screen with its preselected "Yes".
    Claude Code draws the dialog before it reads its keys, and a busy
    machine shows the gap (an Enter dropped): one that did not close the
    dialog is sent again."""
    for _ in range(tries):
        terminal.write("\r")
        try:
            terminal.wait_for(lambda ls: not status_is(WAITING)(ls), 5, "the dialog answered")
            return
        except AssertionError:
            continue
    raise AssertionError(f"the dialog took none of {tries} Enters")


def booted(claude_tui: StartClaude, **options: object) -> Terminal:
    terminal = claude_tui(**options)
    terminal.wait_for(status_is(IDLE), timeout=30, what="the idle prompt")
    return terminal


def test_boots_to_an_idle_prompt_with_bracketed_paste(claude_tui: StartClaude,
                                                      fake_model: FakeModel,
                                                      claude_bin: Path) -> None:
    assert claude_version(claude_bin).endswith("(Claude Code)")
    terminal = booted(claude_tui)
    lines = terminal.lines()
    assert any("? for shortcuts" in line for line in lines)
    assert find_input_box(lines) is not None
    assert activity_preview(lines, CLAUDE) == []
    assert terminal.bracketed_paste
    assert terminal.feed_errors == 0
    # Booting needs no model call; only a reachability probe of the base URL.
    assert not fake_model.message_requests(with_tools=False)


def test_typed_text_then_separate_enter_reaches_the_model(claude_tui: StartClaude,
                                                          fake_model: FakeModel) -> None:
    terminal = booted(claude_tui)
    terminal.type_text("please list the files")
    terminal.wait_for(lambda ls: input_pending(ls, "please list the files"), 10,
                      "the text in the input box")
    terminal.write("\r")
    request = fake_model.wait_for_user_message("please list the files", timeout=20)
    assert request.headers["x-api-key"] == FAKE_KEY
    assert request.query == "beta=true" and request.body["stream"] is True
    # The request can leave before the screen is redrawn: wait for the reply.
    lines = terminal.wait_for(
        lambda ls: status_is(IDLE)(ls) and "● ok" in activity_preview(ls, CLAUDE), 20,
        "idle with the reply")
    assert input_landed(lines, "please list the files")
    assert not input_pending(lines, "please list the files")


def test_text_and_enter_in_one_write_is_a_paste_that_does_not_submit(
        claude_tui: StartClaude, fake_model: FakeModel) -> None:
    terminal = booted(claude_tui)
    terminal.write(LONG + "\r")
    # The Enter became a newline inside the box: an empty last line.
    terminal.wait_for(lambda ls: input_pending(ls, LONG) and find_input_box(ls).content[-1] == "",
                      10, "the swallowed Enter")
    assert not fake_model.message_requests()
    terminal.write("\r")
    fake_model.wait_for_user_message(LONG, timeout=20)
    terminal.wait_for(status_is(IDLE), 20, "idle after the reply")
    assert sum(LONG in m for m in fake_model.user_messages()) == 1


def test_bracketed_paste_then_enter_submits(claude_tui: StartClaude,
                                            fake_model: FakeModel) -> None:
    terminal = booted(claude_tui)
    terminal.submit(LONG + " \x1b[31m", paste=True)  # ESC is stripped before pasting
    request = fake_model.wait_for_user_message(LONG, timeout=20)
    assert "\x1b" not in turn_of(request).text


def test_streaming_reply_is_working_then_idle(claude_tui: StartClaude,
                                              fake_model: FakeModel) -> None:
    fake_model.on("slowly", text("Here is a slow answer, streamed in pieces."), delay=4)
    terminal = booted(claude_tui)
    terminal.submit("please answer slowly")
    lines = terminal.wait_for(status_is(WORKING), 15, "the working state")
    assert any("esc to interrupt" in line for line in lines)
    terminal.wait_for(status_is(IDLE), 30, "idle after the stream")
    assert activity_preview(terminal.lines(), CLAUDE)[-1] == (
        "● Here is a slow answer, streamed in pieces.")


def test_text_sent_while_working_is_queued_for_after_the_turn(
        claude_tui: StartClaude, fake_model: FakeModel) -> None:
    fake_model.on("slowly", text("slow answer"), delay=4)
    terminal = booted(claude_tui)
    terminal.submit("please answer slowly")
    terminal.wait_for(status_is(WORKING), 15, "the working state")
    terminal.submit("then read the task file")
    terminal.wait_for(lambda ls: input_landed(ls, "then read the task file")
                      and not input_pending(ls, "then read the task file"), 10, "the queue")
    assert status_is(WORKING)(terminal.lines())
    fake_model.wait_for_user_message("then read the task file", timeout=30)
    assert fake_model.user_messages()[0] == "please answer slowly"


def test_keys_typed_into_a_dialog_answer_it(claude_tui: StartClaude,
                                            fake_model: FakeModel) -> None:
    # Why choragos never delivers to a waiting role: the Enter picks "Yes".
    fake_model.on("run the check", tool("Bash", {"command": "sh -c 'echo check-$((6*7))'"}))
    terminal = booted(claude_tui)
    terminal.submit("run the check")
    terminal.wait_for(status_is(WAITING), 20, "the permission dialog")
    terminal.submit("a task typed into the dialog", echo=False)
    fake_model.wait_for_user_message("check-42", timeout=20)
    terminal.wait_for(status_is(IDLE), 20, "idle after the tool call")
    assert not any("typed into the dialog" in m for m in fake_model.user_messages())


def test_bash_without_a_rule_waits_and_approval_sends_the_result(
        claude_tui: StartClaude, fake_model: FakeModel) -> None:
    fake_model.on("run the check", tool("Bash", {"command": "sh -c 'echo check-$((6*7))'",
                                                 "description": "Run the check"}))
    fake_model.on("check-42", text("The check printed 42."))
    terminal = booted(claude_tui)
    terminal.submit("run the check")
    lines = terminal.wait_for(status_is(WAITING), 20, "the permission dialog")
    assert any("Do you want to proceed?" in line for line in lines)
    assert activity_preview(lines, CLAUDE)[-1] == "⎿  Waiting…"
    approve(terminal)  # option 1, "Yes", is preselected
    request = fake_model.wait_for_user_message("check-42", timeout=20)
    assert turn_of(request).tool_text == "check-42"
    terminal.wait_for(status_is(IDLE), 20, "idle after the tool call")
    terminal.wait_for(lambda ls: "● The check printed 42." in activity_preview(ls, CLAUDE),
                      10, "the final reply")


def test_allowed_protocol_verb_runs_without_a_dialog(claude_tui: StartClaude,
                                                     fake_model: FakeModel) -> None:
    fake_model.on("report back", tool("Bash", {"command": "choragos work-done --help",
                                               "description": "Show the verb's help"}))
    terminal = booted(claude_tui)
    terminal.submit("report back")
    # No key is pressed: a dialog would block this tool result forever.
    request = fake_model.wait_for_request(lambda r: r.has_tools and bool(turn_of(r).tool_text),
                                          timeout=30)
    assert "work-done" in turn_of(request).tool_text
    terminal.wait_for(status_is(IDLE), 20, "idle after the tool call")


def test_sigterm_exits_143_and_restores_the_terminal(claude_tui: StartClaude,
                                                     fake_model: FakeModel) -> None:
    terminal = booted(claude_tui)
    terminal.submit("hello")
    fake_model.wait_for_user_message("hello", timeout=20)
    terminal.wait_for(lambda ls: "● ok" in activity_preview(ls, CLAUDE), 20, "the reply")
    # Claude names the way back only for a conversation it has saved, and on
    # a loaded machine the save can trail the reply on the screen.
    wait_until(lambda: saved_reply(terminal.home, '"ok"'), 20,
               message="the conversation saved")
    status = terminal.close()
    assert status == 143
    assert not terminal.bracketed_paste
    # With a conversation to resume, it says how on its way out.
    assert any("claude --resume" in line for line in terminal.lines())
