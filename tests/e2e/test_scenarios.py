"""The whole product with the real Claude Code CLI in every seat (issue 3).

Each scenario runs a real ``choragos serve --headless`` in a temp git repo;
every role is a real claude talking to the scripted fake model, and the
scripts play the models' part: the orchestrator's model delegates with a
Bash tool call, the coder's model reads its task file, writes files and
reports with ``choragos work-done``.  What the tests check is what choragos
did with the real TUI: the events, the board, the status, and what each
model was told.
"""

from __future__ import annotations

import json
import os
import re
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from choragos.agents.profiles import CLAUDE, profile_for
from choragos.roles import briefs
from tests.conftest import pid_alive
from tests.e2e.claudeenv import FAKE_KEY
from tests.e2e.fakemodel import FakeModel, Turn, text, tool
from tests.e2e.scenario import (
    BRIEF,
    ClaudeCrew,
    claude_role,
    holds_for,
    processes_with_env,
)

pytestmark = [pytest.mark.claude, pytest.mark.timeout(90)]

StartCrew = Callable[..., ClaudeCrew]
BOOT_TIMEOUT = 40  # three claudes starting at once on two busy cores
# Over 800 characters, so Claude shows the typed report as "[Pasted text #1]".
LONG_SUMMARY = "Wrote hello.txt. " + " ".join(f"check-{n:03d} passed;" for n in range(50))


def bash(command: str, description: str = "Run a command") -> list[dict]:
    return tool("Bash", {"command": command, "description": description})


def tool_said(*needles: str) -> Callable[[Turn], bool]:
    """A rule matching a tool result that contains every one of ``needles``."""
    return lambda turn: all(needle in turn.tool_text for needle in needles)


def index_of(events: list[dict], match: Callable[[dict], bool]) -> int:
    return next(i for i, event in enumerate(events) if match(event))


def assert_loop_order(events: list[dict]) -> None:
    """T1 went delegate, checkpoint, delivered, work-done; the report waited for idle."""
    order = [index_of(events, lambda e, name=name: e["event"] == name and e.get("task") == "T1")
             for name in ("delegate", "checkpoint", "delivered", "work-done")]
    assert order == sorted(order), order
    after = events[order[-1]:]
    idle = index_of(after, lambda e: e["event"] == "role state"
                    and e["role"] == "orchestrator" and e["state"] == "idle")
    report = index_of(after, lambda e: e["event"] == "injection" and e["kind"] == "report")
    assert idle < report, after


def assert_typed_with_a_split_enter(events: list[dict]) -> None:
    """Every line went in as a bracketed paste, its Enter alone once the echo
    showed and the pane was quiet, and that first Enter submitted it (one
    read with the text as a paste would have been a newline)."""
    typed = [e for e in events if e["event"] in ("injection", "boot injection")]
    assert typed, "nothing was typed"
    for event in typed:
        assert event["ok"] and "pasted (bracketed paste)" in event["detail"], event
        delay = re.search(r"Enter (\d+\.\d+)s after the text", event["detail"])
        assert delay and float(delay.group(1)) >= round(CLAUDE.enter_quiet, 2), event
        assert "submitted after 1 enter" in event["detail"], event


def environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


def test_boot_briefs_every_claude_on_its_screen(crew: StartCrew, claude_bin: Path,
                                                fake_model: FakeModel) -> None:
    # Both ways of naming the CLI get the Claude profile.
    assert profile_for(str(claude_bin)) is CLAUDE and profile_for("claude") is CLAUDE
    roles = {"orchestrator": str(claude_bin), "coder": "claude", "reviewer": str(claude_bin)}
    s = crew("".join(claude_role(name, command, start=name == "orchestrator")
                     for name, command in roles.items()))
    s.wait_booted(list(roles), timeout=BOOT_TIMEOUT)
    for role in roles:
        boots = s.boot_injections(role)
        assert len(boots) == 1 and boots[0]["ok"], boots
        line = briefs.boot_line(role, "", f".choragos/briefs/{role}.md")
        s.wait_told(line)
        # Exactly the line: the paste markers were taken as markers, not as text.
        assert line in fake_model.user_messages(), fake_model.user_messages()
        assert s.times_told(BRIEF.format(role=role)) == 1
    # Idle only reads as idle through the Claude profile (generic would say working).
    views = s.wait(lambda: (v := s.status()) and all(r["state"] == "idle" for r in v.values())
                   and v, 20, "every role idle")
    # The leftover check at teardown finds claudes by this tag; make sure it can.
    tagged = processes_with_env("CHORAGOS_SOCK", str(s.sock))
    assert {view["pid"] for view in views.values()} <= set(tagged)
    for role, view in views.items():
        env = environ(view["pid"])
        assert env["CHORAGOS_ROLE"] == role
        assert env["ANTHROPIC_BASE_URL"] == fake_model.base_url
        assert {k for k in env if k.startswith("ANTHROPIC_")} == {"ANTHROPIC_API_KEY",
                                                                   "ANTHROPIC_BASE_URL"}
    assert all(r.headers.get("x-api-key") == FAKE_KEY for r in fake_model.message_requests())
    assert_typed_with_a_split_enter(s.events())


def test_delegate_work_done_loop(crew: StartCrew, fake_model: FakeModel) -> None:
    s = crew(claude_role("orchestrator", "claude", start=True) + claude_role("coder", "claude"))
    work = s.workdir
    fake_model.on(BRIEF.format(role="orchestrator"),
                  bash('choragos delegate --to coder --task "Create hello.txt saying hello"',
                       "Delegate the task"))
    # The orchestrator is kept busy until the report is waiting for it.
    busy = s.hold(text("Waiting for the coder's report."))
    fake_model.on(tool_said("delegated T1 to coder"), busy)
    fake_model.on("New task T1 from choragos",
                  tool("Read", {"file_path": str(work / ".choragos/tasks/T1.md")}))
    fake_model.on(tool_said("Task T1 for coder"),
                  tool("Write", {"file_path": str(work / "hello.txt"), "content": "hello\n"}))
    fake_model.on(tool_said("hello.txt"),
                  tool("Write", {"file_path": str(work / ".choragos/reports/T1.md"),
                                 "content": "Wrote hello.txt.\n"}))
    fake_model.on(tool_said("reports/T1.md"),
                  bash(f'choragos work-done --id T1 --done --task "{LONG_SUMMARY}" '
                       "--report .choragos/reports/T1.md", "Report the task"))
    s.wait_booted(["orchestrator", "coder"], timeout=BOOT_TIMEOUT)

    s.wait_event(lambda e: e["event"] == "work-done" and e["task"] == "T1", 45, "work-done")
    s.wait(busy.reached.is_set, 15, "the orchestrator's held turn")
    # Queued once the work-done's changes are read, a moment after its event.
    s.wait(lambda: s.status()["orchestrator"]["queued"] or s.injections("orchestrator"),
           15, "the report queued")
    # A report for a working orchestrator waits in its queue, not in its input box.
    assert holds_for(lambda: (v := s.status()["orchestrator"])["state"] == "working"
                     and v["queued"] == 1 and not s.injections("orchestrator"), 1.5)
    busy.release()
    s.wait_told("A worker reports: [T1 from coder] Wrote hello.txt")
    # Whole, though the input box showed only a placeholder for it.
    told = next(m for m in fake_model.user_messages() if "A worker reports" in m)
    # hello.txt is what changed since the task's checkpoint (the report is in .choragos/)
    assert told == (f"A worker reports: [T1 from coder] {LONG_SUMMARY} (1 file changed "
                    f"(+1 -0)) Full report: read {work}/.choragos/reports/T1.md")

    task = s.board()["T1"]
    assert task["state"] == "done" and task["report"] == f"{work}/.choragos/reports/T1.md"
    assert (work / "hello.txt").read_text() == "hello\n"
    # The model can be asked before choragos has confirmed the Enter on screen.
    s.wait(lambda: s.injections("orchestrator", "report"), 10, "the report's injection event")
    assert_loop_order(s.events())
    assert_typed_with_a_split_enter(s.events())


def test_gate_approve_and_reject_reach_the_models(crew: StartCrew,
                                                  fake_model: FakeModel) -> None:
    s = crew(claude_role("orchestrator", "claude", start=True)
             + claude_role("release", "claude", approve=True))
    fake_model.on(BRIEF.format(role="orchestrator"),
                  bash('choragos delegate --to release --task "Ship v1"', "Delegate v1"))
    fake_model.on(tool_said("delegated T1 to release"),
                  bash('choragos delegate --to release --task "Ship v2"', "Delegate v2"))
    fake_model.on(tool_said("delegated T2 to release"), text("Both wait for approval."))
    s.wait_booted(["orchestrator", "release"], timeout=BOOT_TIMEOUT)

    def gated() -> list[str]:
        return [g["id"] for g in json.loads(s.cli("gate", "list", "--json").stdout)["gates"]]

    s.wait(lambda: gated() == ["T1", "T2"], 30, "two gated delegations")
    assert s.times_told("New task") == 0
    assert s.cli("gate", "approve", "T1").returncode == 0
    s.wait_told("New task T1 from choragos: read .choragos/tasks/T1.md")
    out = s.cli("gate", "reject", "T2", "--reason", "not before Friday")
    assert out.returncode == 0, out.stderr
    s.wait_told("The operator rejected delegation T2 to release")
    told = next(m for m in fake_model.user_messages() if "rejected delegation T2" in m)
    assert "Reason: not before Friday" in told
    s.wait(lambda: s.injections("orchestrator", "notice"), 10, "the notice's injection event")
    board = s.board()
    assert board["T1"]["state"] == "delivered"
    assert board["T2"]["state"] == "rejected" and board["T2"]["note"] == "not before Friday"
    assert s.times_told("New task T2") == 0


def test_permission_dialog_is_waiting_and_holds_deliveries(crew: StartCrew,
                                                           fake_model: FakeModel) -> None:
    s = crew(claude_role("orchestrator", "claude", start=True) + claude_role("coder", "claude"))
    # No allow rule covers `sh -c`: Claude asks before running it.
    fake_model.on("New task T1 from choragos",
                  bash("sh -c 'echo needs-$((6*7))'", "Run the check"))
    s.wait_booted(["orchestrator", "coder"], timeout=BOOT_TIMEOUT)
    assert s.cli("delegate", "--to", "coder", "--task", "Run the check").returncode == 0
    # The card shows what the dialog waits on; under load the tool's line may
    # be drawn a frame after the dialog that makes the role waiting.
    view = s.wait(lambda: (v := s.status()["coder"])["state"] == "waiting"
                  and any("Waiting" in line for line in v["preview"]) and v, 30,
                  "the coder waiting, its card showing the tool that waits")

    assert s.cli("delegate", "--to", "coder", "--task", "Second task").returncode == 0
    s.wait(lambda: s.board()["T2"]["state"] == "queued", 15, "T2 queued")
    # Its checkpoint waits for its turn: the workspace as the task finds it.
    assert not [e for e in s.events() if e["event"] == "checkpoint" and e["task"] == "T2"]
    assert holds_for(lambda: (v := s.status()["coder"])["state"] == "waiting"
                     and v["queued"] == 1 and s.board()["T2"]["state"] == "queued", 3)
    assert s.times_told("New task T2") == 0 and s.times_told("needs-42") == 0

    # No CLI verb types into a pane yet, so the operator's way out is a restart.
    old_pid = view["pid"]
    assert s.cli("restart", "coder").returncode == 0
    s.wait_told("Task T1 to coder failed")
    s.wait(lambda: len(s.boot_injections("coder")) == 2, 30, "the coder re-briefed")
    assert s.boot_injections("coder")[-1]["ok"]
    s.wait_told("New task T2 from choragos")
    assert [e for e in s.events() if e["event"] == "checkpoint" and e["task"] == "T2"]
    # The model can be asked before choragos has confirmed the Enter on screen.
    board = s.wait(lambda: (b := s.board())["T2"]["state"] == "delivered" and b, 10,
                   "T2 delivered")
    assert board["T1"]["state"] == "failed" and "before reporting" in board["T1"]["note"]
    assert s.times_told("needs-42") == 0  # the dialog was never answered
    assert not pid_alive(old_pid)


def test_a_startup_dialog_is_waiting_and_never_typed_into(crew: StartCrew,
                                                           fake_model: FakeModel) -> None:
    # The brief's Enter would pick the dialog's preselected "Yes, I trust this folder".
    s = crew(claude_role("orchestrator", "claude", start=True), trusted=False)
    s.wait_state("orchestrator", "waiting", BOOT_TIMEOUT)
    assert holds_for(lambda: s.state("orchestrator") == "waiting", 4)
    assert not s.boot_injections("orchestrator") and not fake_model.message_requests()
    s.finish()  # the pane's last screen goes to the transcript when it closes
    assert "Is this a project you created or one you trust?" in s.transcripts()
    home = json.loads((s.workdir.parent / "home" / ".claude.json").read_text())
    assert str(s.workdir) not in home["projects"]


def test_killed_worker_restarts_is_rebriefed_and_its_task_fails(crew: StartCrew,
                                                                fake_model: FakeModel) -> None:
    s = crew(claude_role("orchestrator", "claude", start=True)
             + claude_role("coder", "claude", restart="on-failure"))
    thinking = s.hold(text("Still thinking."))
    fake_model.on("New task T1 from choragos", thinking)
    s.wait_booted(["orchestrator", "coder"], timeout=BOOT_TIMEOUT)
    assert s.cli("delegate", "--to", "coder", "--task", "A long task").returncode == 0
    s.wait(thinking.reached.is_set, 30, "the coder's model to be asked")
    pid = s.wait_state("coder", "working", 15)["pid"]

    os.kill(pid, signal.SIGKILL)
    exited = s.wait_event(lambda e: e["event"] == "role exited" and e["role"] == "coder", 15,
                          "the coder's exit")
    assert exited["status"] == "killed by signal 9" and exited["restarting"]
    s.wait_told("Task T1 to coder failed")
    s.wait(lambda: len(s.boot_injections("coder")) == 2, 30, "the coder re-briefed")
    assert all(boot["ok"] for boot in s.boot_injections("coder"))
    s.wait(lambda: s.times_told(BRIEF.format(role="coder")) == 2, 20, "the second brief")
    view = s.wait_state("coder", "idle", 20)
    assert view["pid"] != pid and view["restarts"] == 1 and not pid_alive(pid)
    task = s.board()["T1"]
    assert task["state"] == "failed"
    assert "coder exited (killed by signal 9) before reporting work-done" in task["note"]
