"""Conventions every verb shares: quiet broken pipes, usage errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _env(tmp: Path) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp),
            "LANG": "C.UTF-8", "PYTHONPATH": str(ROOT), "XDG_RUNTIME_DIR": str(tmp / "run")}


def _big_log(path: Path) -> Path:
    records = [{"t": 1_780_000_000.0, "event": "deck starting", "dir": "/p"}]
    for n in range(400):
        records.append({"t": 1_780_000_001.0 + n, "event": "delegate", "task": f"T{n}",
                        "role": f"role{n}"})
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.mark.parametrize("argv", [["report", "--all", "LOG"], ["ls", "--json"], ["-h"],
                                  ["report", "--json", "LOG"]])
def test_a_closed_pipe_ends_quietly(tmp_path: Path, argv: list[str]) -> None:
    log = _big_log(tmp_path / "events.jsonl")
    argv = [str(log) if a == "LOG" else a for a in argv]
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first write, as with `| head -0`
    try:
        done = subprocess.run([sys.executable, "-m", "choragos", *argv], cwd=tmp_path,
                              env=_env(tmp_path), stdout=write_end, stderr=subprocess.PIPE,
                              text=True, timeout=30)
    finally:
        os.close(write_end)
    assert done.stderr == ""
    assert done.returncode == 141


def test_bare_choragos_prints_usage_and_exits_2(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "choragos"], cwd=tmp_path,
                          env=_env(tmp_path), capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert "usage:" in done.stderr and done.stdout == ""


def _run(tmp: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "choragos", *argv], cwd=tmp, env=_env(tmp),
                          capture_output=True, text=True, timeout=30)


@pytest.mark.parametrize(("argv", "said"), [
    # Taken before: with a session running, kill sent SIGTERM right after the
    # shutdown it asked for (-1) or waited forever (nan).
    (["kill", "--wait", "-1"], "--wait takes a number of seconds from 0 to 3600, not '-1'"),
    (["kill", "--wait", "nan"], "--wait takes a number of seconds from 0 to 3600, not 'nan'"),
    (["kill", "--wait", "\x1b[2J"], "not '\\x1b[2J'"),
    (["handoff", "--wait", "0"], "--wait takes a number of seconds from 1 to 3600, not '0'"),
    (["handoff", "--wait", "inf"], "--wait takes a number of seconds from 1 to 3600"),
    # A reason on an approval was dropped without a word.
    (["gate", "approve", "T1", "--reason", "no"], "--reason goes with `gate reject` only"),
    (["gate", "--json", "--reason", "no"], "--reason goes with `gate reject` only"),
    (["budget", "coder", "1e400"], "'1e400' is not an amount of USD above zero"),
    (["budget", "--session", "nan"], "'nan' is not an amount of USD above zero"),
    # A file was taken for a session that crashed ("connection refused").
    (["ping", "--sock", "/etc/passwd"], "/etc/passwd is not a socket; --sock and "
                                        "$CHORAGOS_SOCK name a session's control socket"),
    # An empty id read "choragos diff:  is not a task id".
    (["diff", ""], "choragos diff: '' is not a task id (such as T3)"),
    # An empty --config was "no new config": the session was handed off and ended.
    (["handoff", "--config", ""], "argument --config: an empty path; give one, or leave it out"),
    # '' was the current directory: a session started there, a demo's files written
    # over a project's, a traceback reading a folder as the gateway's counts.
    (["serve", "--headless", "--dir", ""], "argument --dir: an empty path"),
    (["serve", "--detach", "--config="], "argument --config: an empty path"),
    (["demo", "--dir", ""], "argument --dir: an empty path"),
    (["gateway", "--state", ""], "argument --state: an empty path"),
    (["doctor", "--config", ""], "argument --config: an empty path"),
    # "the brief file /home/me/proj is not a regular file": '' made absolute.
    (["delegate", "--to", "coder", "--task", "t", "--brief", ""],
     "the brief file's name is empty; name the file, or leave --brief out"),
    (["work-done", "--id", "T1", "--done", "--task", "t", "--report="],
     "the report file's name is empty; name the file, or leave --report out"),
    # --template was ignored without a word, and the seats written anyway.
    (["init", "--seats", "--template", "review"], "it takes no --template, --auto or --force"),
])
def test_a_bad_value_is_a_usage_error_before_any_session_is_asked(
        tmp_path: Path, argv: list[str], said: str) -> None:
    done = _run(tmp_path, *argv)
    assert done.returncode == 2, done.stderr
    assert said in done.stderr and "no choragos session" not in done.stderr
    assert "\x1b" not in done.stderr and len(done.stderr.splitlines()) == 1
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_did_you_mean_ignores_the_dashes_every_option_shares(tmp_path: Path) -> None:
    # "--json" and "--sock" were a near miss for their shared "--".
    done = _run(tmp_path, "kill", "--json")
    assert done.returncode == 2 and "did you mean" not in done.stderr
    assert "(--jsno: did you mean --json?)" in _run(tmp_path, "status", "--jsno").stderr


def test_a_config_path_with_escapes_is_echoed_escaped(tmp_path: Path) -> None:
    done = _run(tmp_path, "serve", "--headless", "--config", "\x1b]0;owned\x07\x1b[2J")
    assert done.returncode == 2
    assert done.stderr.splitlines()[0] == "\\x1b]0;owned\\x07\\x1b[2J: no such file"
    assert "\x1b" not in done.stderr and "\x07" not in done.stderr


@pytest.mark.parametrize(("argv", "said"), [
    (["serve", "--detach", "--dir", "TMP/nope"], "--dir TMP/nope is not a directory"),
    # The gateway made the missing folders and kept its counts where nobody looks.
    (["gateway", "--addr", "127.0.0.1:9", "--state", "TMP/nope/counts.jsonl"],
     "--state TMP/nope/counts.jsonl: there is no folder TMP/nope"),
    # A traceback: the folder read as the counts file.
    (["gateway", "--addr", "127.0.0.1:9", "--state", "TMP"],
     "--state TMP is a folder; name a file in it, such as gateway-counts.jsonl"),
    # /dev/zero was read for ever, the memory growing.
    (["report", "/dev/zero"], "/dev/zero is not an event log: not a regular file"),
])
def test_a_path_that_is_not_there_is_said_and_nothing_is_made(
        tmp_path: Path, argv: list[str], said: str) -> None:
    done = _run(tmp_path, *(a.replace("TMP", str(tmp_path)) for a in argv))
    assert done.returncode == 2, done.stderr
    assert said.replace("TMP", str(tmp_path)) in done.stderr
    assert not (tmp_path / "nope").exists()


def test_following_a_transcript_not_there_yet_says_it_waits(tmp_path: Path) -> None:
    follow = subprocess.Popen([sys.executable, "-m", "choragos", "logs", "-f", "coder"],
                              cwd=tmp_path, env=_env(tmp_path), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    deadline = threading.Timer(20, follow.kill)  # the notice, or EOF once killed
    deadline.start()
    try:
        line = follow.stderr.readline()
    finally:
        deadline.cancel()
        follow.kill()
        follow.communicate(timeout=30)
    assert line.startswith("choragos logs: coder has no transcript yet at ")
    assert line.rstrip().endswith("; waiting for it (Ctrl-C stops)")


def test_json_misspelled_fails_in_the_envelope_as_it_succeeds(tmp_path: Path) -> None:
    done = _run(tmp_path, "status", "--json=yes")
    document = json.loads(done.stdout)
    assert document["ok"] is False and document["exit"] == done.returncode != 0


@pytest.mark.parametrize("spelled", ["--js", "--jso"])
def test_json_abbreviated_is_no_json_but_a_usage_error(tmp_path: Path, spelled: str) -> None:
    # No option is taken by a part of its name: one line naming the whole one.
    done = _run(tmp_path, "status", spelled)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (f"choragos status: unrecognized arguments: {spelled} ({spelled}: "
                           "did you mean --json?) (see `choragos status --help`)\n")


@pytest.mark.parametrize(("argv", "said"), [
    # Status 1 before, where every other verb reading a broken config says 2.
    (["init", "--seats"], "init: .choragos.toml does not load, so its seats are unknown: "
                          ".choragos.toml:1: invalid TOML"),
    # The doctor hint came after a "\n" shown as the two characters.
    (["handoff", "--config", ".choragos.toml"], ".choragos.toml:1: invalid TOML: Expected ']' "
                                                "at the end of a table declaration (column 4); "
                                                "nothing was changed"),
])
def test_a_config_that_does_not_load_is_one_line_and_status_2(
        tmp_path: Path, argv: list[str], said: str) -> None:
    (tmp_path / ".choragos.toml").write_text("[ui\n")
    done = _run(tmp_path, *argv)
    assert done.returncode == 2 and said in done.stderr
    assert len(done.stderr.splitlines()) == 1 and "\\n" not in done.stderr


@pytest.mark.parametrize("verb", ["status", "board", "logs", "diff", "report", "attach"])
def test_a_target_too_long_to_look_up_is_no_session_not_a_traceback(tmp_path: Path,
                                                                    verb: str) -> None:
    # Path.is_dir raised ENAMETOOLONG out of -t's lookup.
    args = {"logs": ["coder"], "diff": ["T1"]}.get(verb, [])
    done = _run(tmp_path, verb, *args, "-t", "x" * 300)
    assert done.returncode == 3 and "Traceback" not in done.stderr
    assert "no directory and no running session is named xxx" in done.stderr


def test_a_huge_argument_is_not_echoed_whole(tmp_path: Path) -> None:
    done = _run(tmp_path, "status", "-t", "A" * 120_000)
    assert done.returncode == 3 and len(done.stderr) < 1100
    assert done.stderr.startswith("choragos status: no directory and no running session is "
                                  "named AAAA")
    assert "characters left out" in done.stderr


def test_serve_s_usage_error_is_shown_escaped(tmp_path: Path) -> None:
    done = _run(tmp_path, "serve", "\x1b]0;owned\x07\x1b[2J")
    assert done.returncode == 2
    assert done.stderr == ("choragos serve: unrecognized arguments: \\x1b]0;owned\\x07\\x1b[2J "
                           "(see `choragos serve --help`)\n")


def test_the_server_s_log_lines_show_escapes_as_text() -> None:
    import logging

    from choragos.cli.serve import InertFormatter

    made = InertFormatter("%(levelname)s %(message)s")
    record = logging.LogRecord("choragos", logging.INFO, __file__, 1,
                               "session running in %s", ("/p/\x1b]0;x\x07\x1b[2J",), None)
    assert made.format(record) == "INFO session running in /p/\\x1b]0;x\\x07\\x1b[2J"
    try:
        raise ValueError("bad\x1b[2J")
    except ValueError:
        failed = logging.LogRecord("choragos", logging.ERROR, __file__, 1, "died", (),
                                   sys.exc_info())
    lines = made.format(failed).split("\n")
    assert lines[0] == "ERROR died" and lines[1] == "Traceback (most recent call last):"
    assert lines[-1] == "ValueError: bad\\x1b[2J"
