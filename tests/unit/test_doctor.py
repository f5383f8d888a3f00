"""``choragos doctor``: one OK / WARN / FAIL line per check."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from choragos.agents import seatsetup
from choragos.cli import doctor
from choragos.config import templates
from choragos.config.model import CONFIG_NAME
from choragos.control import paths, wire


@pytest.fixture
def bindir(tmp_path: Path) -> Path:
    """A PATH directory holding fake ``claude`` and ``gemini`` programs."""
    path = tmp_path / "bin"
    path.mkdir()
    for name in ("claude", "gemini"):
        program = path / name
        program.write_text("#!/bin/sh\nexit 0\n")
        program.chmod(0o755)
    return path


@pytest.fixture
def work(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


def _env(bindir: Path, runtime: Path, **extra: str) -> dict[str, str]:
    return {"PATH": str(bindir), "XDG_RUNTIME_DIR": str(runtime), "TERM": "xterm-256color",
            **extra}


def _by_name(checks: list[doctor.Check], name: str) -> list[doctor.Check]:
    return [check for check in checks if check.name == name]


def test_a_good_setup_passes_with_every_check_named(work: Path, bindir: Path,
                                                    short_tmp: Path) -> None:
    (work / CONFIG_NAME).write_text(templates.render("starter"))
    seatsetup.write_for(work, ["claude", "gemini"])  # what `choragos init` writes beside it
    checks = doctor.diagnose(work, _env(bindir, short_tmp))
    assert doctor.passed(checks)
    assert {c.name for c in checks} == {"config", "command", "seat", "socket", "socket-dir",
                                        "git", "term", "gateway", "session", "path"}
    assert [c.level for c in _by_name(checks, "command")] == ["OK"] * 3
    assert _by_name(checks, "session")[0].message == "no session running"


def test_missing_binary_fails_naming_role_and_command(work: Path, bindir: Path,
                                                      short_tmp: Path) -> None:
    (work / CONFIG_NAME).write_text(templates.render("mixed-team"))
    seatsetup.write_for(work, ["claude", "gemini"])
    (bindir / "gemini").unlink()
    checks = doctor.diagnose(work, _env(bindir, short_tmp))
    failed = [c for c in checks if c.level == "FAIL"]
    assert len(failed) == 1
    assert "role reviewer" in failed[0].message and "gemini" in failed[0].message
    assert not doctor.passed(checks)


def test_no_file_checks_the_builtin_team(work: Path, bindir: Path, short_tmp: Path) -> None:
    checks = doctor.diagnose(work, _env(bindir, short_tmp))
    assert "built-in team" in _by_name(checks, "config")[0].message
    assert len(_by_name(checks, "command")) == 5


def test_no_file_and_only_claude_warns_for_the_other_cli(work: Path, bindir: Path,
                                                         short_tmp: Path) -> None:
    (bindir / "gemini").unlink()
    checks = doctor.diagnose(work, _env(bindir, short_tmp))
    levels = {c.message.split(":")[0]: c.level for c in _by_name(checks, "command")}
    assert levels["role reviewer of the built-in team"] == "WARN"
    assert doctor.passed(checks)
    (bindir / "claude").unlink()  # no orchestrator: the built-in team cannot run at all
    checks = doctor.diagnose(work, _env(bindir, short_tmp))
    failed = [c.message for c in checks if c.level == "FAIL"]
    assert len(failed) == 1 and failed[0].startswith("role orchestrator: claude")
    assert not doctor.passed(checks)


def test_broken_config_fails_with_the_error_text(work: Path, bindir: Path,
                                                 short_tmp: Path) -> None:
    (work / CONFIG_NAME).write_text('[[roles]]\nname = "a"\ncommand = "claude"\n'
                                    'start = true\ntimeout = "45x"\n')
    checks = doctor.diagnose(work, _env(bindir, short_tmp))
    config = _by_name(checks, "config")
    assert [c.level for c in config] == ["FAIL"]
    assert "roles[1].timeout" in config[0].message and "45x" in config[0].message
    assert not _by_name(checks, "command")


def test_unknown_and_not_built_keys_warn(work: Path, bindir: Path, short_tmp: Path) -> None:
    text = templates.render("starter").replace('name = "coder"', 'name = "coder"\nmodle = "x"')
    (work / CONFIG_NAME).write_text(text + "\n[sphragis]\nenabled = true\n")
    checks = doctor.diagnose(work, _env(bindir, short_tmp))
    warned = " ".join(c.message for c in _by_name(checks, "config") if c.level == "WARN")
    assert "modle" in warned and "did you mean" in warned
    gateway = _by_name(checks, "gateway")[0]
    assert gateway.level == "WARN" and "[sphragis]" in gateway.message
    assert doctor.passed(checks)


def test_git_repository_means_checkpoints_active(work: Path, bindir: Path,
                                                 short_tmp: Path) -> None:
    bare = _by_name(doctor.diagnose(work, _env(bindir, short_tmp)), "git")[0]
    assert bare.level == "WARN" and "`git init` here turns them on" in bare.message
    subprocess.run(["git", "init", "-q", str(work)], check=True, timeout=30,
                   env={"PATH": os.defpath, "HOME": str(work)})
    git = _by_name(doctor.diagnose(work, _env(bindir, short_tmp)), "git")[0]
    assert (git.level, "checkpoints active" in git.message) == ("OK", True)


@pytest.mark.parametrize(("term", "level"), [(None, "WARN"), ("dumb", "WARN"),
                                             ("xterm-256color", "OK")])
def test_term(work: Path, bindir: Path, short_tmp: Path, term: str | None,
              level: str) -> None:
    env = _env(bindir, short_tmp)
    if term is None:
        del env["TERM"]
    else:
        env["TERM"] = term
    assert _by_name(doctor.diagnose(work, env), "term")[0].level == level


def test_long_socket_path_fails(work: Path, bindir: Path, tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 120)
    checks = doctor.diagnose(work, _env(bindir, deep))
    assert _by_name(checks, "socket")[0].level == "FAIL"
    assert not doctor.passed(checks)


def test_loose_socket_directory_warns(work: Path, bindir: Path, short_tmp: Path) -> None:
    sockets = short_tmp / f"choragos-{os.getuid()}"
    sockets.mkdir(mode=0o755)
    sockets.chmod(0o755)
    check = _by_name(doctor.diagnose(work, _env(bindir, short_tmp)), "socket-dir")[0]
    assert check.level == "WARN" and "0755" in check.message
    sockets.chmod(stat.S_IRWXU)
    check = _by_name(doctor.diagnose(work, _env(bindir, short_tmp)), "socket-dir")[0]
    assert check.level == "OK"


def test_escape_sequences_in_config_text_are_inert(work: Path, bindir: Path,
                                                   short_tmp: Path, monkeypatch,
                                                   capsys) -> None:
    (work / CONFIG_NAME).write_text('[[roles]]\nname = "a"\ncommand = "evil\\u001b[2J"\n'
                                    'start = true\n')
    monkeypatch.chdir(work)
    for key, value in _env(bindir, short_tmp).items():
        monkeypatch.setenv(key, value)
    assert doctor.run([]) == 1
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\\x1b[2J" in out


def _answer_one_ping(listener: socket.socket) -> None:
    conn, _ = listener.accept()
    with conn:
        conn.recv(4096)
        conn.sendall(wire.encode(wire.ok(pid=4242)))


def test_a_running_session_is_named_by_pid(work: Path, bindir: Path, short_tmp: Path) -> None:
    env = _env(bindir, short_tmp)
    sock = paths.socket_path(work, env)
    sock.parent.mkdir(mode=0o700)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(sock))
        listener.listen(1)
        server = threading.Thread(target=_answer_one_ping, args=(listener,), daemon=True)
        server.start()
        check = _by_name(doctor.diagnose(work, env), "session")[0]
        server.join(timeout=5)
    assert (check.level, check.message) == ("OK", "a session is running (pid 4242)")


def _run(work: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "choragos", "doctor", *args], cwd=work,
                          env=env, capture_output=True, text=True, timeout=30, check=False)


def test_doctor_as_a_real_command(work: Path, bindir: Path, short_tmp: Path) -> None:
    (work / CONFIG_NAME).write_text(templates.render("claude-team"))
    env = {**_env(bindir, short_tmp), "HOME": str(work)}
    done = _run(work, env)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert all(line.split(" ", 1)[0] in ("OK", "WARN", "FAIL") for line in lines)
    assert any(line.startswith("WARN not a git repository") for line in lines)
    (bindir / "claude").unlink()
    report = json.loads(_run(work, env, "--json").stdout)
    assert report["ok"] is False
    assert {"name", "level", "message"} <= set(report["checks"][0])
    assert _run(work, env, "--json").returncode == 1


def test_a_judge_running_the_same_command_and_model_warns(work: Path, bindir: Path,
                                                          short_tmp: Path) -> None:
    team = ('[[roles]]\nname = "lead"\ncommand = "claude"\nstart = true\n'
            '[[roles]]\nname = "coder"\ncommand = "claude"\nmodel = "m1"\njudge = "rev"\n'
            '[[roles]]\nname = "rev"\ncommand = "claude"\nmodel = "m1"\n'
            '[[roles]]\nname = "tester"\ncommand = "claude"\nmodel = "m1"\njudge = "other"\n'
            '[[roles]]\nname = "other"\ncommand = "gemini"\nmodel = "m1"\n')
    (work / CONFIG_NAME).write_text(team)
    checks = doctor.diagnose(work, _env(bindir, short_tmp))
    (judge,) = _by_name(checks, "judge")
    assert judge.level == "WARN"
    assert judge.message.startswith("role coder is judged by rev, which runs the same command "
                                    "(claude) with model m1")
    assert doctor.passed(checks)


def test_states_kept_aside_are_named_newest_first_and_damage_is_said(work: Path, bindir: Path,
                                                                      short_tmp: Path) -> None:
    env = _env(bindir, short_tmp / "run")
    assert not _by_name(doctor.diagnose(work, env), "kept state")  # none: no line at all
    for stamp in ("20260101-090000", "20260102-090000"):
        kept = work / ".choragos" / f"state.kept-{stamp}"
        kept.mkdir(parents=True)
        (kept / "snapshot.json").write_text("{not json")
    (work / ".choragos" / "state.kept-20260103-090000").mkdir()  # no state in it: not one
    [check] = _by_name(doctor.diagnose(work, env), "kept state")
    assert check.level == doctor.WARN
    assert check.message.startswith(
        "an earlier session's state is kept aside in .choragos/state.kept-20260102-090000 "
        "(unreadable: ")
    assert "(2 in all, newest first)" in check.message
    assert "`choragos serve --resume .choragos/state.kept-20260102-090000` resumes it" in (
        check.message)


def test_a_team_of_one_is_one_role(work: Path, bindir: Path, short_tmp: Path) -> None:
    (work / CONFIG_NAME).write_text('[[roles]]\nname = "solo"\ncommand = "claude"\n'
                                    "start = true\n")
    checks = doctor.diagnose(work, _env(bindir, short_tmp))
    assert "loads: 1 role (solo)" in _by_name(checks, "config")[0].message
