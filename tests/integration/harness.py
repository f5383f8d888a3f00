"""Run a real ``choragos serve --headless`` in a temp git repo, for tests.

Roles are fixture agents (tests/fixtures/agent.py) started through real
PTYs; the CLI verbs run as real subprocesses against the real socket.  The
environment is built explicitly, never inherited wholesale.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Callable
from pathlib import Path

from tests.conftest import pid_alive, wait_until

ROOT = Path(__file__).resolve().parents[2]
AGENT = ROOT / "tests" / "fixtures" / "agent.py"
# What a failed wait shows from the whole log, beside its tail.
DIAGNOSTIC_EVENTS = frozenset({"role state", "boot injection", "boot injection retry",
                               "injection", "injection retry", "injection held", "role exited"})


def base_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": os.environ.get("HOME", "/tmp"),
        "LANG": "C.UTF-8",
        "TERM": "xterm-256color",
        "PYTHONPATH": str(ROOT),
    }
    env.update(extra or {})
    return env


def role_toml(name: str, *flags: str, start: bool = False, **keys: object) -> str:
    args = json.dumps([str(AGENT), *flags])
    lines = ["[[roles]]", f'name = "{name}"', f"command = {json.dumps(sys.executable)}",
             f"args = {args}", f"start = {'true' if start else 'false'}"]
    for key, value in keys.items():
        lines.append(f"{key} = {json.dumps(value)}")
    return "\n".join(lines) + "\n"


def read_jsonl(path: Path) -> list[dict]:
    """JSON lines up to the first that does not parse (one still being written)."""
    if not path.exists():
        return []
    records = []
    for line in path.read_text().splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            break  # the next poll sees it whole
    return records


def read_agent_log(path: Path, kind: str | None = None,
                   role: str | None = None) -> list[dict]:
    """What the fixture agents recorded (tests/fixtures/agent.py), filtered."""
    records = read_jsonl(path)
    return [r for r in records if (kind is None or r["kind"] == kind)
            and (role is None or r["role"] == role)]


def git_init(path: Path) -> None:
    for args in (["init", "-q", "-b", "main"], ["config", "user.email", "t@example.com"],
                 ["config", "user.name", "Test"]):
        subprocess.run(["git", *args], cwd=path, check=True)
    (path / "README.md").write_text("hello\n")
    subprocess.run(["git", "add", "."], cwd=path, check=True)
    subprocess.run(["git", "commit", "-qm", "init"], cwd=path, check=True)


class Serve:
    def __init__(self, workdir: Path, config: str, *, sock: Path, git: bool = True) -> None:
        self.workdir = workdir
        self.sock = sock
        self.agent_log = workdir.parent / f"{workdir.name}-agents.jsonl"
        if git:
            git_init(workdir)
        (workdir / ".choragos.toml").write_text(config)
        self.env = base_env({"CHORAGOS_SOCK": str(sock), "AGENT_LOG": str(self.agent_log)})
        self.proc: subprocess.Popen | None = None
        self.stderr_path = workdir.parent / f"{workdir.name}-serve.err"

    def start(self, ready: bool = True, command: list[str] | None = None,
              args: tuple[str, ...] = ()) -> Serve:
        """Start ``serve --headless [args]``; ``command`` replaces ``python -m choragos``."""
        with open(self.stderr_path, "w") as err:  # the server has its own copy
            self.proc = subprocess.Popen(
                [*(command or [sys.executable, "-m", "choragos"]), "serve", "--headless",
                 *args], cwd=self.workdir, env=self.env, stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=err)
        # 30 s: on a saturated machine (two suites side by side on two cores)
        # the interpreter's start alone was seen to pass 15.
        wait_until(lambda: self.proc.poll() is not None or self._answers(), 30,
                   message="the session to answer on its socket")
        assert self.proc.poll() is None, self.stderr()
        return self

    def _answers(self) -> bool:
        if not self.sock.exists():
            return False
        return self.cli("ping", timeout=10).returncode == 0

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def cli(self, *args: str, timeout: float = 15, cwd: Path | None = None
            ) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "choragos", *args], cwd=cwd or self.workdir,
                              env=self.env, capture_output=True, text=True, timeout=timeout)

    def events(self, all_runs: bool = False) -> list[dict]:
        """The event log, from the latest ``deck starting`` unless ``all_runs``."""
        records = self._all_events()
        if all_runs:
            return records
        starts = [i for i, e in enumerate(records) if e["event"] == "deck starting"]
        return records[starts[-1]:] if starts else records

    def _all_events(self) -> list[dict]:
        return read_jsonl(self.workdir / ".choragos" / "logs" / "events.jsonl")

    def wait_event(self, match: Callable[[dict], bool], timeout: float = 15,
                   message: str = "event") -> dict:
        return self.wait(lambda: next((e for e in self.events() if match(e)), None),
                         timeout, message)

    def wait(self, predicate: Callable[[], object], timeout: float = 15,
             message: str = "condition", interval: float = 0.05) -> object:
        """wait_until, but a timeout shows what the session was doing."""
        try:
            return wait_until(predicate, timeout, interval=interval, message=message)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{self.diagnostics()}") from None

    def wait_merged(self, name: str, timeout: float = 30) -> str:
        """The text of ``name`` in the workdir once a merge has written it
        whole: git makes the file before it writes its bytes, so a file
        that exists may still read empty for a moment."""
        path = self.workdir / name
        return self.wait(lambda: path.exists() and path.read_text(), timeout,
                         message=f"the merge of {name}")

    def diagnostics(self) -> str:
        records = self.events()
        tail = records[-25:]
        # Boots and typing outcomes come early and decide most failures:
        # shown whole even when the tail has moved past them.
        early = [e for e in records[:-25] if e["event"] in DIAGNOSTIC_EVENTS][-40:]
        events = "\n".join(json.dumps(e)[:300] for e in early + tail)
        agents = "\n".join(json.dumps(r)[:300] for r in self.agents()[-15:])
        return (f"--- serve stderr (tail) ---\n{self.stderr()[-3000:]}\n"
                f"--- events (typing outcomes, then the tail) ---\n{events}\n"
                f"--- agents (tail) ---\n{agents}")

    def agents(self, kind: str | None = None, role: str | None = None) -> list[dict]:
        return read_agent_log(self.agent_log, kind, role)

    def submitted(self, role: str) -> list[str]:
        return [r["text"] for r in self.agents("submit", role)]

    def wait_booted(self, roles: list[str], timeout: float = 20) -> None:
        for role in roles:
            self.wait_event(lambda e, r=role: e["event"] == "boot injection"
                            and e["role"] == r and e["ok"], timeout, f"{role} boot")

    def board(self) -> dict[str, dict]:
        out = self.cli("board", "--json")
        assert out.returncode == 0, out.stderr
        return {t["id"]: t for t in json.loads(out.stdout)["tasks"]}

    def agent_pids(self) -> list[int]:
        return [int(r["text"]) for r in self.agents("start")]

    def kill9(self) -> None:
        """Kill the server outright, as an OOM kill or a crash would."""
        self.proc.kill()
        self.proc.wait()

    def stop(self, timeout: float = 70) -> int:
        # A clean stop may take 3 s of grace plus 30 s for the actors, and
        # serve ends itself after 60 s whatever happens: wait past both.
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()

    def assert_no_leftovers(self) -> None:
        pids = self.agent_pids()
        wait_until(lambda: not [pid for pid in pids if pid_alive(pid)], 5,
                   message=f"agent processes {pids} to be gone")
        assert not self.sock.exists(), "socket left behind"


def scrape(port: int) -> dict[tuple[str, tuple], float]:
    """A session's ``/metrics``, read by prometheus-client's own parser."""
    from prometheus_client.parser import text_string_to_metric_families
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
        text = answer.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def value(samples: dict, name: str, **labels: str) -> float | None:
    return samples.get((name, tuple(sorted(labels.items()))))
