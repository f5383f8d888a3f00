"""The built-in gateway, run by the session as a supervised child process.

The proxy runs in its own process (``choragos gateway --session``): a
stalled upstream or a burst of streams never competes with the session for
the interpreter, and a gateway that dies takes nothing else with it.  This
actor starts it, waits until it listens, and watches it.  When it exits the
actor marks the gateway down at once (the fail-closed gate closes without
waiting for the next probe) and crashes, so the supervisor starts a fresh
one within its restart budget.  Each process keeps its counters in the
session's counts file (:mod:`choragos.gateway.counts`), added to after
every counted response, and a fresh process starts from it, so the
session's counts stay cumulative even for the tokens of the last moments
before a crash.  The file is reset when the session starts its first
gateway: a new session does not inherit an old one's counts (a resumed one
goes on with its own: what it spent before the server died is still spent).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from functools import singledispatchmethod
from pathlib import Path
from typing import Any

import pykka

from choragos import statedir
from choragos.actors import messages as m
from choragos.actors.base import Actor
from choragos.actors.handle import ActorGone
from choragos.actors.latemessages import GatewayHealth, ProberState
from choragos.config.envpolicy import build_env
from choragos.config.model import ProxySettings
from choragos.fdwait import wait_ready
from choragos.gateway.counts import whole_file
from choragos.gateway.portfree import await_free
from choragos.gateway.watch import limit_of, read_news

READY_TIMEOUT = 15.0
PORT_WAIT = 3.0  # for the port held by a killed server's gateway, still ending
STOP_GRACE = 3.0
# The gateway passes on the agents' own keys; it needs none of the session's.
_DENY = ("ANTHROPIC_*", "OPENAI_*", "GEMINI_*", "GOOGLE_*", "CLAUDE_*", "CODEX_*", "AWS_*",
         "AZURE_*", "GCP_*", "CHORAGOS_*", "GITHUB_TOKEN", "GH_TOKEN", "GITLAB_TOKEN")


class ProxyDied(RuntimeError):
    """The gateway process is gone: the supervisor starts another."""


@dataclass(frozen=True)
class Launch:
    """Start the gateway's process and wait until it listens (each instance tells itself)."""


@dataclass(frozen=True)
class Ready:
    """Ask: '' once the gateway listens, else why it does not."""


@dataclass(frozen=True)
class SetBudgets:
    """The session's blocking budgets changed: the gateway gets the new policy."""

    policy: dict


@dataclass(frozen=True)
class Exited:
    """From the watch thread: the gateway's process ``pid`` exited (``status``)."""

    pid: int
    status: str


@dataclass
class ProxyRunnerState:
    """The gateway runner's state: its settings, its process, what keeps it down if anything."""

    settings: ProxySettings
    prober: ProberState
    log_path: Path
    events: Any  # EventLog.write
    counts_path: Path | None = None  # the gateway's counts file (None: counts die with it)
    key: bytes = b""  # the session's gateway key: the roles' keys derive from it
    proc: subprocess.Popen | None = None
    problem: str = "not started yet"
    spawned: int = 0  # processes started for this session
    policy: dict | None = None  # the blocking budgets (choragos.gateway.budgetgate.policy)
    # Resumed: the last totals journaled, a floor should the counts file be lost; the
    # file is then this session's own, and its first gateway goes on from it.
    resumed: dict | None = None


class ProxyRunner(Actor):
    """Starts the built-in proxy's process, waits until it listens, and watches it."""

    def __init__(self, state: ProxyRunnerState, core: Any, supervisor: Any = None) -> None:
        super().__init__("gateway-server", supervisor)
        self.s = state
        self.core = core

    def on_start(self) -> None:
        # Every instance, the first and each replacement, starts its own process.
        self.actor_ref.tell(Launch())

    def on_stop(self) -> None:
        self._end_process()  # a crash too: the replacement starts a process of its own
        super().on_stop()

    @singledispatchmethod
    def handle(self, message: Any) -> Any:
        return super().handle(message)

    @handle.register(Launch)
    def _launch(self, msg: Launch) -> None:
        s = self.s
        s.proc = self._spawn()
        problem = _await_ready(s.proc, READY_TIMEOUT)
        if problem:
            s.problem = f"the built-in gateway did not start: {problem}"
            self._end_process()
            self._down(s.problem)
            raise ProxyDied(s.problem)
        s.problem = ""
        s.events("gateway started", pid=s.proc.pid, addr=s.settings.addr)
        threading.Thread(target=self._watch, args=(s.proc,), name="gateway-watch",
                         daemon=True).start()
        threading.Thread(target=self._read_news, args=(s.proc,), name="gateway-news",
                         daemon=True).start()

    @handle.register(SetBudgets)
    def _set_budgets(self, msg: SetBudgets) -> None:
        self.s.policy = msg.policy
        if self.s.proc is not None:
            self._send_policy(self.s.proc)

    def _send_policy(self, proc: subprocess.Popen) -> None:
        if self.s.policy is None:
            return
        try:
            proc.stdin.write((json.dumps({"budgets": self.s.policy}) + "\n").encode())
            proc.stdin.flush()
        except OSError as exc:  # it is dying: its replacement gets the policy at start
            self.s.events("gateway budgets not sent", reason=str(exc.strerror or exc))

    @handle.register(Ready)
    def _ready(self, msg: Ready) -> str:
        return self.s.problem

    @handle.register(Exited)
    def _exited(self, msg: Exited) -> None:
        s = self.s
        if s.proc is None or s.proc.pid != msg.pid:
            return  # an old process, or one this actor stopped itself
        self._end_process()  # gone already: its pipes are closed, not left to the collector
        s.problem = f"the built-in gateway exited ({msg.status})"
        s.events("gateway exited", pid=msg.pid, status=msg.status)
        self._down(s.problem)
        raise ProxyDied(s.problem)

    # -- the process ---------------------------------------------------------------

    def _spawn(self) -> subprocess.Popen:
        s = self.s
        argv = [sys.executable, "-m", "choragos", "gateway", "--session",
                "--addr", s.settings.addr, "--timeout", _duration(s.settings.timeout)]
        for api, url in s.settings.upstream.by_api().items():
            argv += [f"--{api}", url]
        if not s.spawned:
            self._first(s)
        if s.counts_path is not None:
            argv += ["--state", str(s.counts_path)]
        s.spawned += 1
        log = statedir.append_fd(s.log_path)  # 0600, never through a link
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=log, env=build_env(os.environ, (), _DENY, {}),
                                    start_new_session=True)
        finally:
            os.close(log)
        # The session's key (on a pipe: never in the argv other users can read) and its
        # last totals (a floor under the counts file); then stdin stays open: its end
        # is the child's cue to go.
        line = {"key": s.key.hex(), "totals": s.prober.totals or s.resumed or {}}
        proc.stdin.write((json.dumps(line) + "\n").encode())
        proc.stdin.flush()
        self._send_policy(proc)
        return proc

    def _first(self, s: ProxyRunnerState) -> None:
        """Before the session's first gateway: a new session's counts start
        from zero; and the gateway of a server killed before this one (a
        resume) is let go of the port, once it has noticed (its stdin closed)."""
        if s.resumed is None:
            self._reset_counts()
        waited = await_free(s.settings.addr, PORT_WAIT)
        # None: someone else's, or one not ending: the gateway says it cannot listen.
        if waited:
            s.events("gateway port waited", addr=s.settings.addr, seconds=round(waited, 3))

    def _reset_counts(self) -> None:
        """The session's first gateway starts from zero, not from an older session's file.

        A file that cannot be reset (a full disk) is not used at all: a
        restarted gateway then starts from the session's last reading, as
        it would with no file.
        """
        s = self.s
        if s.counts_path is None:
            return
        try:
            statedir.write_text(s.counts_path, whole_file({}))
        except OSError as exc:
            s.events("gateway counts not kept", path=str(s.counts_path),
                     reason=str(exc.strerror or exc))
            s.counts_path = None

    def _watch(self, proc: subprocess.Popen) -> None:
        code = proc.wait()
        # A stopped instance is not told: its replacement watches a process of its own.
        with contextlib.suppress(pykka.ActorDeadError):
            self.actor_ref.tell(Exited(proc.pid, _status(code)))

    def _read_news(self, proc: subprocess.Popen) -> None:
        """The gateway's news (limits seen, limits over), passed to the core as it comes."""
        try:
            for line in proc.stdout:
                message = _news_message(line)
                if message is not None:
                    self.core.tell(message)
        except (OSError, ValueError, ActorGone):
            return  # the pipe was closed: the process is being ended

    def _end_process(self) -> None:
        proc, self.s.proc = self.s.proc, None
        if proc is None:
            return
        for end in (proc.stdin, proc.stdout):
            if end is not None:
                end.close()
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(STOP_GRACE)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def _down(self, reason: str) -> None:
        if self.s.prober.health.set(False, reason):
            self.core.tell(GatewayHealth(False, reason))


def _await_ready(proc: subprocess.Popen, timeout: float) -> str:
    """'' once the child printed its ``listening`` line, else what went wrong."""
    deadline = time.monotonic() + timeout
    seen = b""
    fd = proc.stdout.fileno()
    while b"\n" not in seen:
        left = deadline - time.monotonic()
        if left <= 0:
            return f"no answer within {timeout:g}s"
        if not wait_ready(fd, left):
            continue
        piece = os.read(fd, 4096)
        if not piece:
            proc.wait()
            return f"it exited ({_status(proc.returncode)}); see the gateway log"
        seen += piece
    return "" if seen.startswith(b"listening ") else f"unexpected output {seen[:80]!r}"


def _news_message(line: bytes) -> Any:
    news = read_news(line)
    if news is None:
        return None
    limit = limit_of(news)
    if limit is not None:
        return m.LimitReported(*limit)
    if isinstance(news.get("lifted"), str):
        return m.LimitLifted(news["lifted"])
    if isinstance(news.get("unblocked"), str):
        return m.BudgetRefused(news["unblocked"], "")
    blocked = news.get("blocked")
    if isinstance(blocked, dict) and isinstance(blocked.get("role"), str):
        return m.BudgetRefused(blocked["role"], str(blocked.get("why", ""))[:400])
    return None


def _status(code: int) -> str:
    return f"killed by signal {-code}" if code < 0 else f"exit status {code}"


def _duration(seconds: float | None) -> str:
    return "" if seconds is None else f"{seconds:g}s"
