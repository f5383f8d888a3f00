"""Reload audited through a real session: what becomes of a removed role's
work, what a reload says of the operator's decisions, bad files."""

from __future__ import annotations

import json

from choragos.control import wire
from tests.integration.harness import Serve, role_toml

ORCH = role_toml("orchestrator", start=True)


def states(s: Serve) -> dict[str, str]:
    out = s.cli("status", "--json")
    return {r["name"]: r["state"] for r in json.loads(out.stdout)["roles"]}


def test_a_removed_role_s_work_ends_on_the_board_in_the_log_and_to_the_orchestrator(serve):
    """Delivered, queued (its role paused), blocked and gated work of roles a
    reload removes all end with the reason.  Before, the gated task was
    rejected with no event and no word to the orchestrator, and the blocked
    one stayed blocked for a role that no longer exists."""
    s = serve(ORCH + role_toml("coder") + role_toml("auditor", approve=True))
    s.wait_booted(["orchestrator", "coder", "auditor"])
    for text in ("first job", "blocked job"):
        assert s.cli("delegate", "--to", "coder", "--task", text).returncode == 0
    s.wait(lambda: {t["state"] for t in s.board().values()} == {"delivered"}, 20, "delivery")
    assert s.cli("work-done", "--id", "T2", "--blocked",
                 "--task", "needs a key").returncode == 0
    assert s.cli("pause", "coder").returncode == 0
    assert s.cli("delegate", "--to", "coder", "--task", "queued job").returncode == 0
    assert s.cli("delegate", "--to", "auditor", "--task", "gated job").returncode == 0
    s.wait(lambda: s.board()["T4"]["state"] == "gated", 10, "the gate")
    assert s.board()["T2"]["state"] == "blocked" and s.board()["T3"]["state"] == "queued"
    (s.workdir / ".choragos.toml").write_text(ORCH)
    out = s.cli("reload")
    assert out.returncode == 0, out.stderr
    assert "removed coder, auditor" in out.stdout
    board = s.board()
    assert {i: board[i]["state"] for i in ("T1", "T2", "T3", "T4")} == {
        "T1": "failed", "T2": "failed", "T3": "failed", "T4": "rejected"}
    assert board["T4"]["note"] == "auditor was removed from the team by a reload"
    events = s.events()
    assert sorted(e["task"] for e in events if e["event"] == "task failed") == ["T1", "T2", "T3"]
    assert [(e["task"], e["reason"]) for e in events if e["event"] == "gate rejected"] == [
        ("T4", "auditor was removed from the team by a reload")]
    s.wait(lambda: sum(f"Task {i} to" in line for line in s.submitted("orchestrator")
                       for i in ("T1", "T2", "T3", "T4")) == 4, 20,
           "the orchestrator told of each task")
    assert states(s) == {"orchestrator": "idle"}


def test_a_loosening_needs_the_operator_s_word_and_is_named(serve):
    """An agent may edit the file: a reload that loosens a gate or raises a
    budget is refused in one sentence naming each, and changes nothing; with
    --loosen it applies, and the answer and the event log name them."""
    s = serve(ORCH + role_toml("coder", approve=True, budget_tokens=5000))
    s.wait_booted(["orchestrator", "coder"])
    (s.workdir / ".choragos.toml").write_text(
        ORCH + role_toml("coder", approve=False, budget_tokens=90000)
        + '[ui]\non_done = "true"\n')
    hook = "[ui] on_done '' -> 'true' (applies after a restart)"
    out = s.cli("reload")
    assert (out.returncode, out.stdout) == (1, "")
    assert out.stderr == (
        f"choragos reload: the session refused: nothing changed: {s.workdir}/.choragos.toml "
        "loosens what only you decide; if you made these changes, run `choragos reload "
        f"--loosen`: coder approve true -> false; coder budget_tokens 5000 -> 90000; {hook}\n")
    assert states(s) == {"orchestrator": "idle", "coder": "idle"}
    assert [e["loosened"] for e in s.events() if e["event"] == "reload refused"] == [
        ["coder approve true -> false", "coder budget_tokens 5000 -> 90000", hook]]
    assert s.cli("delegate", "--to", "coder", "--task", "still gated").returncode == 0
    s.wait(lambda: s.board()["T1"]["state"] == "gated", 10, "the gate still on")
    out = s.cli("reload", "--loosen")
    assert out.returncode == 0, out.stderr
    assert out.stdout == ("reloaded the configuration: updated coder ([ui] "
                          "changed; it applies after a restart; only you decide these, now as "
                          "the file says: coder approve true -> false, coder budget_tokens "
                          f"5000 -> 90000, {hook})\n")
    reload = next(e for e in s.events() if e["event"] == "reload")
    assert reload["loosened"] == ["coder approve true -> false",
                                  "coder budget_tokens 5000 -> 90000", hook]
    # The hook waits for a restart: confirmed once, it is named, not asked again.
    out = s.cli("reload")
    assert out.returncode == 0, out.stderr
    assert out.stdout == ("reloaded the configuration: no role changed ([ui] changed; it "
                          f"applies after a restart; only you decide these, now as the file "
                          f"says: {hook})\n")
    assert s.cli("delegate", "--to", "coder", "--task", "ungated now").returncode == 0
    s.wait(lambda: s.board()["T2"]["state"] == "delivered", 15, "no gate any more")


def test_a_prompt_change_reaches_the_brief_and_bad_files_change_nothing(serve):
    """A prompt changed in place is written to the role's brief (before, only
    a reload that added or removed a role rewrote the briefs, and the brief
    the updated role is told to read still held the old prompt); an unknown
    key is named in the answer; a file gone is refused in a sentence."""
    s = serve(ORCH + role_toml("coder"))
    s.wait_booted(["orchestrator", "coder"])
    brief = s.workdir / ".choragos/briefs/coder.md"
    config = s.workdir / ".choragos.toml"
    config.write_text(ORCH + role_toml("coder", prompt_template="Write tests first.",
                                       aprove=True))
    out = s.cli("reload")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("reloaded the configuration: updated coder (")
    assert "aprove: unknown key, ignored" in out.stdout
    assert "Write tests first." in brief.read_text()
    again = s.cli("reload")  # at once: the first one's steps may still be running
    assert again.returncode == 0 and "no role changed" in again.stdout, again.stdout
    config.unlink()
    out = s.cli("reload")
    assert (out.returncode, out.stderr) == (
        1, f"choragos reload: the session refused: the config has errors, nothing changed: "
           f"{config}: no such file\n")
    assert states(s) == {"orchestrator": "idle", "coder": "idle"}


def test_a_removed_role_s_work_held_at_a_gate_stays_for_the_operator(serve):
    """Finished work held at an owner gate is the operator's to decide, its
    worker gone or not: before, the reload failed the task (and told the
    orchestrator so) while its hold stayed, and approving it then sent the
    report of a task the board called failed."""
    s = serve(ORCH + role_toml("keeper", owns_files=["defects.md"])
              + role_toml("coder", "--worker", "--edit"))
    s.wait_booted(["orchestrator", "keeper", "coder"])
    assert s.cli("delegate", "--to", "coder", "--task", "write defects.md hid it").returncode == 0
    s.wait_event(lambda e: e["event"] == "work held", 30, "the hold")
    (s.workdir / ".choragos.toml").write_text(ORCH + role_toml("keeper",
                                                               owns_files=["defects.md"]))
    out = s.cli("reload")
    assert out.returncode == 0, out.stderr
    assert out.stdout == ("reloaded the configuration: removed coder (coder's finished work T1 "
                          "still waits at its gate or for its judge (`choragos gate list`))\n")
    assert s.board()["T1"]["state"] == "delivered"
    assert not [e for e in s.events() if e["event"] == "task failed"]
    assert s.cli("gate", "approve", "T1").returncode == 0
    s.wait(lambda: s.board()["T1"]["state"] == "done", 20, "the approved work done")
    s.wait(lambda: any(line.startswith("A worker reports: [T1 from coder]")
                       for line in s.submitted("orchestrator")), 20, "the report")


def test_a_role_removed_in_a_delegate_storm_loses_no_acknowledged_task(serve):
    """The orchestrator delegates to both workers every 50 ms while a reload
    removes one: every delegation it was told was made is on the board, and
    each of the removed role's ends failed with the reason."""
    storm = role_toml("orchestrator", "--delegate", "coder,reviewer", "--every", "0.05",
                      start=True)
    s = serve(storm + role_toml("coder") + role_toml("reviewer"))
    s.wait(lambda: sum("to reviewer" in r["text"] for r in s.agents("delegated")) >= 3, 30,
           "delegations to the reviewer")
    (s.workdir / ".choragos.toml").write_text(storm + role_toml("coder"))
    assert s.cli("reload").returncode == 0
    s.wait_event(lambda e: e["event"] == "role removed" and e["role"] == "reviewer", 20,
                 "the reviewer stopped")
    s.wait(lambda: sum("to coder" in r["text"] for r in s.agents("delegated"))
           > sum("to reviewer" in r["text"] for r in s.agents("delegated")) + 3, 30,
           "the storm going on after the reload")
    # The acks first: the storm goes on, and one acked after the board was read
    # would seem missing from it.
    acked = [r["text"].split()[1] for r in s.agents("delegated")]
    board = s.board()
    assert set(acked) <= set(board), "an acknowledged delegation is not on the board"
    theirs = [t for t in board.values() if t["role"] == "reviewer"]
    assert theirs and {(t["state"], t["note"]) for t in theirs} == {
        ("failed", "reviewer was removed from the team by a reload")}


def test_a_confirmation_holds_only_for_the_loosenings_it_saw(serve):
    """The deck confirms what its dialog showed by sending back the refusal's
    mark: a file loosened further after the dialog opened (an agent racing
    the operator) is refused again, naming the new list, and nothing changes."""
    s = serve(ORCH + role_toml("coder", approve=True, budget_tokens=5000))
    s.wait_booted(["orchestrator", "coder"])
    toml = s.workdir / ".choragos.toml"
    toml.write_text(ORCH + role_toml("coder", approve=False, budget_tokens=5000))
    first = wire.request(s.sock, {"cmd": "reload"})
    assert first["status"] == "error" and first["loosened"] == ["coder approve true -> false"]
    toml.write_text(ORCH + role_toml("coder", approve=False, budget_tokens=90000))
    again = wire.request(s.sock, {"cmd": "reload", "loosen": True, "seen": first["seen"]})
    assert again["status"] == "error", again
    assert again["loosened"] == ["coder approve true -> false",
                                 "coder budget_tokens 5000 -> 90000"]
    assert not [e for e in s.events() if e["event"] == "reload"]
    done = wire.request(s.sock, {"cmd": "reload", "loosen": True, "seen": again["seen"]})
    assert done["status"] == "ok", done
    assert done["loosened"] == again["loosened"]
