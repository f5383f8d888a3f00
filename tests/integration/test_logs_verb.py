"""``choragos logs ROLE [-f]``: a role's transcript, read and followed, no session needed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.conftest import wait_until
from tests.integration.harness import base_env

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    logs = tmp_path / ".choragos" / "logs"
    logs.mkdir(parents=True)
    (logs / "coder.log.1").write_text("older line\n")
    (logs / "coder.log").write_text("=== header ===\nfirst line\nsecond \x1b[31mline\n")
    (tmp_path / "sub").mkdir()
    return tmp_path


def logs(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = base_env({"XDG_RUNTIME_DIR": str(cwd / "run")})
    return subprocess.run([sys.executable, "-m", "choragos", "logs", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=30)


def test_logs_prints_the_transcript_from_the_project_or_below(project: Path) -> None:
    out = logs("coder", cwd=project / "sub")
    assert out.returncode == 0, out.stderr
    # escape sequences are shown, never run on the reader's terminal
    assert out.stdout.splitlines() == ["=== header ===", "first line", "second \\x1b[31mline"]
    assert logs("coder", "-n", "1", cwd=project).stdout == "second \\x1b[31mline\n"
    assert logs("coder", "--all", cwd=project).stdout.splitlines()[0] == "older line"


def test_logs_says_what_is_wrong(project: Path) -> None:
    missing = logs("tester", cwd=project)
    assert missing.returncode == 1 and "tester has no transcript at" in missing.stderr
    bad = logs("../coder", cwd=project)
    assert bad.returncode == 2 and "bad role name" in bad.stderr


def test_follow_prints_appended_lines_across_a_rotation(project: Path) -> None:
    env = base_env({"XDG_RUNTIME_DIR": str(project / "run")})
    child = subprocess.Popen([sys.executable, "-m", "choragos", "logs", "coder", "-f"],
                             cwd=project, env=env, stdout=subprocess.PIPE, text=True)
    seen: list[str] = []
    reader = threading.Thread(target=lambda: seen.extend(iter(child.stdout.readline, "")),
                              daemon=True)
    reader.start()
    log = project / ".choragos" / "logs" / "coder.log"
    try:
        wait_until(lambda: len(seen) == 3, 10, message="the transcript so far")
        with log.open("a") as handle:
            handle.write("appended one\n")
        wait_until(lambda: "appended one\n" in seen, 10, message="the appended line")
        os.replace(log, project / ".choragos" / "logs" / "coder.log.1")  # rotation
        log.write_text("after the rotation\n")
        wait_until(lambda: "after the rotation\n" in seen, 10, message="the new file's line")
    finally:
        child.send_signal(signal.SIGINT)
        try:
            assert child.wait(10) == 0
        finally:  # an interrupt that did not stop it leaves no follower behind
            if child.poll() is None:
                child.kill()
                child.wait()
    reader.join(5)
    assert seen[3:] == ["appended one\n", "after the rotation\n"]


def test_a_line_wider_than_the_pane_is_one_line_in_the_transcript(serve) -> None:
    from tests.integration.harness import role_toml

    s = serve(role_toml("orchestrator", start=True))
    s.wait_booted(["orchestrator"])
    words = " ".join(f"word{n:03d}" for n in range(60))  # 479 characters: rows of any pane
    assert s.cli("keys", "orchestrator", "--text", words, "enter").returncode == 0
    s.wait(lambda: any(words in line for line in s.submitted("orchestrator")), 15,
           message="the line typed")
    assert s.stop() == 0
    out = s.cli("logs", "orchestrator")
    assert out.returncode == 0, out.stderr
    assert f"you said: {words}" in out.stdout.splitlines()
