"""A crew left alone: what grows, and what slows, over hundreds of tasks.

A real ``choragos serve --headless`` runs the mixed-vendor recipe in a loop
with the three real CLIs, each against its scripted fake server (the
environment is built from nothing, as the end-to-end tests build it): Claude
Code orchestrates, Codex writes ``r<N>.txt``, Gemini CLI reviews it, and the
orchestrator starts the next round when the review is in.  Every
``--window`` settled tasks the script samples the server: wall time and CPU
per task, resident memory, threads, open files, child processes, the
journal's and the event log's size and the checkpoint refs.

The reference is the same session's first window: the ratios are the last
window's time and CPU per task against the first's (a session that slows
as its history grows shows > 1), and the memory the server gained per task
after the first window, when its caches and scrollback are still filling.
Beside the CPU per task, the server's threads are split (Linux): the roles'
PTY readers (threads named ``pty-<role>``: the agents' output, read and
parsed, which the agents decide) and the rest (the session's own work per
task), each per task, with the agents' output per task, and the server's
reads outside its readers per task (its own files, /proc, the socket, and
what the ``git`` children it reaps read); then each role's reader apart, and
the machine's load average at each sample (between runs the ratio follows
the load more than any change).
At the end every task must be done and the session must stop leaving no
process behind.  Needs the CLIs (``make seats``); not part of the test
suite, and not of ``make bench`` (it takes minutes): ``make soak``.

    .venv/bin/python bench/soak.py [--rounds 150] [--window 50]

``--fixtures`` runs the report path's soak instead, with fixture agents and
no real CLI (``bench/fixture_soak.py``): three workers, three-digit task
ids, every report typed into the orchestrator exactly once?

    .venv/bin/python bench/soak.py --fixtures [--minutes 10] [--every 0.5]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.common import emit, process_cpu, process_rss_mb, scratch  # noqa: E402
from tests.e2e import fakegemini, fakeopenai  # noqa: E402
from tests.e2e.claudeenv import CLAUDE_BIN  # noqa: E402
from tests.e2e.fakegemini import FakeGemini  # noqa: E402
from tests.e2e.fakemodel import Block, FakeModel, Turn, text, tool  # noqa: E402
from tests.e2e.fakeopenai import FakeOpenAI  # noqa: E402
from tests.e2e.scenario import BRIEF  # noqa: E402
from tests.e2e.seats import CODEX_BIN, GEMINI_BIN, Fakes, SeatCrew, seat_role  # noqa: E402

NEW_TASK = re.compile(r"New task T(\d+) from choragos")
STUCK_AFTER = 180.0  # seconds without a task settling


class Orchestrator:
    """Claude's script: a round is a coder task, then a review of its file."""

    def __init__(self, rounds: int) -> None:
        self.rounds = rounds
        self.round = 0
        self._lock = threading.Lock()

    def __call__(self, turn: Turn) -> list[Block]:
        with self._lock:
            if self.round == 0 and BRIEF.format(role="orchestrator") in turn.text:
                return self._next()
            if re.search(r"\[T\d+ from coder\]", turn.text):
                return _bash(f'choragos delegate --to reviewer --task "Review r{self.round}.txt"')
            if re.search(r"\[T\d+ from reviewer\]", turn.text):
                return self._next() if self.round < self.rounds else text("All rounds done.")
            return text("Waiting for the team.")

    def _next(self) -> list[Block]:
        self.round += 1
        return _bash(f'choragos delegate --to coder --task "Round {self.round}: '
                     f'write r{self.round}.txt"')


class Worker:
    """A seat's script: do the task's one command, then report it done."""

    def __init__(self, command: Callable[[str], str],
                 shell: Callable[[str, Turn], list[Block]]) -> None:
        self.command, self.shell = command, shell
        self.current: str | None = None
        self.reported: set[str] = set()

    def __call__(self, turn: Turn) -> list[Block]:
        found = NEW_TASK.search(turn.all_text)
        if found and found.group(1) not in self.reported and found.group(1) != self.current:
            self.current = found.group(1)
            return self.shell(self.command(self.current), turn)
        if self.current and self.current not in self.reported and turn.tool_text:
            self.reported.add(self.current)
            return self.shell(f'choragos work-done --id T{self.current} --done '
                              f'--task "finished T{self.current}"', turn)
        return text("Done.")


def review(coder: Worker, listing: bool) -> Callable[[str], str]:
    """The reviewer's command: it reads the file the coder wrote last (the
    one it was asked to review).
    With ``listing`` it lists the workspace instead, as the soak did before
    the sixth pass: the coder adds a file to the top directory every round,
    so that listing (and Gemini CLI's box around it, truncated with more
    redraws past about 100 files) grows with the history, and so does the
    agents' output per task -- the bench's own workload, not the session."""
    if listing:
        return lambda n: "ls"
    return lambda n: f"cat r{coder.current}.txt"


def _bash(command: str) -> list[Block]:
    return tool("Bash", {"command": command, "description": "Run a command"})


def sample(s: SeatCrew, started: float, done: int) -> dict:
    pid = s.proc.pid
    state = s.workdir / ".choragos" / "state"
    refs = s.workdir / ".git" / "refs" / "choragos"
    return {"t": round(time.monotonic() - started, 1), "done": done,
            "cpu": round(process_cpu(pid), 2), "rss_mb": round(process_rss_mb(pid), 1),
            "threads": len(os.listdir(f"/proc/{pid}/task")),
            "fds": len(os.listdir(f"/proc/{pid}/fd")), "children": _children(pid),
            "journal_kb": _kb(state / "journal.log"),
            "events_kb": _kb(s.workdir / ".choragos" / "logs" / "events.jsonl"),
            "refs": sum(len(files) for _, _, files in os.walk(refs)),
            "read_kb": _read_kb(pid), "load": round(os.getloadavg()[0], 1), **_readers(pid)}


def _readers(pid: int) -> dict:
    """The CPU seconds and KB read of the roles' PTY readers (threads named
    ``pty-<role>``): the agents' output and its parsing, which the agents
    decide, apart from the rest of the server; in all and per role (one
    agent's output growing shows as its own).  A reader that ended (a role
    restarted, or a turn's thread after a flood) leaves its share in the
    rest."""
    cpu = kb = 0.0
    roles: dict[str, list[float]] = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        task = Path(f"/proc/{pid}/task/{tid}")
        try:
            if not (name := (task / "comm").read_text().strip()).startswith("pty-"):
                continue
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
            io = (task / "io").read_text()
        except OSError:
            continue
        seconds = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        read = int(io.split("rchar:", 1)[1].split()[0]) / 1024
        cpu, kb = cpu + seconds, kb + read
        role = roles.setdefault(name.removeprefix("pty-"), [0.0, 0.0])
        role[0], role[1] = round(role[0] + seconds, 2), round(role[1] + read)
    return {"readers_cpu": round(cpu, 2), "readers_read_kb": round(kb), "roles": roles}


def _read_kb(pid: int) -> int:
    """KB the server has read so far (its agents' output most of it; sockets
    and files too): a task that costs more CPU may just bring more output."""
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1]) // 1024
    return 0


def _children(pid: int) -> int:
    count = 0
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and int((entry / "stat").read_text()
                                            .rsplit(")", 1)[1].split()[1]) == pid:
                count += 1
        except OSError:
            continue
    return count


def _kb(path: Path) -> int:
    return path.stat().st_size // 1024 if path.exists() else 0


# Events that put a task in a state this loop never leads to.
ODD_EVENTS = {"task failed": "failed", "timeout": "timed_out", "delegate gated": "gated",
              "gate rejected": "rejected"}


class Settled:
    """Tasks settled so far, read from the session's event log as it grows.
    Nothing is asked of the session: the board asked for every second cost
    the server more as its live board filled to its 100 done tasks (and
    listing the archive, more as the history grew), which is what is
    measured."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.rest = b""
        self.done: set[str] = set()
        self.odd: dict[str, str] = {}

    def read(self) -> tuple[int, dict[str, str]]:
        """Tasks reported done, and any task in a state this loop never leads to."""
        try:
            if self.path.stat().st_size < self.offset:  # rotated: the rest is in .1
                self._take(self.path.with_name(self.path.name + ".1"))
                self.offset, self.rest = 0, b""
            self._take(self.path)
        except FileNotFoundError:
            pass
        return len(self.done), dict(self.odd)

    def _take(self, path: Path) -> None:
        with path.open("rb") as handle:
            handle.seek(self.offset)
            data = handle.read()
        self.offset += len(data)
        *lines, self.rest = (self.rest + data).split(b"\n")
        for line in lines:
            record = json.loads(line)
            event, task = record.get("event"), record.get("task")
            if event == "work-done" and record.get("done") and record.get("outcome") == "done":
                self.done.add(task)
            elif event in ODD_EVENTS:
                self.odd[task] = ODD_EVENTS[event]


def board_settled(s: SeatCrew) -> tuple[int, dict[str, str]]:
    """The same from the board, once at the end: the archive counted, not listed."""
    board = json.loads(s.cli("board", "--json").stdout)
    tasks = board["tasks"]
    done = sum(t["state"] == "done" for t in tasks) + sum(
        a["count"] for a in board["archived_by"] if a["state"] == "done")
    return done, {t["id"]: t["state"] for t in tasks if t["state"] not in ("done", "delivered",
                                                                           "queued")}


def run(s: SeatCrew, total: int, window: int) -> list[dict]:
    s.wait_booted(["orchestrator", "coder", "reviewer"], timeout=90)
    started = time.monotonic()
    samples = [sample(s, started, 0)]
    moved, last = time.monotonic(), 0
    log = Settled(s.workdir / ".choragos" / "logs" / "events.jsonl")
    while samples[-1]["done"] < total:
        time.sleep(1.0)
        done, odd = log.read()
        if odd:
            raise SystemExit(f"a task went wrong: {odd}\n{s.diagnostics()}")
        if done > last:  # (against the last sample, a stall after it never ended the run)
            moved, last = time.monotonic(), done
        if done >= samples[-1]["done"] + window or done >= total:
            samples.append(sample(s, started, done))
            print(json.dumps(samples[-1]), flush=True)
        if time.monotonic() - moved > STUCK_AFTER:
            raise SystemExit(f"no task settled for {STUCK_AFTER:.0f} s\n{s.diagnostics()}")
    done, odd = board_settled(s)
    if done < samples[-1]["done"] or odd:
        raise SystemExit(f"the board disagrees with the event log: {done} done, {odd}\n"
                         f"{s.diagnostics()}")
    return samples


def per_task(a: dict, b: dict, key: str) -> float:
    return (b[key] - a[key]) / max(b["done"] - a["done"], 1)


def rest_per_task(a: dict, b: dict) -> float:
    """The server's CPU per task outside its PTY readers."""
    return per_task(a, b, "cpu") - per_task(a, b, "readers_cpu")


def other_read_per_task(a: dict, b: dict) -> float:
    """KB a task the server read outside its PTY readers: its own files (the
    checkpoints' objects and private index, git's config and refs), /proc,
    the control socket's requests, and what the children it ran and reaped
    (``git diff``) read."""
    return per_task(a, b, "read_kb") - per_task(a, b, "readers_read_kb")


def per_read_mb(a: dict, b: dict) -> float:
    """The server's CPU ms per MB it read (its agents' output, most of it)."""
    return (b["cpu"] - a["cpu"]) * 1000 / max((b["read_kb"] - a["read_kb"]) / 1024, 1e-9)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=150, help="coder + review pairs")
    parser.add_argument("--window", type=int, default=50, help="tasks between samples")
    parser.add_argument("--list-review", action="store_true",
                        help="the reviewer lists the workspace (`ls`, whose output grows "
                        "a line a round) instead of reading the file it reviews")
    parser.add_argument("--fixtures", action="store_true",
                        help="the report path with fixture agents (no real CLI)")
    parser.add_argument("--minutes", type=float, default=10.0, help="--fixtures: how long "
                        "the orchestrator delegates")
    parser.add_argument("--every", type=float, default=0.5, help="--fixtures: seconds "
                        "between delegations")
    parser.add_argument("--work", type=float, default=0.2, help="--fixtures: seconds a "
                        "job takes")
    parser.add_argument("--window-s", type=float, default=60.0, help="--fixtures: seconds "
                        "a window lasts")
    parser.add_argument("--drain", type=float, default=180.0, help="--fixtures: seconds the "
                        "reports in flight get once delegating stops")
    args = parser.parse_args()
    if args.fixtures:
        fixtures(args)
        return
    for binary in (CLAUDE_BIN, GEMINI_BIN, CODEX_BIN):
        if not binary.exists():
            raise SystemExit(f"{binary} is missing: run `make seats` first")
    root = Path(tempfile.mkdtemp(prefix="chg-soak-", dir="/tmp"))
    with FakeModel() as claude, FakeGemini() as gemini, FakeOpenAI() as openai:
        claude.on(lambda turn: True, Orchestrator(args.rounds), once=False)
        # The coder writes r<its task's number>.txt; the reviewer reads it.
        coder = Worker(lambda n: f"printf 'round {n}\\n' > r{n}.txt",
                       lambda c, t: fakeopenai.shell(c)(t))
        openai.on(lambda turn: True, coder, once=False)
        gemini.on(lambda turn: True, Worker(review(coder, args.list_review),
                                            lambda c, t: fakegemini.shell(c)), once=False)
        team = (seat_role("orchestrator", "claude", start=True) + seat_role("coder", "codex")
                + seat_role("reviewer", "gemini"))
        s = SeatCrew(root, team, Fakes(claude, gemini, openai),
                     {"claude": CLAUDE_BIN, "gemini": GEMINI_BIN, "codex": CODEX_BIN})
        s.start()
        try:
            samples = run(s, 2 * args.rounds, args.window)
        finally:
            s.finish()  # raises if a process of the session is left behind
    report(samples, args)


def fixtures(args: argparse.Namespace) -> None:
    from bench import fixture_soak
    args.window = args.window_s
    with scratch("chg-soak-") as root:
        result = fixture_soak.run(root, args)
    fixture_soak.report(result, args)


def report(samples: list[dict], args: argparse.Namespace) -> None:
    first, warm, last = samples[:2], samples[1], samples[-2:]
    print(f"\n{'tasks':>6} {'s/task':>7} {'cpu ms/task':>12} {'read KB/task':>13} "
          f"{'cpu ms/MB read':>15} {'rss MB':>7} {'threads':>8} {'fds':>4} {'journal KB':>11} "
          f"{'refs':>5} {'readers ms/task':>16} {'output KB/task':>15} {'rest ms/task':>13} "
          f"{'other read KB/task':>19} {'load':>5}")
    for a, b in itertools.pairwise(samples):
        print(f"{b['done']:>6} {per_task(a, b, 't'):>7.2f} {per_task(a, b, 'cpu') * 1000:>12.1f} "
              f"{per_task(a, b, 'read_kb'):>13.1f} {per_read_mb(a, b):>15.1f} {b['rss_mb']:>7.1f} "
              f"{b['threads']:>8} {b['fds']:>4} {b['journal_kb']:>11} {b['refs']:>5} "
              f"{per_task(a, b, 'readers_cpu') * 1000:>16.1f} "
              f"{per_task(a, b, 'readers_read_kb'):>15.1f} {rest_per_task(a, b) * 1000:>13.1f} "
              f"{other_read_per_task(a, b):>19.1f} {b['load']:>5.1f}")
    report_roles(samples)
    time_ratio = per_task(*last, "t") / per_task(*first, "t")
    cpu_ratio = per_task(*last, "cpu") / max(per_task(*first, "cpu"), 1e-9)
    grown = per_task(warm, samples[-1], "rss_mb") * 1024
    # Added beside the CPU per task, not in its place: the agents' output per
    # task grows as their conversations do, and the server's CPU follows it.
    read_ratio = per_read_mb(*last) / max(per_read_mb(*first), 1e-9)
    # Also beside it: the agents' output per task (what the PTY readers read),
    # and the server's CPU per task outside the readers, whose growth is the
    # session's own (its checkpoints, board, journal, typing, screens read).
    output_ratio = per_task(*last, "readers_read_kb") / max(
        per_task(*first, "readers_read_kb"), 1e-9)
    rest_ratio = rest_per_task(*last) / max(rest_per_task(*first), 1e-9)
    # And the server's reads outside the readers: "read KB/task" is mostly
    # the agents' output, and grows with it.
    other_ratio = other_read_per_task(*last) / max(other_read_per_task(*first), 1e-9)
    emit("soak", {"time per task, last/first window": time_ratio,
                  "cpu per task, last/first window": cpu_ratio,
                  "cpu per MB read, last/first window": round(read_ratio, 3),
                  "agents' output per task, last/first window": round(output_ratio, 3),
                  "cpu per task outside the PTY readers, last/first window": round(rest_ratio,
                                                                                    3),
                  "server's reads outside the PTY readers per task, last/first window": round(
                      other_ratio, 3)},
         rounds=args.rounds, tasks=samples[-1]["done"], rss_kb_per_task_after_warmup=round(
             grown, 1), threads=[samples[0]["threads"], samples[-1]["threads"]],
         fds=[samples[0]["fds"], samples[-1]["fds"]], samples=samples)


def report_roles(samples: list[dict]) -> None:
    """Each role's reader apart: its CPU ms and its agent's output KB per task,
    and last window / first, so one agent's growth is told from the rest."""
    roles = sorted(samples[-1]["roles"])
    print("\nper role's PTY reader: cpu ms/task, output KB/task")
    print(f"{'tasks':>8} " + " ".join(f"{role:>22}" for role in roles))
    for a, b in itertools.pairwise(samples):
        print(f"{b['done']:>8} " + " ".join(
            f"{'{:.1f} ms {:.1f} KB'.format(*role_per_task(a, b, r)):>22}" for r in roles))
    first, last = samples[:2], samples[-2:]
    ratios = [[now / max(was, 1e-9) for now, was in zip(role_per_task(*last, r),
                                                         role_per_task(*first, r), strict=True)]
              for r in roles]
    print(f"{'last/1st':>8} " + " ".join(f"{'{:.2f}x {:.2f}x'.format(*x):>22}" for x in ratios))


def role_per_task(a: dict, b: dict, role: str) -> tuple[float, float]:
    """One role's reader between two samples: CPU ms and output KB per task."""
    was, now = a["roles"].get(role, [0.0, 0.0]), b["roles"].get(role, [0.0, 0.0])
    tasks = max(b["done"] - a["done"], 1)
    return (now[0] - was[0]) * 1000 / tasks, (now[1] - was[1]) / tasks


if __name__ == "__main__":
    main()
