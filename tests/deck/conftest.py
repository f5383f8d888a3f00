"""The real deck in a real tmux: each test gets its own tmux server, temp git
repository, private socket directory and fixture agents, and must leave no
process behind.

``TmuxDeck`` drives tmux the way a person would: ``send-keys`` to type,
``capture-pane -p`` to look.  Every wait polls a condition with a deadline.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import pid_alive, wait_until
from tests.integration.harness import base_env, git_init, read_agent_log, role_toml

TMUX = shutil.which("tmux")


class TmuxDeck:
    def __init__(self, root: Path, config: str) -> None:
        self.root = root
        self.workdir = root / "w"
        self.workdir.mkdir()
        git_init(self.workdir)
        (self.workdir / ".choragos.toml").write_text(config)
        self.sock = root / "s.sock"
        self.agent_log = root / "agents.jsonl"
        self.server = f"chd-{uuid.uuid4().hex[:10]}"
        runtime = root / "run"
        runtime.mkdir(mode=0o700)
        self.env = base_env({"CHORAGOS_SOCK": str(self.sock), "AGENT_LOG": str(self.agent_log),
                             "XDG_RUNTIME_DIR": str(runtime), "TERM": "xterm-256color"})
        self.env["PATH"] = f"{Path(sys.executable).parent}:{self.env['PATH']}"
        self.tmux("-f", "/dev/null", "new-session", "-d", "-x", "160", "-y", "50", "-c",
                  str(self.workdir), "bash --norc --noprofile")
        self.tmux("set-option", "-g", "status", "off")
        self.server_pids: set[int] = set()

    # -- tmux --------------------------------------------------------------------

    def tmux(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run([TMUX, "-L", self.server, *args], env=self.env,
                              capture_output=True, text=True, check=check, timeout=20)

    def keys(self, *keys: str, window: int = 0) -> None:
        self.tmux("send-keys", "-t", f":{window}", *keys)

    def type(self, text: str, window: int = 0) -> None:
        self.tmux("send-keys", "-t", f":{window}", "-l", text)

    def shell(self, command: str, window: int = 0) -> None:
        self.type(command, window)
        self.keys("Enter", window=window)

    def screen(self, window: int = 0) -> str:
        return self.tmux("capture-pane", "-p", "-t", f":{window}").stdout

    def new_window(self) -> int:
        self.tmux("new-window", "-c", str(self.workdir), "bash --norc --noprofile")
        return int(self.tmux("display-message", "-p", "#{window_index}").stdout.strip())

    def wait_screen(self, condition: str | Callable[[str], object], timeout: float = 15,
                    window: int = 0) -> str:
        check = (lambda text: condition in text) if isinstance(condition, str) else condition
        seen = {"text": ""}

        def probe() -> object:
            seen["text"] = self.screen(window)
            return check(seen["text"])
        try:
            wait_until(probe, timeout, interval=0.05, message=f"screen: {condition!r}")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n--- screen ---\n{seen['text']}\n"
                                 f"--- server.log (tail) ---\n{self.server_log()[-2500:]}"
                                 ) from None
        return seen["text"]

    # -- the session ---------------------------------------------------------------

    def serve(self) -> None:
        self.shell("choragos serve")
        self.wait_screen("C-b ? help", 30)
        self.server_pids.add(self.ls()[0]["pid"])

    def cli(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "choragos", *args], cwd=self.workdir,
                              env=self.env, capture_output=True, text=True, timeout=30)

    def delegate_gated(self, role: str, task: str) -> str:
        """Delegate ``task`` to a role behind a gate; the screen once the dialog shows."""
        out = self.cli("delegate", "--to", role, "--task", task)
        assert "waiting for approval" in out.stdout, out.stderr
        return self.wait_screen(lambda s: re.search(rf"Approval needed: T\d+ for {role}", s)
                                and "gate waiting" in s.splitlines()[-1])

    def ls(self) -> list[dict]:
        out = self.cli("ls", "--json")
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)["sessions"]

    def agents(self, kind: str | None = None, role: str | None = None) -> list[dict]:
        return read_agent_log(self.agent_log, kind, role)

    def agent_pids(self) -> dict[str, int]:
        return {r["role"]: int(r["text"]) for r in self.agents("start")}

    def submitted(self, role: str) -> list[str]:
        return [r["text"] for r in self.agents("submit", role)]

    def wait_booted(self, roles: list[str], timeout: float = 30) -> None:
        wait_until(lambda: all(any("choragos team" in line for line in self.submitted(r))
                               for r in roles), timeout, message=f"{roles} briefed")

    def server_log(self) -> str:
        path = self.workdir / ".choragos" / "logs" / "server.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def cleanup(self) -> None:
        if self.sock.exists():
            self.cli("kill", "--all")
        self.tmux("kill-server", check=False)
        pids = [*self.agent_pids().values(), *self.server_pids]
        wait_until(lambda: not [p for p in pids if pid_alive(p)], 15,
                   message=f"processes {pids} to be gone")
        assert not self.sock.exists(), "control socket left behind"
        assert not (self.root / "s.ui.sock").exists(), "attach socket left behind"




Cli = Callable[..., subprocess.CompletedProcess]


def cli_for(env: dict[str, str], cwd: Path) -> Cli:
    """``cli(*args, cwd=...)``: the choragos CLI under ``env``, run in ``cwd``
    unless told, its output captured."""
    default = cwd

    def cli(*args: str, cwd: Path = default) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "choragos", *args], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL)

    return cli


def kill_all_and_remove(cli: Cli, root: Path) -> None:
    """Every session ``cli`` reaches killed, the agents they started (in
    ``root/agents.jsonl``) gone, then ``root`` removed."""
    cli("kill", "--all")
    pids = [int(r["text"]) for r in read_agent_log(root / "agents.jsonl", "start")]
    wait_until(lambda: not any(pid_alive(p) for p in pids), 15, message="agents gone")
    shutil.rmtree(root, ignore_errors=True)


def scratch_project() -> tuple[Path, Path, dict[str, str]]:
    """A scratch root holding a git workspace with TEAM (``root/w``), and
    the environment for a session of its own there (socket, runtime folder,
    the agents' log): ``(root, workspace, env)``."""
    root = Path(tempfile.mkdtemp(prefix="chs-", dir="/tmp"))
    work = root / "w"
    work.mkdir()
    git_init(work)
    (work / ".choragos.toml").write_text(TEAM)
    runtime = root / "run"
    runtime.mkdir(mode=0o700)
    env = base_env({"CHORAGOS_SOCK": str(root / "s.sock"), "XDG_RUNTIME_DIR": str(runtime),
                    "AGENT_LOG": str(root / "agents.jsonl")})
    return root, work, env


TEAM = (role_toml("orchestrator", start=True) + role_toml("coder", "--worker")
        + role_toml("release", "--worker", approve=True)
        + "\n[ui]\nauto_focus = false\n")


@pytest.fixture
def deck() -> Iterator[Callable[..., TmuxDeck]]:
    if TMUX is None:
        pytest.skip("tmux is not installed")
    made: list[TmuxDeck] = []

    def make(config: str = TEAM) -> TmuxDeck:
        root = Path(tempfile.mkdtemp(prefix="chd-", dir="/tmp"))
        made.append(TmuxDeck(root, config))
        return made[-1]

    yield make
    for one in made:
        try:
            one.cleanup()
        finally:
            shutil.rmtree(one.root, ignore_errors=True)
