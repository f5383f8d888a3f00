"""Kill the server of a busy crew at random moments; check nothing acknowledged was lost.

A session runs detached (``choragos serve --detach``) in a real git
repository, checkpoints on, with fixture agents (tests/fixtures/agent.py):
an orchestrator, three workers that edit a file and run ``choragos
work-done`` (one slow), and a role whose work is gated.  The operator's
``choragos delegate`` calls come in a stream (some to two roles at once)
and a gate is approved now and then.  Every round the server is killed
(``kill -9``) at a random moment (seeded with ``--seed``) and resumed with
``choragos serve --resume --detach``; in a share of the rounds (``--early``)
a resume run in the foreground is killed first, in its own start.

After every kill, every resume and at the end, the invariants are checked
and each violation printed plainly:

- the journal left by the kill loads as it is (no salvage), and holds every
  delegation the CLI reported as acknowledged; the resume says nothing of
  damage or salvage;
- after the resume, every acknowledged task is on the board with its role
  and text, every acknowledged ``work-done`` is done (and, by the end, its
  report has reached the orchestrator), ids are unique and every state is
  one the board knows;
- gates pending before the kill are still pending after it; no approved
  gate is pending again;
- no task reached a worker again after its ``work-done`` was acknowledged,
  none was typed as new twice (a hand-back says the session restarted) and
  no report reached the orchestrator twice without the repeat mark;
- the event log parses line by line; every checkpoint ref (and every task's
  checkpoint) resolves, with every object it reaches;
- no agent process (or anything in its session) of a killed server is left
  once the resume is up; at the end, with the stream stopped and the gates
  approved, no task stays queued or delivered, and ``choragos shutdown``
  leaves no server, no agent and no socket.

With ``--wide`` the checks a work-done waits on are in the crew too: a role
owning a file that other roles' jobs now and then change, a verify on one
worker's work, a judge of another's, and the worktree role's merges at a
gate the operator's approvals open.  A task whose work-done was acked may
then stay delivered while its checks run; by the end, every acked
work-done of a job that changed the owned file (not its owner's) was held
at the owner gate, every done task of the verified role passed its verify
and every one of the judged role had its verdict (or was approved at the
owner gate).

Prints the rounds, then one JSON line (``{"bench": "chaos", ...}``) with the
counts, the violations and what the session was doing at each kill (the last
event it wrote).  Not in ``make bench`` (``make chaos``): it measures no time.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.common import emit, scratch  # noqa: E402
from choragos.board import journal  # noqa: E402
from choragos.board.tasks import TaskState  # noqa: E402
from choragos.session.daemon import sidecar_for  # noqa: E402
from tests.integration.harness import base_env, git_init, role_toml  # noqa: E402

WORKERS = ("quick", "other", "slow")
GATED = "gated"
KEEPER, CRITIC = "keeper", "critic"  # --wide: the owned file's owner, quick's judge
OWNED = "owned/ledger.md"
# --wide: slow's verify, long enough for kills to land in it; it passes.
VERIFY = f"{sys.executable} -c 'import time; time.sleep(0.4)'"


def team(worktree: bool, merge: str = "auto", wide: bool = False) -> str:
    """The crew; with ``worktree``, "other" works in a worktree of its own and
    its work is merged back (``merge``: when it applies, or at a gate the
    operator approves).  ``wide`` adds the checks a work-done waits on: a
    role owning a file the others' jobs now and then change (held at the
    owner gate), a verify on slow's work and a judge of quick's."""
    isolated = {"worktree": True, "merge": merge} if worktree else {}
    judged = {"judge": CRITIC} if wide else {}
    verified = {"verify": VERIFY} if wide else {}
    crew = (role_toml("lead", start=True)
            + role_toml("quick", "--worker", "--edit", "--work", "0.2", **judged)
            + role_toml("other", "--worker", "--edit", "--work", "0.5", **isolated)
            + role_toml("slow", "--worker", "--edit", "--work", "2.5", **verified)
            + role_toml(GATED, "--worker", "--edit", "--work", "0.2", approve=True))
    if wide:
        crew += (role_toml(KEEPER, "--worker", "--edit", "--work", "0.3", owns_files=[OWNED])
                 + role_toml(CRITIC, "--worker", "--verdict", "8", "--work", "0.3"))
    return crew


def trespasses(role: str, text: str) -> bool:
    """Whether a job changes the owned file and its role does not own it."""
    return role != KEEPER and f"write {OWNED} " in text


ACKED = re.compile(r"(T\d+) to (\w+)")
DONE = re.compile(r"^(T\d+) exit=0 ")
REPORT = re.compile(r"A worker reports: \[(T\d+) from ")  # unmarked: a repeat starts "(Repeated"
HEARD = re.compile(r"(?:\(Repeated after [^;]*; ignore it if you had it\) )?"
                   r"A worker reports: \[(T\d+) from ")
NEW_TASK = re.compile(r"New task (T\d+)")
TASK_ID = re.compile(r"\bT\d+\b")
STATES = {str(s) for s in TaskState}
Gate = tuple[str, str]  # a task id and the kind of gate it waits at


class Crew:
    """The session's directory, socket and environment, and the CLI against it."""

    def __init__(self, root: Path, compact: int, worktree: bool, merge: str = "auto",
                 wide: bool = False) -> None:
        self.workdir = root / "work"
        self.workdir.mkdir()
        git_init(self.workdir)
        self.wide = wide
        (self.workdir / ".choragos.toml").write_text(team(worktree, merge, wide))
        self.sock = root / "s.sock"
        self.agent_log = root / "agents.jsonl"
        self.env = base_env({"CHORAGOS_SOCK": str(self.sock), "AGENT_LOG": str(self.agent_log),
                             "CHORAGOS_JOURNAL_COMPACT": str(compact)})
        self.pids: list[int] = []  # every server this run started

    def cli(self, *args: str, timeout: float = 30) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "choragos", *args], cwd=self.workdir,
                              env=self.env, capture_output=True, text=True, timeout=timeout)

    def serve(self, *args: str) -> subprocess.CompletedProcess:
        done = self.cli("serve", "--detach", *args, timeout=120)
        if done.returncode == 0:
            self.pids.append(int(json.loads(sidecar_for(self.sock).read_text())["pid"]))
        return done

    @property
    def server(self) -> int:
        return self.pids[-1]

    def json(self, *args: str) -> dict:
        done = self.cli(*args, "--json")
        if done.returncode != 0:
            raise RuntimeError(f"choragos {' '.join(args)}: {done.stderr.strip()}")
        return json.loads(done.stdout)

    def board(self) -> list[dict]:
        return self.json("board", "--all")["tasks"]

    def gates(self) -> set[Gate]:
        """The gates pending, each by its task and its kind: one task may wait
        at more than one in turn (approved to go out, then held at the owner
        or merge gate once done)."""
        return {(g["id"], g.get("kind", "approval")) for g in self.json("gate", "list")["gates"]}

    def agents(self) -> list[dict]:
        return read_lines(self.agent_log)[0]

    @property
    def logs(self) -> Path:
        return self.workdir / ".choragos" / "logs"

    def events(self) -> tuple[list[dict], list[str]]:
        """The current event log (older ones are rotated to events.jsonl.N)."""
        return read_lines(self.logs / "events.jsonl")

    def every_event(self) -> list[dict]:
        """Every run's events, the rotated logs' too."""
        return [record for path in sorted(self.logs.glob("events.jsonl*"))
                for record in read_lines(path)[0]]

    def git(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", *args], cwd=self.workdir, capture_output=True, text=True)


def read_lines(path: Path) -> tuple[list[dict], list[str]]:
    """The whole lines of a JSON-lines file, and each that does not parse."""
    if not path.exists():
        return [], []
    records, bad = [], []
    text = path.read_text(errors="replace")
    for number, line in enumerate(text.split("\n")[:-1], 1):  # the last may be unfinished
        try:
            records.append(json.loads(line))
        except ValueError:
            bad.append(f"line {number}: {line[:120]!r}")
    return records, bad


class Ledger:
    """What the operator was told, and every invariant broken so far."""

    def __init__(self) -> None:
        self.acks: dict[str, tuple[str, str]] = {}  # id -> (role, text)
        self.approved: set[Gate] = set()
        self.sent = self.refused = self.approvals_sent = 0
        self.watched = 0  # agent sessions of killed servers checked for leftovers
        self.violations: list[str] = []
        self.lock = threading.Lock()

    def violate(self, when: str, what: str) -> None:
        line = f"VIOLATION ({when}): {what}"
        print(line, flush=True)
        self.violations.append(line)


class Operator:
    """The operator's stream of delegations, and an approval now and then.

    ``hold()`` stops new approvals from starting (one may be in flight: its
    id is returned), so the kill can read the gates it must find pending
    again; ``release()`` lets them go on."""

    def __init__(self, crew: Crew, ledger: Ledger, seed: int, every: float) -> None:
        self.crew, self.ledger, self.every = crew, ledger, every
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.held = False
        self.approving: Gate | None = None
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._delegate, daemon=True),
                        threading.Thread(target=self._approve, daemon=True)]
        self.n = 0

    def hold(self) -> Gate | None:
        with self.lock:
            self.held = True
            return self.approving

    def release(self) -> None:
        with self.lock:
            self.held = False

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def join(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(60)

    def _delegate(self) -> None:
        while not self.stop.wait(self.rng.uniform(0, 2 * self.every)):
            self.n += 1
            roles = self.rng.choice([[w] for w in WORKERS] + [[GATED], ["quick", GATED]]
                                    + ([[KEEPER]] if self.crew.wide else []))
            text = f"job {self.n}\nwrite out/job{self.n}.txt job {self.n}"
            # (not into the worktree role's: its merges would conflict on the file;
            # nor for two roles at once: the second would write what the first did)
            if self.crew.wide and (roles == [KEEPER] or (len(roles) == 1 and "other" not in roles
                                                         and self.rng.random() < 0.15)):
                text += f"\nwrite {OWNED} job {self.n}"  # the owner's, or a trespass
            done = self.crew.cli("delegate", "--to", ",".join(roles), "--task", text)
            with self.ledger.lock:
                self.ledger.sent += 1
                if done.returncode != 0:
                    self.ledger.refused += 1
                    continue
                for tid, role in ACKED.findall(done.stdout):
                    if tid in self.ledger.acks:
                        self.ledger.violate("delegate", f"{tid} acknowledged twice: "
                                            f"{self.ledger.acks[tid]} and {(role, text)}")
                    self.ledger.acks[tid] = (role, text)
            if "warning" in done.stderr and "not saved" in done.stderr:
                self.ledger.violate("delegate", f"acked but not saved: {done.stderr.strip()}")

    def _approve(self) -> None:
        while not self.stop.wait(self.rng.uniform(0.3, 1.5)):
            try:
                pending = sorted(self.crew.gates(), key=lambda g: (int(g[0][1:]), g[1]))
            except (RuntimeError, ValueError, subprocess.TimeoutExpired):
                continue
            with self.lock:
                if self.held or not pending:
                    continue
                self.approving = gate = self.rng.choice(pending)
            self.ledger.approvals_sent += 1
            if self.crew.cli("gate", "approve", gate[0]).returncode == 0:
                with self.ledger.lock:
                    self.ledger.approved.add(gate)
            with self.lock:
                self.approving = None


def processes() -> Iterator[tuple[int, list[str]]]:
    """Every live process: its pid and the fields of its stat after the name
    (state, ppid, pgrp, session, ...)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[0] != "Z":
            yield int(entry), fields


def session_members(sids: set[int]) -> dict[int, str]:
    """Every live process whose session is one of ``sids``: pid -> command line."""
    found = {}
    for pid, fields in processes():
        if int(fields[3]) not in sids:
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        found[pid] = cmd.decode(errors="replace").strip()[:160]
    return found


def children_sessions(pid: int) -> set[int]:
    """The sessions of ``pid``'s children: each agent runs in its own."""
    sids = {int(fields[3]) for _, fields in processes() if int(fields[1]) == pid}
    sids.discard(os.getsid(0))
    return sids


def ours(crew: Crew, pid: int) -> bool:
    """Whether ``pid`` is still one of this crew's agents, not a process that
    took its number since (pids come round again over hundreds of starts)."""
    try:
        cwd = os.readlink(f"/proc/{pid}/cwd")
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return cwd == str(crew.workdir.resolve()) and b"agent.py" in cmd


def gone(pid: int, deadline: float) -> bool:
    """Wait for ``pid`` to end (a zombie counts as ended) until ``deadline``."""
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return True
        if state == "Z":
            return True
        time.sleep(0.05)
    return False


def last_event(crew: Crew) -> str:
    records, _ = crew.events()
    return records[-1]["event"] if records else "(none)"


def check_journal(crew: Crew, ledger: Ledger, when: str) -> None:
    """The journal the kill left loads as it is and holds every acked delegation."""
    try:
        image = journal.load(journal.state_dir(crew.workdir))
    except journal.JournalError as exc:
        ledger.violate(when, f"the journal does not load without salvage: {exc}")
        return
    with ledger.lock:
        acks = dict(ledger.acks)
    missing = sorted(set(acks) - set(image.tasks), key=lambda t: int(t[1:]))
    if missing:
        ledger.violate(when, f"acknowledged tasks not in the journal: {missing}")


def check_board(crew: Crew, ledger: Ledger, when: str, pending: set[Gate] = frozenset()
                ) -> None:
    with ledger.lock:
        acks, approved = dict(ledger.acks), set(ledger.approved)
    done = {m.group(1) for r in crew.agents() if r["kind"] == "work-done"
            and (m := DONE.match(r["text"]))}
    tasks = crew.board()
    ids = Counter(t["id"] for t in tasks)
    if twice := [tid for tid, n in ids.items() if n > 1]:
        ledger.violate(when, f"task ids on the board more than once: {twice}")
    board = {t["id"]: t for t in tasks}
    for tid, (role, text) in acks.items():
        task = board.get(tid)
        if task is None:
            ledger.violate(when, f"acknowledged {tid} ({role}) is not on the board")
        elif (task["role"], task["text"]) != (role, text):
            ledger.violate(when, f"{tid} is {task['role']}: {task['text']!r}, acked as "
                           f"{role}: {text!r}")
    for tid in done:
        task = board.get(tid)
        if task is None or task["state"] == "done" or checking(task, when):
            continue
        ledger.violate(when, f"{tid}'s acknowledged work-done was lost: it is "
                       f"{task['state']} ({task.get('checks')!r})")
    for task in tasks:
        if task["state"] not in STATES:
            ledger.violate(when, f"{task['id']} has the state {task['state']!r}")
    gates = crew.gates()
    if lost := pending - gates:
        ledger.violate(when, f"gates pending before the kill are not pending after: "
                       f"{sorted(lost)} ({ {t: board.get(t, {}).get('state') for t, _ in lost} })")
    if again := gates & approved:
        ledger.violate(when, f"approved gates pending again: {sorted(again)}")


def checking(task: dict, when: str) -> bool:
    """Whether a task whose work-done was acked is still at its checks (a
    verify, a judge, an owner or merge gate): delivered, with a mark saying
    which; by the end every one is done."""
    return (when != "end" and task["state"] in ("delivered", "timed-out")
            and bool(task.get("checks") or task.get("waiting")))


def check_checks(crew: Crew, ledger: Ledger) -> None:
    """With ``--wide``, at the end: every acked work-done of a job that changed
    the owned file, not its owner's, was held at the owner gate; every done
    task of slow passed its verify, and quick's its judge."""
    done = {m.group(1) for r in crew.agents() if r["kind"] == "work-done"
            and (m := DONE.match(r["text"]))}
    events = crew.every_event()
    held = {e["task"] for e in events if e["event"] == "work held" and e.get("kind") == "owner"}
    verified = {e["task"] for e in events if e["event"] == "verify passed"}
    judged = {e["task"] for e in events if e["event"] == "verdict"}
    with ledger.lock:
        acks = dict(ledger.acks)
    board = {t["id"]: t for t in crew.board()}
    unheld = [tid for tid, (role, text) in acks.items() if tid in done and trespasses(role, text)
              and tid not in held]
    if unheld:
        ledger.violate("end", f"acked work-done that changed {OWNED} (not its owner's) never "
                       f"held at the owner gate: {sorted(unheld, key=lambda t: int(t[1:]))}")
    # (work held at the owner gate and approved there is not judged: the person decided)
    for role, seen, what in (("slow", verified, "verify passed"), ("quick", judged, "verdict")):
        missed = [tid for tid, (r, _) in acks.items() if r == role and tid not in seen
                  and board.get(tid, {}).get("state") == "done"
                  and not (role == "quick" and tid in held)]
        if missed:
            ledger.violate("end", f"{role}'s tasks done without a {what!r} event: "
                           f"{sorted(missed, key=lambda t: int(t[1:]))[:20]} ({len(missed)})")


def check_deliveries(crew: Crew, ledger: Ledger, when: str) -> None:
    """No task typed into a worker after its work-done was acked, none new twice."""
    done_at: dict[str, float] = {}
    fresh: Counter = Counter()
    for record in crew.agents():
        if record["kind"] == "work-done" and (m := DONE.match(record["text"])):
            done_at.setdefault(m.group(1), record["t"])
        elif record["kind"] == "submit" and record["role"] != "lead":
            line = record["text"]
            if m := NEW_TASK.search(line):
                fresh[m.group(1)] += 1
            # (a line asking for work on it: a notice about it, say its merge, is no
            # delivery)
            for tid in set(TASK_ID.findall(line)):
                if (tid in done_at and record["t"] > done_at[tid]
                        and f"work-done --id {tid}" in line):
                    ledger.violate(when, f"{tid} typed into {record['role']} after its "
                                   f"work-done was acknowledged: {line[:120]!r}")
                    done_at.pop(tid)  # once is enough to say
    if twice := {t: n for t, n in fresh.items() if n > 1 and (when, t) not in SAID}:
        SAID.update((when, t) for t in twice)
        ledger.violate(when, f"delivered as new more than once: {twice}")


SAID: set[tuple[str, str]] = set()


def check_reports(crew: Crew, ledger: Ledger, when: str, final: bool = False) -> None:
    """No report typed into the orchestrator twice without the repeat mark;
    at the end, every acknowledged work-done's report has reached it."""
    done, reports, heard = set(), Counter(), set()
    for record in crew.agents():
        if (record["kind"] == "work-done" and record["role"] != CRITIC
                and (m := DONE.match(record["text"]))):
            done.add(m.group(1))
        elif record["kind"] == "submit" and record["role"] == "lead":
            if m := REPORT.match(record["text"]):
                reports[m.group(1)] += 1
            if m := HEARD.match(record["text"]):
                heard.add(m.group(1))
    if twice := {t: n for t, n in reports.items() if n > 1 and (when, t) not in SAID}:
        SAID.update((when, t) for t in twice)
        ledger.violate(when, f"reports typed into the orchestrator twice, unmarked: {twice}")
    if final and (unheard := sorted(done - heard, key=lambda t: int(t[1:]))):
        ledger.violate(when, f"acknowledged work-done whose report never reached the "
                       f"orchestrator: {unheard[:20]} ({len(unheard)})")


def check_files(crew: Crew, ledger: Ledger, when: str) -> None:
    """The event log parses line by line; every checkpoint resolves whole."""
    bad = [f"{path.name} {line}" for path in sorted(crew.logs.glob("events.jsonl*"))
           for line in read_lines(path)[1]]
    if bad:
        ledger.violate(when, f"event log lines that do not parse: {bad[:3]} ({len(bad)})")
    refs = checkpoint_refs(crew)
    tasks = crew.board()
    # A ref made after the first listing is in the second; one pruned once
    # its task settled (after the board was read) is in the first.
    refs.update(checkpoint_refs(crew))
    if odd := [ref for ref, what in refs.items() if not what.endswith(" commit")]:
        ledger.violate(when, f"checkpoint refs that are not commits: {odd[:3]}")
    if refs:  # walked by object name: pruning may drop a ref meanwhile, never an object
        walk = crew.git("rev-list", "--objects", "--missing=print",
                        *(what.split()[0] for what in refs.values()))
        missing = [line for line in walk.stdout.splitlines() if line.startswith("?")]
        if walk.returncode != 0 or missing:
            ledger.violate(when, f"checkpoints reach missing objects: {missing[:3]} "
                           f"{walk.stderr.strip()[:200]}")
    for task in tasks:  # pruning spares the checkpoint of a task still at work
        ref = task.get("checkpoint")
        if ref and task["state"] in ("queued", "delivered", "timed-out") and ref not in refs:
            ledger.violate(when, f"{task['id']} is {task['state']} and its checkpoint {ref} "
                           "is not a ref")


def checkpoint_refs(crew: Crew) -> dict[str, str]:
    """Every checkpoint ref: its object name and type."""
    listed = crew.git("for-each-ref", "--format=%(refname) %(objectname) %(objecttype)",
                      "refs/choragos").stdout.split("\n")
    return dict(line.split(" ", 1) for line in listed if line)


def kill(crew: Crew, ledger: Ledger, when: str) -> tuple[set[int], set[str]]:
    """``kill -9`` the server; the agents' sessions and the gates pending just
    before (the caller holds the operator's approvals back)."""
    pending = crew.gates()
    sids = children_sessions(crew.server)
    os.kill(crew.server, signal.SIGKILL)
    if not gone(crew.server, time.monotonic() + 30):
        ledger.violate(when, f"the killed server {crew.server} is still there")
    return sids, pending


def resume(crew: Crew, ledger: Ledger, when: str, old: set[int]) -> None:
    started = crew.serve("--resume")
    if started.returncode != 0:
        ledger.violate(when, f"serve --resume failed: {started.stderr.strip()[-400:]}")
        raise SystemExit(1)
    said = started.stderr.lower()
    if "salvage" in said or "damaged" in said:
        ledger.violate(when, f"the resume speaks of damage: {started.stderr.strip()[:300]}")
    ledger.watched += len(old)
    left = session_members(old)
    deadline = time.monotonic() + 10
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = session_members(old)
    if left:
        ledger.violate(when, f"processes of the killed server's agents still run: {left}")
        for pid in left:
            os.kill(pid, signal.SIGKILL)  # the bench started them; the next round starts clean


def drain(crew: Crew, ledger: Ledger, patience: float) -> None:
    """Approve every gate and wait for every task to settle, as long as some
    settle within ``patience`` seconds; name those that do not."""
    open_states = {"queued", "gated", "delivered"}
    stuck: list[dict] = []
    deadline = time.monotonic() + patience
    while time.monotonic() < deadline:
        for gate in crew.gates():
            if crew.cli("gate", "approve", gate[0]).returncode == 0:
                with ledger.lock:
                    ledger.approved.add(gate)
        left = [t for t in crew.board() if t["state"] in open_states]
        if not left:
            return
        if len(left) != len(stuck):
            deadline = time.monotonic() + patience
        stuck = left
        time.sleep(0.5)
    roles = {r["name"]: r for r in crew.json("status")["roles"]}
    for task in stuck:
        role = roles.get(task["role"], {})
        ledger.violate("end", f"{task['id']} stays {task['state']} with {task['role']} "
                       f"(role {role.get('state')}, note {task.get('note')!r})")


def check_merged(crew: Crew, ledger: Ledger) -> None:
    """Every acked work-done of the worktree role's tasks came back into the
    main checkout (each job writes a file of its own, so none conflicts)."""
    done = {m.group(1) for r in crew.agents() if r["kind"] == "work-done"
            and (m := DONE.match(r["text"]))}
    with ledger.lock:
        acks = dict(ledger.acks)
    missing = [tid for tid, (role, text) in acks.items() if role == "other" and tid in done
               and not (crew.workdir / text.split()[-3]).exists()]
    if missing:
        ledger.violate("end", f"acknowledged work of the worktree role never merged: "
                       f"{sorted(missing, key=lambda t: int(t[1:]))[:20]} ({len(missing)})")


def wait_reports(crew: Crew, patience: float) -> None:
    """Until every acked work-done's report is in the orchestrator, or ``patience`` runs out."""
    deadline = time.monotonic() + patience
    while time.monotonic() < deadline:
        records = crew.agents()
        done = {m.group(1) for r in records if r["kind"] == "work-done" and r["role"] != CRITIC
                and (m := DONE.match(r["text"]))}
        heard = {m.group(1) for r in records if r["kind"] == "submit" and r["role"] == "lead"
                 and (m := HEARD.match(r["text"]))}
        if done <= heard:
            return
        time.sleep(0.5)


def shutdown(crew: Crew, ledger: Ledger) -> None:
    sids = children_sessions(crew.server)
    done = crew.cli("shutdown", timeout=120)
    if done.returncode != 0:
        ledger.violate("shutdown", f"choragos shutdown failed: {done.stderr.strip()}")
    if not gone(crew.server, time.monotonic() + 90):
        ledger.violate("shutdown", "the server outlived choragos shutdown")
        os.kill(crew.server, signal.SIGKILL)
    pids = {int(r["text"]) for r in crew.agents() if r["kind"] == "start"}
    alive = {pid for pid in pids if not gone(pid, time.monotonic() + 5) and ours(crew, pid)}
    left = session_members(sids | pids)
    if alive or left:
        ledger.violate("shutdown", f"agents left after shutdown: {sorted(alive)} {left}")
        for pid in alive | set(left):
            os.kill(pid, signal.SIGKILL)
    if crew.sock.exists():
        ledger.violate("shutdown", "the socket is left behind")


def run(root: Path, args: argparse.Namespace) -> dict:
    crew = Crew(root, args.compact, args.worktree, args.merge, args.wide)
    ledger = Ledger()
    started = crew.serve()
    if started.returncode != 0:
        raise SystemExit(f"serve --detach failed: {started.stderr}")
    operator = Operator(crew, ledger, args.seed + 1, args.every)
    moments: Counter = Counter()
    began = time.monotonic()
    try:
        operator.start()
        kill_rounds(crew, ledger, operator, args, moments)
        operator.join()
        drain(crew, ledger, args.drain)
        for check in (check_board, check_deliveries, check_files):
            check(crew, ledger, "end")
        check_journal(crew, ledger, "end")
        wait_reports(crew, args.drain)
        check_reports(crew, ledger, "end", final=True)
        if args.worktree:
            check_merged(crew, ledger)
        if args.wide:
            check_checks(crew, ledger)
    except BaseException:
        operator.join()
        crew.cli("kill", timeout=120)  # a failed bench leaves no crew behind
        raise
    shutdown(crew, ledger)
    tasks = journal.load(journal.state_dir(crew.workdir)).tasks
    return {"rounds": args.rounds, "kills": sum(moments.values()),
            "seconds": round(time.monotonic() - began),
            "delegates_sent": ledger.sent, "delegates_refused": ledger.refused,
            "tasks_acked": len(ledger.acks), "tasks": len(tasks),
            "done": sum(t["state"] == "done" for t in tasks.values()),
            "approvals": len(ledger.approved), "agent_sessions_checked": ledger.watched,
            "wide": args.wide, "merge": args.merge if args.worktree else None,
            "violations": len(ledger.violations),
            "moments": dict(moments.most_common()), "seed": args.seed,
            "violation_lines": ledger.violations[:20]}


def kill_rounds(crew: Crew, ledger: Ledger, operator: Operator, args: argparse.Namespace,
                moments: Counter) -> None:
    """Kill, check the journal, resume, check the rest; ``args.rounds`` times."""
    rng = random.Random(args.seed)
    for round_ in range(1, args.rounds + 1):
        time.sleep(rng.uniform(args.min_wait, args.max_wait))
        when = f"round {round_}"
        moment = last_event(crew)
        in_flight = operator.hold()  # no approval from the kill's gates to their check
        sids, pending = kill(crew, ledger, when)
        moments[moment] += 1
        check_journal(crew, ledger, when)
        if rng.random() < args.early:
            moment = kill_starting(crew, ledger, when, rng.uniform(0, args.early_max), sids)
            moments[f"resuming: {moment}"] += 1
        resume(crew, ledger, when, sids)
        check_board(crew, ledger, when, pending - {in_flight})
        operator.release()
        check_deliveries(crew, ledger, when)
        check_reports(crew, ledger, when)
        check_files(crew, ledger, when)
        with ledger.lock:
            print(f"round {round_}: killed at {moment!r}; {len(ledger.acks)} acked, "
                  f"{len(ledger.approved)} approved, {len(pending)} gates pending, "
                  f"{len(ledger.violations)} violations", flush=True)


def kill_starting(crew: Crew, ledger: Ledger, when: str, after: float, sids: set[int]) -> str:
    """A resume killed ``after`` seconds into its own start (run in the
    foreground, so its pid is known at once); what it was doing then.  The
    sessions of the agents it started join ``sids``."""
    with open(crew.workdir.parent / "starting.err", "a") as err:
        server = subprocess.Popen([sys.executable, "-m", "choragos", "serve", "--headless",
                                   "--resume"], cwd=crew.workdir, env=crew.env,
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=err)
    time.sleep(after)
    records, _ = crew.events()
    starts = [i for i, e in enumerate(records) if e["event"] == "deck starting"]
    began = starts and records[starts[-1]]["pid"] == server.pid
    moment = records[-1]["event"] if began else "before its first event"
    sids |= children_sessions(server.pid)
    server.kill()
    server.wait()
    check_journal(crew, ledger, f"{when}, killed resuming")
    return moment


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20, help="kills (and resumes)")
    parser.add_argument("--seed", type=int, default=1, help="the kills' moments and the stream")
    parser.add_argument("--min-wait", type=float, default=0.5,
                        help="seconds from a resume to the next kill, at least")
    parser.add_argument("--max-wait", type=float, default=4.0, help="and at most")
    parser.add_argument("--early", type=float, default=0.25,
                        help="the share of rounds whose resume is killed in its own start "
                        "too, before a resume that runs")
    parser.add_argument("--early-max", type=float, default=2.0,
                        help="how far into its start, at most, in seconds")
    parser.add_argument("--every", type=float, default=0.3,
                        help="mean seconds between the operator's delegations (beside the "
                        "call's own time)")
    parser.add_argument("--compact", type=int, default=40,
                        help="journal records between compactions (CHORAGOS_JOURNAL_COMPACT)")
    parser.add_argument("--drain", type=float, default=60,
                        help="seconds the end waits for the next task to settle")
    parser.add_argument("--worktree", action="store_true",
                        help="one worker in a worktree of its own, merged back automatically")
    parser.add_argument("--merge", choices=("auto", "gate"), default="auto",
                        help="with --worktree: its work merged when it applies, or at a "
                        "merge gate the operator's approvals open")
    parser.add_argument("--wide", action="store_true",
                        help="the checks a work-done waits on too: a role owning a file "
                        "that other roles' jobs sometimes change (held at the owner gate), "
                        "a verify on slow's work, a judge of quick's; implies --worktree "
                        "--merge gate")
    parser.add_argument("--keep-dir", action="store_true",
                        help="keep the session's directory (journal, logs, agents' record)")
    args = parser.parse_args()
    if args.wide:
        args.worktree, args.merge = True, "gate"
    if args.keep_dir:
        root = Path(tempfile.mkdtemp(prefix="chaos-", dir="/tmp"))
        print(f"the session's directory: {root} (kept)", flush=True)
        figures = run(root, args)
    else:
        with scratch("chaos-") as root:
            figures = run(root, args)
    emit("chaos", {}, **figures)
    if figures["violations"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
