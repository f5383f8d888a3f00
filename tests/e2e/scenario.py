"""A real ``choragos serve --headless`` with the real Claude Code CLI in every seat.

:class:`ClaudeCrew` extends the integration harness's :class:`Serve` (same
CLI verbs, event log and board helpers) with what a crew of real agents
needs: an isolated HOME that takes every claude straight to its prompt, a
trusted workspace with permission rules for the protocol verbs, and an
environment built from scratch whose only model provider is the loopback
fake.  ``choragos serve`` passes its environment on to the roles, so
building the *serve* environment is what keeps every claude off the network.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from tests.conftest import pid_alive
from tests.e2e.claudeenv import DEFAULT_ALLOW, claude_env, prepare_home
from tests.e2e.fakemodel import Block, FakeModel, Turn
from tests.integration.harness import Serve

# What a role's model sees as its brief (choragos.roles.briefs.boot_line).
BRIEF = "You are the {role} role in a choragos team"


def claude_role(name: str, command: str, *, start: bool = False, **keys: object) -> str:
    """One ``[[roles]]`` table running ``command`` (a claude) with no model flag."""
    lines = ["[[roles]]", f"name = {json.dumps(name)}", f"command = {json.dumps(command)}",
             f"start = {'true' if start else 'false'}"]
    lines += [f"{key} = {json.dumps(value)}" for key, value in keys.items()]
    return "\n".join(lines) + "\n"


class Hold:
    """A scripted reply that keeps the agent *working* until the test releases it.

    The fake model answers inside the request, so blocking there is exactly
    what a slow model looks like to the CLI: spinner up, "esc to interrupt".
    """

    def __init__(self, reply: list[Block], limit: float = 60.0) -> None:
        self.reply = reply
        self.limit = limit
        self.reached = threading.Event()
        self._released = threading.Event()

    def __call__(self, turn: Turn) -> list[Block]:
        self.reached.set()
        self._released.wait(self.limit)
        return self.reply

    def release(self) -> None:
        self._released.set()


class ClaudeCrew(Serve):
    """``choragos serve --headless`` in ``root/work``; every role a real claude."""

    def __init__(self, root: Path, config: str, model: FakeModel, claude: Path,
                 allow: Iterable[str] = DEFAULT_ALLOW, trusted: bool = True) -> None:
        (root / "work").mkdir()
        super().__init__(root / "work", config, sock=root / "s.sock")
        self.model = model
        self.claude = claude
        self.pids_seen: set[int] = set()
        self.holds: list[Hold] = []
        _write_settings(self.workdir, allow)
        # Untrusted: the HOME trusts a sibling folder, so claude asks about this
        # one (a trusted *parent* would skip the dialog and ignore the allow rules).
        home = prepare_home(root / "home", self.workdir if trusted else root / "elsewhere")
        self.home = home
        self.env = self._environment(root, home)

    def _environment(self, root: Path, home: Path) -> dict[str, str]:
        """The serve (and so every role's) environment, built from nothing.

        ``bin/claude`` links to the CLI so roles may name it either by
        absolute path or as plain ``claude`` found on PATH.
        """
        bindir = root / "bin"
        bindir.mkdir()
        (bindir / "claude").symlink_to(self.claude)
        env = claude_env(home, self.model.base_url)
        env["PATH"] = f"{bindir}{os.pathsep}{env['PATH']}"
        env["CHORAGOS_SOCK"] = str(self.sock)
        return env

    # -- reading the session ------------------------------------------------

    def status(self) -> dict[str, dict]:
        """``choragos status --json`` by role; remembers every pid it shows."""
        out = self.cli("status", "--json")
        assert out.returncode == 0, out.stderr
        roles = {r["name"]: r for r in json.loads(out.stdout)["roles"]}
        self.pids_seen.update(r["pid"] for r in roles.values() if r.get("pid"))
        return roles

    def state(self, role: str) -> str:
        return self.status()[role]["state"]

    def wait_state(self, role: str, state: str, timeout: float = 20) -> dict:
        return self.wait(lambda: (view := self.status()[role])["state"] == state and view,
                         timeout, f"{role} to be {state}", interval=0.2)

    def boot_injections(self, role: str) -> list[dict]:
        return [e for e in self.events()
                if e["event"] == "boot injection" and e["role"] == role]

    def injections(self, role: str, kind: str | None = None) -> list[dict]:
        return [e for e in self.events() if e["event"] == "injection" and e["role"] == role
                and (kind is None or e["kind"] == kind)]

    def wait_told(self, text: str, timeout: float = 30) -> None:
        """Until the fake model has received a user message containing ``text``."""
        try:
            self.model.wait_for_user_message(text, timeout)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{self.diagnostics()}") from None

    def times_told(self, text: str) -> int:
        return sum(text.lower() in said.lower() for said in self.model.user_messages())

    def hold(self, reply: list[Block], limit: float = 60.0) -> Hold:
        held = Hold(reply, limit)
        self.holds.append(held)
        return held

    # -- failures and cleanup -------------------------------------------------

    def diagnostics(self) -> str:
        told = "\n".join(m[:200] for m in self.model.user_messages()[-12:])
        return (f"{super().diagnostics()}\n--- the model was told (tail) ---\n{told}\n"
                f"--- what each role's screen showed last ---\n{self.transcripts(1200)}")

    def transcripts(self, last: int = 2500) -> str:
        logs = self.workdir / ".choragos" / "logs"
        return "\n".join(f"--- {path.name} ---\n{path.read_text(errors='replace')[-last:]}"
                         for path in sorted(logs.glob("*.log")) if path.name != "server.log")

    def finish(self) -> None:
        """Stop the session and check that no process it started is left."""
        for held in self.holds:
            held.release()
        code = self.stop()
        assert code == 0, f"serve exited {code}\n{self.diagnostics()}\n{self.transcripts()}"
        self.wait(lambda: not self.leftovers(), 10, "every process of the session to be gone")
        assert not self.sock.exists(), "socket left behind"

    def leftovers(self) -> list[int]:
        """Live processes that carry this session's socket or that it reported."""
        tagged = set(processes_with_env("CHORAGOS_SOCK", str(self.sock)))
        return sorted(pid for pid in tagged | self.pids_seen if pid_alive(pid))


def _write_settings(workspace: Path, allow: Iterable[str]) -> None:
    settings = workspace / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"permissions": {"allow": list(allow)}}, indent=2))


def processes_with_env(name: str, value: str) -> list[int]:
    """Pids whose environment has ``name=value`` (children of claude included)."""
    needle = f"{name}={value}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            found.append(int(entry.name))
    return found




def holds_for(predicate: Callable[[], object], seconds: float,
              interval: float = 0.2) -> bool:
    """``predicate`` stays true for ``seconds`` (a negative assertion needs a window)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not predicate():
            return False
        time.sleep(interval)
    return bool(predicate())
