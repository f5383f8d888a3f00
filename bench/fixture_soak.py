"""The report path left alone, with fixture agents: no real CLI needed.

A real ``choragos serve --headless`` runs a scripted orchestrator (the
fixture agent's ``--delegate`` mode) that hands a job to one of three
fixture workers every ``--every`` seconds for ``--minutes``; each worker
does it and reports with ``choragos work-done``, and the session types each
report into the orchestrator.  The orchestrator's prompt is padded so that
a report about a three-digit task id ends exactly at the last column of its
120-column input row, the row filled to its end that the echo check once
missed (and then typed the report twice); four-digit ids wrap onto a
second row.

Read back from what the agents recorded: every report typed into the
orchestrator once, twice or not at all, and per window of ``--window``
seconds the jobs delegated, the reports typed and how long a report took
from its ``work-done`` to the orchestrator's input; the reference is the
same session's first window.  Run by ``bench/soak.py --fixtures``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import statistics
import time
from collections import Counter
from pathlib import Path

from bench.common import emit, process_cpu, process_rss_mb
from choragos.actors.workcheck import NO_CHANGE
from choragos.roles import briefs
from tests.integration.harness import Serve, role_toml

COLS = 120  # a headless session's role width
WORKERS = ("coder1", "coder2", "coder3")
REPORT_ID = re.compile(r"A worker reports: \[(T\d+) from ")
DONE = re.compile(r"(T\d+) exit=0 ")


def padded_prompt(workdir: Path) -> str:
    """The orchestrator's prompt: a three-digit report ends at the last column
    of a row (the report's absolute path makes it longer than one row)."""
    report = str(Path(os.path.realpath(workdir)) / ".choragos" / "reports" / "T100.md")
    line = briefs.report_line("T100", WORKERS[0], "finished T100 in the fixture", report,
                              changed=NO_CHANGE)  # a fixture worker changes no file
    end = -(-(len(line) + len("lead> ")) // COLS) * COLS
    return "lead" + "." * (end - len(line) - len("lead> ")) + "> "


def team(args: argparse.Namespace) -> str:
    lead = role_toml("lead", "--delegate", ",".join(WORKERS), "--every", str(args.every),
                     "--delegate-for", str(args.minutes * 60), start=True)
    return lead + "".join(role_toml(name, "--worker", "--work", str(args.work))
                          for name in WORKERS)


def run(root: Path, args: argparse.Namespace) -> dict:
    work = root / "work"
    work.mkdir()
    serve = Serve(work, team(args), sock=root / "s.sock")
    serve.env["AGENT_PROMPT"] = padded_prompt(work)
    serve.start()
    try:
        serve.wait_booted(["lead", *WORKERS], timeout=60)
        samples = watch(serve, args)
        drained = drain(serve, args.drain)
    finally:
        code = serve.stop()
    serve.assert_no_leftovers()
    if code != 0:
        raise SystemExit(f"serve exited {code}\n{serve.stderr()[-2000:]}")
    return figures(serve, samples, drained, args)


def watch(serve: Serve, args: argparse.Namespace) -> list[dict]:
    """Sample the server every window while the orchestrator delegates."""
    pid = serve.proc.pid
    samples = [{"t": time.time(), "cpu": process_cpu(pid), "rss_mb": process_rss_mb(pid)}]
    end = time.monotonic() + args.minutes * 60
    while time.monotonic() < end:
        time.sleep(min(args.window, max(end - time.monotonic(), 0.1)))
        samples.append({"t": time.time(), "cpu": process_cpu(pid),
                        "rss_mb": process_rss_mb(pid)})
        print(json.dumps({"reports_typed": len(reports(serve)), **samples[-1]}), flush=True)
    return samples


def drain(serve: Serve, seconds: float) -> float:
    """Wait (up to ``seconds``) for every delegated job to be reported and its report typed."""
    serve.wait(lambda: serve.agents("delegating stopped", "lead"), 30, "delegating to stop")
    started = time.monotonic()
    end = started + seconds
    while time.monotonic() < end:
        acked = len(serve.agents("delegated", "lead"))
        if acked and len(set(reported_ids(serve))) >= acked:
            break
        time.sleep(1.0)
    return time.monotonic() - started


def reports(serve: Serve) -> list[dict]:
    """The lines the orchestrator took that carry a report."""
    return [r for r in serve.agents("submit", "lead") if REPORT_ID.search(r["text"])]


def reported_ids(serve: Serve) -> list[str]:
    """Each report's task id, once for every time its report reached the orchestrator."""
    return [tid for r in reports(serve) for tid in REPORT_ID.findall(r["text"])]


def figures(serve: Serve, samples: list[dict], drained: float,
            args: argparse.Namespace) -> dict:
    acks = serve.agents("delegated", "lead")
    done = {m.group(1): r["t"] for r in serve.agents("work-done")
            if (m := DONE.search(r["text"]))}
    typed = Counter(reported_ids(serve))
    start = acks[0]["t"] if acks else samples[0]["t"]
    windows = [window(serve, acks, done, start + i * args.window, args.window)
               for i in range(int(args.minutes * 60 // args.window))]
    for (a, b), row in zip(itertools.pairwise(samples), windows, strict=False):
        row["server_cpu_s"] = round(b["cpu"] - a["cpu"], 2)
        row["rss_mb"] = b["rss_mb"]
    three = [tid for tid in done if 100 <= int(tid[1:]) <= 999]
    return {"delegated": len(acks), "done": len(done), "three_digit_ids": len(three),
            "typed_once": sum(1 for n in typed.values() if n == 1),
            "typed_twice_or_more": sum(1 for n in typed.values() if n > 1),
            "not_typed": sorted(set(done) - set(typed), key=lambda t: int(t[1:])),
            "drain_s": round(drained, 1), "windows": windows,
            "t100_ends_at_column": t100_end(serve)}


def t100_end(serve: Serve) -> int | None:
    """Where T100's report, as the orchestrator took it, ended on its input rows."""
    taken = next((r["text"] for r in reports(serve) if "[T100 from" in r["text"]), None)
    return None if taken is None else len(serve.env["AGENT_PROMPT"]) + len(taken)


def window(serve: Serve, acks: list[dict], done: dict[str, float], begin: float,
           length: float) -> dict:
    inside = [r for r in reports(serve) if begin <= r["t"] < begin + length]
    delays = [r["t"] - done[tid] for r in inside for tid in REPORT_ID.findall(r["text"])
              if tid in done]
    return {"from_s": round(begin - acks[0]["t"], 0) if acks else 0.0,
            "delegated": sum(1 for r in acks if begin <= r["t"] < begin + length),
            "reports_typed": len(inside),
            "report_delay_median_s": round(statistics.median(delays), 2) if delays else None,
            "report_delay_max_s": round(max(delays), 2) if delays else None}


def report(result: dict, args: argparse.Namespace) -> None:
    print(f"\n{'from s':>7} {'delegated':>10} {'reports typed':>14} {'delay med s':>12} "
          f"{'delay max s':>12} {'server cpu s':>13} {'rss MB':>7}")
    for row in result["windows"]:
        print(f"{row['from_s']:>7.0f} {row['delegated']:>10} {row['reports_typed']:>14} "
              f"{_num(row['report_delay_median_s']):>12} {_num(row['report_delay_max_s']):>12} "
              f"{_num(row.get('server_cpu_s')):>13} {_num(row.get('rss_mb')):>7}")
    print(f"\ndelegated {result['delegated']}, done {result['done']} "
          f"({result['three_digit_ids']} with three-digit ids); reports typed once "
          f"{result['typed_once']}, twice or more {result['typed_twice_or_more']}, "
          f"not typed {len(result['not_typed'])}; T100's report ended at column "
          f"{result['t100_ends_at_column']} of rows {COLS} wide")
    first, last = result["windows"][0], result["windows"][-1]
    ratio = last["reports_typed"] / first["reports_typed"] if first["reports_typed"] else None
    emit("soak-fixtures", {"reports typed, last/first window": ratio},
         minutes=args.minutes, every=args.every, **{k: v for k, v in result.items()})


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"
