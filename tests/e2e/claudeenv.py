"""Run the real Claude Code CLI in isolation, against the fake model only.

Three pieces, each usable on its own:

- ``install_claude()`` finds (or installs once, with ``make claude``) the CLI;
- ``prepare_home()`` / ``prepare_workspace()`` / ``claude_env()`` build an
  isolated HOME, a trusted git workspace with permission rules, and an
  environment built from scratch: nothing credential-like is inherited, and
  the base URL must be the loopback fake server;
- ``Terminal`` runs a program in a real PTY behind a pyte screen, the way
  choragos itself does, so tests see exactly what a pane would show.
"""

from __future__ import annotations

import contextlib
import fcntl
import getpass
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from urllib.parse import urlsplit

import ptyprocess
import pyte

from choragos.agents.screenstatus import input_pending

REPO = Path(__file__).resolve().parents[2]
CLAUDE_BIN = REPO / ".cache" / "claude" / "node_modules" / ".bin" / "claude"
FAKE_KEY = "sk-ant-test-000"

# What a role needs to run the protocol verbs and work on files without a
# permission dialog; anything else still asks (the tests rely on that).
DEFAULT_ALLOW = (
    "Bash(choragos delegate:*)",
    "Bash(choragos work-done:*)",
    "Read(./**)",
    "Edit(./**)",
    "Write(./**)",
)

# Switches that keep the CLI off the network and free of surprise dialogs
# (update checks, surveys, plugin marketplace installs, error reports).
QUIET_ENV = {
    "DISABLE_TELEMETRY": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY": "1",
    "CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL": "1",
}


# -- the binary ----------------------------------------------------------------------


def install_claude(timeout: float = 600.0) -> tuple[Path | None, str]:
    """The CLI's path, installing it with ``make claude`` if needed."""
    return install_cli("claude", CLAUDE_BIN, "the Claude Code CLI", timeout)


def install_cli(target: str, binary: Path, what: str,
                timeout: float = 600.0) -> tuple[Path | None, str]:
    """``binary``, installing it with ``make <target>`` if needed.

    Returns ``(None, reason)`` only when it truly cannot be had: npm is
    missing or the install failed.
    """
    if os.access(binary, os.X_OK):
        return binary, ""
    if shutil.which("npm") is None:
        return None, f"npm is not installed, so {what} cannot be installed"
    # The suite runs in several workers, each asking for the CLI at once:
    # one installs it, the others wait and find it there.
    lock = REPO / ".cache" / f"{target}.install-lock"
    lock.parent.mkdir(exist_ok=True)
    with open(lock, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        if os.access(binary, os.X_OK):
            return binary, ""
        return _make_cli(target, binary, timeout)


def _make_cli(target: str, binary: Path, timeout: float) -> tuple[Path | None, str]:
    try:
        done = subprocess.run(["make", "--no-print-directory", target], cwd=REPO,
                              capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"`make {target}` could not run: {exc}"
    if done.returncode != 0 or not os.access(binary, os.X_OK):
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        return None, f"`make {target}` failed ({done.returncode}): {' | '.join(tail)}"
    return binary, ""


def claude_version(binary: Path = CLAUDE_BIN) -> str:
    """``claude --version`` run with an empty environment (no network needed)."""
    done = subprocess.run([str(binary), "--version"], env=base_env(Path("/nonexistent")),
                          capture_output=True, text=True, timeout=30, check=True)
    return done.stdout.strip()


# -- HOME, workspace, environment -----------------------------------------------------


def prepare_home(home: Path, workspace: Path, key: str = FAKE_KEY) -> Path:
    """Write the ``.claude.json`` that takes the CLI straight to its prompt.

    Without it the CLI stops at the theme picker (onboarding), the
    "Detected a custom API key" question, or the folder trust question.
    """
    home.mkdir(parents=True, exist_ok=True)
    state = {
        "hasCompletedOnboarding": True,
        "theme": "dark",
        # The CLI remembers approved keys by their last 20 characters.
        "customApiKeyResponses": {"approved": [key[-20:]], "rejected": []},
        "projects": {str(workspace.resolve()): {
            "hasTrustDialogAccepted": True,
            "hasCompletedProjectOnboarding": True,
        }},
        "autoUpdates": False,
        "officialMarketplaceAutoInstallAttempted": True,
    }
    (home / ".claude.json").write_text(json.dumps(state, indent=2))
    return home


def saved_reply(home: Path, text: str) -> bool:
    """Whether a conversation Claude saved under ``home`` (its
    ``~/.claude/projects``) holds a reply of the model's containing ``text``
    (as written in the file's JSON: ``'"ok"'`` for a reply that is "ok").
    Claude writes the file after the reply is on its screen; a test that
    kills Claude and then needs the conversation (its ``--resume`` hint, a
    ``--continue``) waits for this first."""
    for path in (home / ".claude" / "projects").glob("*/*.jsonl"):
        with contextlib.suppress(OSError):
            for line in path.read_text(errors="replace").splitlines():
                if '"type":"assistant"' in line and text in line:
                    return True
    return False


def prepare_workspace(path: Path, allow: Iterable[str] = DEFAULT_ALLOW) -> Path:
    """A fresh git repository whose ``.claude/settings.json`` allows ``allow``."""
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True,
                   env=base_env(path), capture_output=True)
    settings = path / ".claude" / "settings.json"
    settings.parent.mkdir(exist_ok=True)
    settings.write_text(json.dumps({"permissions": {"allow": list(allow)}}, indent=2))
    return path


def base_env(home: Path) -> dict[str, str]:
    """The neutral part of every environment we spawn: no inherited secrets."""
    user = getpass.getuser()
    path = os.pathsep.join([str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin",
                            "/bin"])
    return {"HOME": str(home), "PATH": path, "TERM": "xterm-256color", "LANG": "C.UTF-8",
            "USER": user, "LOGNAME": user, "SHELL": "/bin/sh"}


def claude_env(home: Path, base_url: str, extra: Mapping[str, str] | None = None,
               key: str = FAKE_KEY) -> dict[str, str]:
    """The complete environment for one claude process, built from scratch.

    Refuses any provider URL that is not on the loopback interface: nothing
    started by the tests may reach a real model provider.
    """
    env = base_env(home)
    env.update(QUIET_ENV)
    env.update({"ANTHROPIC_API_KEY": key, "ANTHROPIC_BASE_URL": base_url})
    env.update(extra or {})
    for name, value in env.items():
        if name.endswith("_BASE_URL") and urlsplit(value).hostname not in ("127.0.0.1",
                                                                          "localhost"):
            raise ValueError(f"{name}={value!r} is not a loopback fake server")
    return env


# -- a PTY behind a pyte screen -------------------------------------------------------

BRACKETED_PASTE = 2004 << 5  # pyte keeps private (DEC ?) modes shifted left by 5


class Terminal:
    """A child process in a real PTY, rendered by pyte like a choragos pane."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path,
                 rows: int = 40, cols: int = 120) -> None:
        self.home = Path(env["HOME"])
        self.screen = pyte.Screen(cols, rows)
        self._stream = pyte.ByteStream(self.screen)
        self._lock = threading.Lock()
        self.started = time.monotonic()
        self.last_output = self.started
        self.feed_errors = 0
        self.proc = ptyprocess.PtyProcess.spawn(argv, env=env, cwd=str(cwd),
                                                dimensions=(rows, cols))
        # pyte answers device-attribute and cursor-position queries through
        # this hook; a real terminal would, and some CLIs wait for it.
        self.screen.write_process_input = self._answer
        self._reader = threading.Thread(target=self._pump, name="pty-reader", daemon=True)
        self._reader.start()

    def _answer(self, data: str) -> None:
        if self.proc.isalive():
            self.proc.write(data.encode())

    def _pump(self) -> None:
        while True:
            try:
                data = self.proc.read(65536)
            except EOFError:
                return
            with self._lock:
                self.last_output = time.monotonic()
                try:
                    self._stream.feed(data)
                except Exception:
                    # pyte raises on some odd sequences; a pane must survive them.
                    self.feed_errors += 1

    # -- reading the screen

    def lines(self) -> list[str]:
        with self._lock:
            return [line.rstrip() for line in self.screen.display]

    def text(self) -> str:
        return "\n".join(self.lines())

    @property
    def cursor(self) -> tuple[int, int]:
        with self._lock:
            return self.screen.cursor.x, self.screen.cursor.y

    @property
    def bracketed_paste(self) -> bool:
        with self._lock:
            return BRACKETED_PASTE in self.screen.mode

    def quiet_for(self) -> float:
        """Seconds since the child last wrote anything."""
        return time.monotonic() - self.last_output

    def wait_for(self, predicate: Callable[[list[str]], object], timeout: float = 15.0,
                 what: str = "screen condition") -> list[str]:
        """Poll the screen until ``predicate(lines)`` holds; fail with the screen."""
        deadline = time.monotonic() + timeout
        while True:
            lines = self.lines()
            if predicate(lines):
                return lines
            if time.monotonic() > deadline or not self.proc.isalive():
                screen = "\n".join(lines)
                raise AssertionError(f"timed out after {timeout}s waiting for {what}; "
                                     f"alive={self.proc.isalive()}; screen:\n{screen}")
            time.sleep(0.05)

    # -- typing

    def write(self, data: bytes | str) -> None:
        self.proc.write(data.encode() if isinstance(data, str) else data)

    def type_text(self, text: str, paste: bool | None = None) -> None:
        """Type ``text`` without Enter; wrap it in paste markers when asked to.

        ``paste=None`` follows the child: markers only if it enabled mode 2004.
        """
        use_paste = self.bracketed_paste if paste is None else paste
        clean = text.replace("\x1b", "")
        self.write(f"\x1b[200~{clean}\x1b[201~" if use_paste else clean)

    def submit(self, text: str, enter_delay: float = 0.2, paste: bool | None = None,
               echo: bool = True) -> None:
        """Type ``text``, then Enter as a separate write (the split-Enter rule).

        With ``echo`` the Enter waits until the text shows in the input box: a
        busy machine can keep the CLI from reading it for longer than the
        pause, and text and Enter read together are a paste that never
        submits.  Keys typed into a dialog show nowhere: ``echo=False``.
        """
        self.type_text(text, paste)
        time.sleep(enter_delay)  # the pause *is* the protocol: Enter must come alone
        if echo:
            self.wait_for(lambda lines: input_pending(lines, text.replace("\x1b", "")), 15,
                          f"{text[:40]!r} in the input box")
        self.write("\r")

    # -- ending

    def close(self, grace: float = 3.0) -> int:
        """SIGTERM the child's process group, SIGKILL after ``grace``; reap it.

        Returns the exit status, or minus the signal number that killed it.
        """
        self._signal_group(signal.SIGTERM)
        deadline = time.monotonic() + grace
        while self.proc.isalive() and time.monotonic() < deadline:
            time.sleep(0.02)
        if self.proc.isalive():
            self._signal_group(signal.SIGKILL)
        # Let the reader drain the last frames (exit messages) before the fd
        # goes: it ends at the PTY's end of file, which comes once they are
        # read; a loaded machine can take seconds to get there.
        self._reader.join(timeout=15)
        self.proc.close(force=True)
        if self.proc.exitstatus is not None:
            return self.proc.exitstatus
        return -(self.proc.signalstatus or 0)

    def _signal_group(self, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, sig)
