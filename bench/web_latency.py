"""The web view's costs: approve on the page -> task typed into the worker,
and the server's CPU with a page open on an idle crew.

A real headless session (fixture agents) with ``[web] listen``; Debian's
Chromium through its chromedriver opens the page.

- **Approve.** Each round delegates a gated task, waits for the page to
  draw its gate, clicks Approve, and reads three times: the click, the
  core's ``gate approved`` record (what the web adds: the page's request,
  HTTP, the command's path) and the ``delivered`` record (the gate itself:
  a checkpoint and the typing into the agent).  The reference is the same
  approval sent straight to the control socket.
- **Idle.** The server's CPU (utime + stime of the session process, not its
  agents) over ``--window`` seconds with no page, then with the page open
  and its event stream live; CPU seconds per minute.

    .venv/bin/python bench/web_latency.py [--rounds 10] [--window 30]
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.common import emit, process_cpu  # noqa: E402
from tests.integration import browser  # noqa: E402
from tests.integration.harness import Serve, role_toml  # noqa: E402
from tests.integration.webclient import WEB, Web  # noqa: E402

TEAM = (role_toml("orchestrator", start=True) + role_toml("coder", approve=True)
        + role_toml("writer") + WEB + "[checkpoints]\nenabled = false\n")


def event_at(s: Serve, name: str, task: str, timeout: float = 15) -> float:
    found = s.wait_event(lambda e: e["event"] == name and e.get("task") == task, timeout, name)
    return found["t"]


def socket_approve(s: Serve, task: str) -> float:
    """The approval as the CLI sends it, without the CLI's interpreter start."""
    sent = time.time()
    with socket.socket(socket.AF_UNIX) as conn:
        conn.connect(str(s.sock))
        conn.sendall(json.dumps({"cmd": "gate", "action": "approve", "id": task}).encode()
                     + b"\n")
        conn.recv(65536)
    return sent


def approve_rounds(s: Serve, driver, rounds: int) -> dict[str, list[float]]:
    figures: dict[str, list[float]] = {"page_to_core": [], "page_to_typed": [],
                                       "socket_to_core": [], "socket_to_typed": []}
    number = 0
    for _ in range(rounds):
        for how in ("page", "socket"):
            number += 1
            task = f"T{number}"
            s.cli("delegate", "--to", "coder", "--task", f"round {number}")
            s.wait(lambda t=task: driver.find_elements("css selector",
                                                       f"#gate-{t} button.approve"),
                   10, "the gate on the page")
            if how == "page":
                button = driver.find_element("css selector", f"#gate-{task} button.approve")
                clicked = time.time()
                button.click()
            else:
                clicked = socket_approve(s, task)
            core = event_at(s, "gate approved", task)
            typed = event_at(s, "delivered", task)
            figures[f"{how}_to_core"].append((core - clicked) * 1000)
            figures[f"{how}_to_typed"].append((typed - clicked) * 1000)
            # The fixture worker does not report; close the task so the next is typed at once.
            s.cli("work-done", "--id", task, "--done", "--task", "ok")
    return figures


def idle_cpu(s: Serve, seconds: float) -> float:
    pid = s.proc.pid
    before = process_cpu(pid)
    time.sleep(seconds)
    return (process_cpu(pid) - before) * 60 / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--window", type=float, default=30.0)
    parser.add_argument("--settle", type=float, default=5.0)
    args = parser.parse_args()
    if not browser.available():
        raise SystemExit("chromium, chromedriver and selenium are needed")
    root = Path(tempfile.mkdtemp(prefix="chg-web-", dir="/tmp"))
    (root / "work").mkdir()
    s = Serve(root / "work", TEAM, sock=root / "s.sock").start()
    driver = None
    try:
        s.wait_booted(["orchestrator", "coder", "writer"])
        web = Web(s)
        time.sleep(args.settle)
        no_page = idle_cpu(s, args.window)
        driver = browser.start(root / "profile")
        driver.get(web.url)
        s.wait(lambda: driver.find_element("id", "conn").text == "live", 15, "the page live")
        time.sleep(args.settle)
        with_page = idle_cpu(s, args.window)
        figures = approve_rounds(s, driver, args.rounds)
    finally:
        if driver is not None:
            driver.quit()
        s.stop()
    medians = {name: statistics.median(values) for name, values in figures.items()}
    print(f"{'':28}{'median ms':>10}{'max ms':>10}")
    for name, values in figures.items():
        print(f"{name:28}{medians[name]:10.1f}{max(values):10.1f}")
    web_adds = medians["page_to_core"] - medians["socket_to_core"]
    print(f"the page adds (click -> core, beyond the socket's): {web_adds:.1f} ms")
    print(f"server CPU, idle crew: {no_page:.3f} CPU s/min without a page, "
          f"{with_page:.3f} with one open")
    emit("web_latency", {"page_over_socket_to_typed": medians["page_to_typed"]
                         / medians["socket_to_typed"]},
         medians_ms={k: round(v, 1) for k, v in medians.items()},
         idle_cpu_s_per_min={"no_page": round(no_page, 3), "page_open": round(with_page, 3)},
         rounds=args.rounds, window=args.window)


if __name__ == "__main__":
    main()
