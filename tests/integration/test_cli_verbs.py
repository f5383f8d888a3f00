"""The socket-talking CLI verbs, run as real subprocesses."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from choragos.control import paths, wire
from choragos.control.server import ControlServer

REPO = Path(__file__).resolve().parents[2]
BANNED = {"pykka", "pyte", "urwid", "dulwich", "ptyprocess", "prometheus_client", "wcwidth"}
HOSTILE = ("$(touch pwned); `touch pwned2` | rm -rf ./x && echo $HOME > out\n"
           "\x1b]0;title\x07\x1b[2J\x1b[31mred\x9b31m \u202eevil\u202c 'q' \"dq\" \\ ü 🎉")


class FakeSession:
    """A handler returning the documented acks, recording every request."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.replies: dict[str, dict[str, Any]] = {}
        self._ids = itertools.count(3)
        self._lock = threading.Lock()

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            # What the verb sent: the server's own peer pid is not part of it.
            self.requests.append({k: v for k, v in request.items() if k != wire.PEER_PID})
            if request["cmd"] in self.replies:
                return self.replies[request["cmd"]]
            if request["cmd"] == "delegate":
                return wire.ok(tasks=[self._task(role) for role in request["to"]])
        if request["cmd"] == "work-done":
            return wire.ok(id=request["id"], state="done")
        if request["cmd"] == "gate" and request["action"] != "list":
            return wire.ok(id=request["id"])
        return wire.ok()

    def _task(self, role: str) -> dict[str, str]:
        state = "gated" if role == "release" else "queued"
        return {"id": f"T{next(self._ids)}", "role": role, "state": state}


def child_env(sock: Path | None, **extra: str) -> dict[str, str]:
    """The test's environment for a CLI child, with our own CHORAGOS_* only."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("CHORAGOS_")}
    if sock is not None:
        base["CHORAGOS_SOCK"] = str(sock)
    return {**base, "PYTHONPATH": str(REPO), **extra}


def run_cli(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "choragos", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=30)


@dataclass
class Env:
    session: FakeSession
    sock: Path
    tmp: Path

    def run(self, *args: str, cwd: Path | None = None,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return run_cli(*args, cwd=cwd or self.tmp, env=env or self.env())

    def env(self, **extra: str) -> dict[str, str]:
        return child_env(self.sock, **extra)


@pytest.fixture
def cli(short_tmp: Path) -> Iterator[Env]:
    session = FakeSession()
    sock = short_tmp / "run" / "c.sock"
    with ControlServer(sock, session.handle, max_clients=128):
        yield Env(session, sock, short_tmp)


def one_line(text: str) -> str:
    assert text.count("\n") == 1, text
    return text.rstrip("\n")


def refused_with(done: subprocess.CompletedProcess[str], code: int) -> str:
    assert done.returncode == code, (done.stdout, done.stderr)
    assert done.stdout == ""
    return one_line(done.stderr)


# --- delegate -------------------------------------------------------------------

def test_delegate_one_role(cli: Env) -> None:
    done = cli.run("delegate", "--to", "coder", "--task", "add tests")
    assert done.returncode == 0 and done.stderr == ""
    assert one_line(done.stdout) == "delegated T3 to coder"
    assert cli.session.requests == [
        {"cmd": "delegate", "to": ["coder"], "task": "add tests", "brief": None,
         "require_live": False}]


def test_delegate_several_roles_with_a_gate(cli: Env) -> None:
    done = cli.run("delegate", "--to", "coder, release", "--to", "coder", "--task", "ship")
    assert one_line(done.stdout) == "delegated T3 to coder, T4 to release (waiting for approval)"
    assert cli.session.requests[0]["to"] == ["coder", "release"]


def test_delegate_brief_is_absolutized(cli: Env) -> None:
    (cli.tmp / "docs").mkdir()
    (cli.tmp / "docs" / "brief.md").write_text("the details\n")
    done = cli.run("delegate", "--to", "coder", "--task", "see brief", "--brief", "brief.md",
                   cwd=cli.tmp / "docs")
    assert done.returncode == 0, done.stderr
    assert cli.session.requests[0]["brief"] == str(cli.tmp / "docs" / "brief.md")


@pytest.mark.parametrize(("make_file", "fragment"), [
    (None, "does not exist"),
    ("", "is empty"),
    ("dir", "is not a regular file"),
])
def test_delegate_bad_brief_is_a_usage_error(cli: Env, make_file: str | None,
                                             fragment: str) -> None:
    brief = cli.tmp / "brief.md"
    if make_file == "dir":
        brief.mkdir()
    elif make_file is not None:
        brief.write_text(make_file)
    done = cli.run("delegate", "--to", "coder", "--task", "x", "--brief", str(brief))
    assert fragment in refused_with(done, 2)
    assert cli.session.requests == []


@pytest.mark.parametrize("args", [
    ["--task", "x"],
    ["--to", "coder"],
    ["--to", "coder", "--task", "  "],
    ["--to", "../etc", "--task", "x"],
    ["--to", ",", "--task", "x"],
    ["--to", "coder", "--task", "x", "--bogus"],
])
def test_delegate_bad_arguments(cli: Env, args: list[str]) -> None:
    line = refused_with(cli.run("delegate", *args), 2)
    assert line.startswith("choragos delegate: ")
    assert cli.session.requests == []


def test_hostile_task_text_is_carried_inert(cli: Env) -> None:
    done = cli.run("delegate", "--to", "coder", "--task", HOSTILE)
    assert done.returncode == 0
    assert cli.session.requests[0]["task"] == HOSTILE
    assert not any((cli.tmp / name).exists() for name in ("pwned", "pwned2", "out"))


def test_wire_text_is_neutralised_before_printing(cli: Env) -> None:
    cli.session.replies["delegate"] = wire.ok(tasks=[
        {"id": "T1\x1b[2J", "role": "co\x9bder", "state": "gated\x07"}])
    cli.session.replies["work-done"] = wire.error("unknown id \x1b]0;pwn\x07 \u202e T9")
    out = cli.run("delegate", "--to", "coder", "--task", "x").stdout
    err = cli.run("work-done", "--id", "T9", "--task", "x").stderr
    for text in (out, err):
        assert not any(ch in text for ch in "\x1b\x07\x9b\u202e")
    assert "T1\\x1b[2J" in out and "\\x1b]0;pwn\\x07" in err


# --- work-done ---------------------------------------------------------------------

def test_work_done_reports(cli: Env) -> None:
    (cli.tmp / "report.md").write_text("all green\n")
    done = cli.run("work-done", "--id", "T3", "--done", "--task", "tests pass",
                   "--report", "report.md")
    assert one_line(done.stdout) == "reported T3 (done)"
    assert cli.session.requests == [{"cmd": "work-done", "id": "T3", "task": "tests pass",
                                     "report": str(cli.tmp / "report.md"), "done": True,
                                     "outcome": "done", "report_text": ""}]


def test_work_done_on_a_remote_seat_sends_the_report_along(cli: Env) -> None:
    (cli.tmp / "report.md").write_text("all green\n")
    cli.run("work-done", "--id", "T3", "--done", "--task", "tests pass", "--report", "report.md",
            env=cli.env(CHORAGOS_REMOTE="1"))
    assert cli.session.requests[0]["report_text"] == "all green\n"


def test_work_done_failed_and_blocked_send_an_outcome(cli: Env) -> None:
    cli.session.replies["work-done"] = wire.ok(id="T3", state="failed")
    out = cli.run("work-done", "--id", "T3", "--failed", "--task", "the API is gone")
    assert one_line(out.stdout) == "reported T3 (failed)"
    cli.run("work-done", "--id", "T4", "--blocked", "--task", "need a key")
    assert [(r["outcome"], r["done"]) for r in cli.session.requests] == [
        ("failed", False), ("blocked", False)]
    refused_with(cli.run("work-done", "--id", "T5", "--done", "--failed", "--task", "x"), 2)
    assert len(cli.session.requests) == 2


def test_work_done_refused_by_the_session(cli: Env) -> None:
    cli.session.replies["work-done"] = wire.error("unknown task id T99")
    line = refused_with(cli.run("work-done", "--id", "T99", "--task", "x"), 1)
    assert line == "choragos work-done: the session refused: unknown task id T99"


def test_work_done_for_an_unknown_id_exits_non_zero_with_the_reason(cli: Env) -> None:
    # The session passes the report on all the same, and says the id matched nothing.
    cli.session.replies["work-done"] = wire.ok(
        id="T99", state="unmatched", unknown=True,
        warning="unknown task id T99; the report was still passed to the orchestrator")
    line = refused_with(cli.run("work-done", "--id", "T99", "--task", "x"), 1)
    assert line == ("choragos work-done: reported T99 (unmatched); note: unknown task id "
                    "T99; the report was still passed to the orchestrator")


def test_handoff_says_what_it_waits_for_and_fails_without_a_handoff(cli: Env) -> None:
    cli.session.replies["handoff"] = wire.ok(file=str(cli.tmp / "handoff.md"), wait=1)
    out = cli.run("handoff", "--wait", "1")
    assert out.returncode == 1 and out.stdout == ""
    waiting, failed = out.stderr.splitlines()
    assert "waiting up to 1s for it" in waiting
    assert failed.startswith("choragos handoff: no .choragos/handoff.md within 1s, so no "
                             "handoff was made")
    assert [r["cmd"] for r in cli.session.requests] == ["handoff", "shutdown"]


@pytest.mark.parametrize("args", [
    ["--task", "x"],
    ["--id", "T3"],
    ["--id", " ", "--task", "x"],
    ["--id", "T3", "--task", "x", "--report", "/no/such/report.md"],
])
def test_work_done_bad_arguments(cli: Env, args: list[str]) -> None:
    refused_with(cli.run("work-done", *args), 2)
    assert cli.session.requests == []


# --- reaching the session -----------------------------------------------------------

def test_unreachable_session(cli: Env) -> None:
    env = cli.env(CHORAGOS_SOCK=str(cli.tmp / "nobody.sock"))
    line = refused_with(cli.run("delegate", "--to", "coder", "--task", "x", env=env), 3)
    assert "no choragos session is running" in line and "choragos serve" in line


def test_unreachable_names_the_directory(cli: Env) -> None:
    env = child_env(None, XDG_RUNTIME_DIR=str(cli.tmp / "rt"))
    (cli.tmp / "proj").mkdir()
    line = refused_with(cli.run("ping", cwd=cli.tmp / "proj", env=env), 3)
    assert f"running for {cli.tmp / 'proj'}" in line


def test_subdirectory_finds_the_project_session(short_tmp: Path) -> None:
    project, runtime = short_tmp / "proj", short_tmp / "rt"
    (project / "src" / "deep").mkdir(parents=True)
    env = child_env(None, XDG_RUNTIME_DIR=str(runtime))
    session = FakeSession()
    with ControlServer(paths.socket_path(project, env), session.handle):
        done = run_cli("ping", cwd=project / "src" / "deep", env=env)
    assert one_line(done.stdout) == "a session is running"
    assert session.requests == [{"cmd": "ping"}]


def test_sock_option_overrides(cli: Env) -> None:
    env = cli.env(CHORAGOS_SOCK=str(cli.tmp / "wrong.sock"))
    done = cli.run("ping", "--sock", str(cli.sock), env=env)
    assert done.returncode == 0


# --- gate, board, status ------------------------------------------------------------------

GATES = wire.ok(gates=[{"id": "T4", "role": "release", "label": "tag v1.2", "age": 75,
                        "brief": "/abs/brief.md"}])


def test_gate_list_table_and_json(cli: Env) -> None:
    cli.session.replies["gate"] = GATES
    table = cli.run("gate").stdout.splitlines()
    assert table[0].split() == ["ID", "ROLE", "AGE", "TASK", "BRIEF"]
    assert table[1].split() == ["T4", "release", "1m15s", "tag", "v1.2", "/abs/brief.md"]
    assert json.loads(cli.run("gate", "list", "--json").stdout) == {
        "ok": True, "verb": "gate", "gates": GATES["gates"]}
    assert cli.session.requests[0] == {"cmd": "gate", "action": "list", "id": None, "reason": ""}


def test_gate_list_empty(cli: Env) -> None:
    assert one_line(cli.run("gate", "list").stdout) == "no delegations are waiting for approval"


def test_gate_decisions(cli: Env) -> None:
    assert one_line(cli.run("gate", "approve", "T4").stdout) == "approved T4"
    assert one_line(cli.run("gate", "reject", "T5", "--reason", "not now").stdout) == \
        "rejected T5"
    assert cli.session.requests == [
        {"cmd": "gate", "action": "approve", "id": "T4", "reason": ""},
        {"cmd": "gate", "action": "reject", "id": "T5", "reason": "not now"}]


@pytest.mark.parametrize("args", [["approve"], ["reject"], ["list", "T4"], ["merge", "T4"]])
def test_gate_bad_arguments(cli: Env, args: list[str]) -> None:
    refused_with(cli.run("gate", *args), 2)


def test_board_table(cli: Env) -> None:
    cli.session.replies["board"] = wire.ok(tasks=[
        {"id": "T1", "role": "coder", "state": "done", "label": "fix parser", "age": 4000,
         "duration": 59, "brief": None, "report": str(cli.tmp / "r.md"), "checkpoint": "c1",
         "note": "", "changes": [{"path": "a.py"}, {"path": "b.py"}, {"path": "c.py"}]},
        {"id": "T2", "role": "coder", "state": "done", "label": "look", "changes": []},
        {"id": "T3", "role": "coder", "state": "failed", "label": "try", "changes": []},
        {"id": "T4", "role": "coder", "state": "delivered", "label": "new", "changes": None}])
    lines = cli.run("board").stdout.splitlines()
    assert lines[0].split() == ["ID", "ROLE", "STATE", "AGE", "TOOK", "FILES", "TASK", "BRIEF",
                                "REPORT", "NOTE"]
    assert lines[1].split() == ["T1", "coder", "done", "1h6m", "59s", "3", "fix", "parser",
                                "-", "r.md", "-"]
    # a done that changed nothing is flagged; unmeasured is a dash, like the deck's board
    assert [line.split()[5] for line in lines[2:5]] == ["0!", "0", "-"]


def test_board_empty_and_json(cli: Env) -> None:
    assert "board is empty" in cli.run("board").stdout
    assert json.loads(cli.run("board", "--json").stdout) == {"ok": True, "verb": "board"}


def test_status_table(cli: Env) -> None:
    cli.session.replies["status"] = wire.ok(roles=[
        {"name": "coder", "state": "working", "pid": 4242, "restarts": 1, "task": "T3",
         "model": "opus", "command": "claude", "profile": "claude"}])
    lines = cli.run("status").stdout.splitlines()
    assert lines[0].split() == ["ROLE", "STATE", "PID", "RESTARTS", "TASK", "COST/BUDGET",
                                "MODEL", "AGENT", "COMMAND"]
    assert lines[1].split() == ["coder", "working", "4242", "1", "T3", "-", "opus", "claude",
                                "claude"]


def test_status_table_has_a_host_column_once_a_role_runs_elsewhere(cli: Env) -> None:
    cli.session.replies["status"] = wire.ok(roles=[
        {"name": "coder", "state": "idle", "pid": 1, "restarts": 0, "task": None,
         "model": "m", "command": "claude", "profile": "claude", "host": "gpu"},
        {"name": "lead", "state": "idle", "pid": 2, "restarts": 0, "task": None,
         "model": "m", "command": "claude", "profile": "claude", "host": ""}])
    lines = cli.run("status").stdout.splitlines()
    assert lines[0].split()[:4] == ["ROLE", "STATE", "HOST", "PID"]
    assert lines[1].split()[:3] == ["coder", "idle", "gpu"]
    assert lines[2].split()[:3] == ["lead", "idle", "-"]


def test_status_shows_marks_budgets_and_the_session_budget(cli: Env) -> None:
    cli.session.replies["status"] = wire.ok(roles=[
        {"name": "coder", "state": "paused", "pid": 1, "restarts": 0, "task": None,
         "model": "m", "command": "c", "cost": 1.2, "marks": ["over budget", "stalled"],
         "budget": {"usd": 1.0, "tokens": None, "over": True}},
        {"name": "tester", "state": "idle", "pid": 2, "restarts": 0, "task": None,
         "model": "m", "command": "c", "cost": None, "marks": [],
         "tokens": {"input": 700, "output": 50}, "budget": {"usd": None, "tokens": 1000}}],
        budget={"usd": 20.0, "cost": 1.25, "over": False})
    lines = cli.run("status").stdout.splitlines()
    assert lines[1].split()[:6] == ["coder", "paused,", "over", "budget,", "stalled", "1"]
    assert "$1.20/$1.00" in lines[1] and "750/1000 tok" in lines[2]
    assert lines[3] == "session budget: $1.25 of $20.00"


def test_status_shows_until_when_a_role_is_limited(cli: Env) -> None:
    until = 1_800_000_000.0
    cli.session.replies["status"] = wire.ok(roles=[
        {"name": "coder", "state": "limited", "pid": 1, "restarts": 0, "task": "T1",
         "model": "m", "command": "c", "limited_until": until, "marks": []}],
        budget={"usd": 1.0, "cost": 1.25, "over": True, "action": "block"})
    lines = cli.run("status").stdout.splitlines()
    clock = time.strftime("%H:%M:%S", time.localtime(until))
    assert lines[1].split()[:4] == ["coder", "limited", "until", clock]
    assert lines[2] == "session budget: $1.25 of $1.00 (over: model calls are refused)"


# --- role control and the field-less commands -----------------------------------------------

@pytest.mark.parametrize(("verb", "word", "defaults"), [
    ("restart", "restarted", {"gateway": False}), ("pause", "paused", {}),
    ("resume", "resumed", {})])
def test_role_control(cli: Env, verb: str, word: str, defaults: dict) -> None:
    assert one_line(cli.run(verb, "coder").stdout) == f"{word} coder"
    # The server's parse fills in the command's optional fields.
    assert cli.session.requests == [{"cmd": verb, "role": "coder", **defaults}]


def test_restart_gateway(cli: Env) -> None:
    assert "the built-in gateway is being started again" in cli.run("restart", "--gateway").stdout
    assert cli.session.requests == [{"cmd": "restart", "gateway": True, "role": None}]


def test_role_control_bad_name(cli: Env) -> None:
    refused_with(cli.run("pause", "../../x"), 2)
    refused_with(cli.run("pause"), 2)
    assert cli.session.requests == []


def test_budget_sends_the_role_or_the_session_and_the_amount(cli: Env) -> None:
    cli.session.replies["budget"] = wire.ok(message="the budget of coder is now $5.00")
    assert one_line(cli.run("budget", "coder", "5.00").stdout) == \
        "the budget of coder is now $5.00"
    cli.run("budget", "--session", "$20")
    assert cli.session.requests == [
        {"cmd": "budget", "session": False, "role": "coder", "amount": "5.00"},
        {"cmd": "budget", "session": True, "role": None, "amount": "20"}]


@pytest.mark.parametrize("argv", [("coder",), ("coder", "abc"), ("coder", "0"),
                                  ("--session", "coder", "5"), ("../x", "5")])
def test_budget_bad_input_sends_nothing(cli: Env, argv: tuple[str, ...]) -> None:
    assert refused_with(cli.run("budget", *argv), 2)
    assert cli.session.requests == []


def test_simple_commands(cli: Env) -> None:
    cli.session.replies["ping"] = wire.ok(pid=777)
    cli.session.replies["reload"] = wire.ok(message="added auditor")
    assert one_line(cli.run("ping").stdout) == "a session is running (pid 777)"
    assert one_line(cli.run("reload").stdout) == "reloaded the configuration: added auditor"
    assert one_line(cli.run("shutdown").stdout) == "the session is shutting down"
    assert [r["cmd"] for r in cli.session.requests] == ["ping", "reload", "shutdown"]


def test_simple_command_refused(cli: Env) -> None:
    cli.session.replies["reload"] = wire.error("reload is refused on the built-in team")
    assert "built-in team" in refused_with(cli.run("reload"), 1)


# --- load and start-up cost -------------------------------------------------------------------

def test_hundred_concurrent_delegations(cli: Env) -> None:
    env = cli.env()
    procs = [subprocess.Popen([sys.executable, "-m", "choragos", "delegate", "--to", "coder",
                               "--task", f"job {n}"], cwd=cli.tmp, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for n in range(100)]
    outputs = [proc.communicate(timeout=60) for proc in procs]
    assert [proc.returncode for proc in procs] == [0] * 100, outputs
    ids = {out.split()[1] for out, _ in outputs}
    assert len(ids) == 100
    assert sorted(r["task"] for r in cli.session.requests) == sorted(f"job {n}"
                                                                     for n in range(100))


def _imported(args: list[str], env: dict[str, str], cwd: Path, whole: bool = False
              ) -> set[str]:
    """The packages ``python ARGS`` imports (with ``whole``: every module's full name)."""
    done = subprocess.run([sys.executable, "-X", "importtime", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=30)
    names = set()
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name != "imported package":
                names.add(name if whole else name.split(".")[0])
    return names


@pytest.mark.parametrize("verb_args", [
    ["delegate", "--help"],
    ["work-done", "--help"],
    ["delegate", "--to", "coder", "--task", "x"],
    ["work-done", "--id", "T1", "--task", "x"],
])
def test_fast_verbs_import_only_the_standard_library(cli: Env, verb_args: list[str]) -> None:
    env = cli.env()
    baseline = _imported(["-c", "pass"], env, cli.tmp)
    names = _imported(["-m", "choragos", *verb_args], env, cli.tmp) - baseline
    assert not names & BANNED
    outside = {n for n in names if n not in sys.stdlib_module_names and n != "choragos"}
    assert outside == set()
    assert "choragos" in names


# What the agents' verbs leave out on their usual arguments: argparse and what it
# loads for its messages, pathlib and what it loads, and the modules only other
# verbs use.  Run without site (as an installed choragos starts, without this
# checkout's editable install, whose finder loads pathlib first).
NOT_ON_THE_AGENTS_PATH = {"argparse", "gettext", "locale", "shutil", "difflib", "string",
                          "pathlib", "fnmatch", "urllib.parse", "ipaddress",
                          "choragos.cli._argparser", "choragos.durations",
                          "choragos.cli.ls"}


@pytest.mark.parametrize("verb_args", [
    ["delegate", "--to", "coder,reviewer", "--task", "x", "--require-live"],
    ["work-done", "--id", "T1", "--task=x", "--failed"],
])
def test_the_agents_verbs_start_without_argparse_or_pathlib(cli: Env, verb_args: list[str]
                                                            ) -> None:
    names = _imported(["-S", "-m", "choragos", *verb_args], cli.env(), cli.tmp, whole=True)
    assert "choragos.cli._client" in names and "choragos.cli._quickargs" in names
    assert names & NOT_ON_THE_AGENTS_PATH == set()
    assert cli.session.requests[-1]["cmd"] == verb_args[0]


def test_an_agent_verb_given_what_only_argparse_reads_answers_as_before(cli: Env) -> None:
    env = cli.env()
    done = subprocess.run([sys.executable, "-m", "choragos", "delegate", "--to", "coder",
                           "--tsk", "x"], cwd=cli.tmp, env=env, capture_output=True,
                          text=True, timeout=30)
    assert done.returncode == 2
    assert "did you mean --task?" in done.stderr
    assert cli.session.requests == []
