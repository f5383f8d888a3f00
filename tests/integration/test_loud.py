"""Failures are loud: dead roles, a stuck or finished crew, stalls (actors/guardrails.py)."""

from __future__ import annotations

import json
import shlex
import sys

from tests.integration.harness import Serve, role_toml


def hook_toml(out_dir, *hooks: str, **keys: str) -> str:
    """``[ui]`` hooks that each append ``role|task`` to ``<out_dir>/<hook>.log``."""
    lines = ["[ui]", *(f'{k} = "{v}"' for k, v in keys.items())]
    for hook in hooks:
        lines.append(f"""{hook} = 'printf "%s|%s\\\\n" "$CHORAGOS_ROLE" "$CHORAGOS_TASK" """
                     f""">> {out_dir}/{hook}.log'""")
    return "\n".join(lines) + "\n"


def fired(out_dir, hook: str) -> list[str]:
    path = out_dir / f"{hook}.log"
    return path.read_text().splitlines() if path.exists() else []


def status(s: Serve) -> dict:
    return json.loads(s.cli("status", "--json").stdout)


def roles(s: Serve) -> dict[str, dict]:
    return {r["name"]: r for r in status(s)["roles"]}


def test_dead_workers_are_loud_and_delegating_to_them_warns(serve, short_tmp):
    s = serve(role_toml("orchestrator", start=True)
              + role_toml("coder", "--crash-after", "0.5", "--exit-code", "4")
              + role_toml("tester", "--crash-after", "0.5", "--exit-code", "5",
                          restart="on-failure", restart_retries=0)
              + hook_toml(short_tmp, "on_exit"))
    s.wait(lambda: "NO WORKER IS LEFT ALIVE" in s.stderr()
           and "tester failed" in s.stderr(), 20, "the no-worker line")
    err = s.stderr()
    assert "coder exited (exit status 4); not restarted (no restart policy)" in err
    assert "tester exited (exit status 5); not restarted (restart budget spent (0 of 0))" in err
    assert "tester failed and will not come back by itself" in err
    # The same lines reach the server log, which is all a detached session has.
    server_log = (s.workdir / ".choragos" / "logs" / "server.log").read_text()
    assert "NO WORKER IS LEFT ALIVE" in server_log and "coder exited" in server_log
    s.wait(lambda: len(fired(short_tmp, "on_exit")) == 2, 5, "two on_exit hooks")
    assert sorted(fired(short_tmp, "on_exit")) == ["coder|exit status 4", "tester|exit status 5"]

    out = s.cli("delegate", "--to", "coder,tester", "--task", "anyone there?")
    assert out.returncode == 0 and out.stdout.strip() == "delegated T1 to coder, T2 to tester"
    warnings = out.stderr.splitlines()
    assert warnings[0].startswith("choragos delegate: warning: coder has exited "
                                  "(exit status 4); nothing restarts it")
    assert "tester has failed" in warnings[1] and "the task waits for it" in warnings[1]
    refused = s.cli("delegate", "--to", "coder", "--task", "again", "--require-live")
    assert refused.returncode == 1 and "nothing was delegated" in refused.stderr
    assert sorted(s.board()) == ["T1", "T2"]

    assert s.cli("restart", "coder").returncode == 0
    s.wait_event(lambda e: e["event"] == "role exited" and e["role"] == "coder"
                 and e["t"] > s.events()[0]["t"] and len(
                     [x for x in s.events() if x["event"] == "role exited"
                      and x["role"] == "coder"]) == 2, 20, "coder's second crash")
    s.wait(lambda: s.stderr().count("NO WORKER IS LEFT ALIVE") == 2, 10, "the line again")
    s.wait(lambda: len(fired(short_tmp, "on_exit")) == 3, 5, "a third on_exit")


def test_a_stuck_crew_fires_on_idle_once_and_a_finished_one_on_done(serve, short_tmp):
    s = serve(role_toml("orchestrator", start=True) + role_toml("coder")
              + hook_toml(short_tmp, "on_idle", "on_done", idle_after="1s"))
    s.wait_booted(["orchestrator", "coder"])
    assert s.cli("delegate", "--to", "coder", "--task", "never reported").returncode == 0
    s.wait(lambda: fired(short_tmp, "on_idle"), 20, "on_idle")
    line = fired(short_tmp, "on_idle")[0]
    assert line.startswith("orchestrator|1 open task: T1; the team has been idle for 1s")
    assert "THE CREW IS STUCK" in s.stderr()
    assert fired(short_tmp, "on_done") == []

    assert s.cli("work-done", "--id", "T1", "--failed", "--task", "gave up").returncode == 0
    s.wait(lambda: fired(short_tmp, "on_done"), 10, "on_done")
    assert fired(short_tmp, "on_done") == ["orchestrator|0 done, 1 failed, 0 rejected"]
    s.wait_event(lambda e: e["event"] == "injection" and e["kind"] == "report", 15,
                 "the report typed to the orchestrator")
    assert s.cli("delegate", "--to", "coder", "--task", "second").returncode == 0
    s.wait(lambda: len(fired(short_tmp, "on_idle")) == 2, 20, "on_idle re-armed")
    assert s.cli("work-done", "--id", "T2", "--done", "--task", "ok").returncode == 0
    s.wait(lambda: len(fired(short_tmp, "on_done")) == 2, 10, "on_done re-armed")
    assert fired(short_tmp, "on_done")[1] == "orchestrator|1 done, 1 failed, 0 rejected"
    assert len(fired(short_tmp, "on_idle")) == 2
    assert [e["event"] for e in s.events()].count("team idle") == 2


def test_a_stalled_worker_is_marked_and_fires_on_input_once_per_stall(serve, short_tmp):
    s = serve(role_toml("orchestrator", start=True, stall_after="1s")
              + role_toml("coder", stall_after="1s") + hook_toml(short_tmp, "on_input"))
    s.wait_booted(["orchestrator", "coder"])
    assert s.cli("delegate", "--to", "coder", "--task", "stare at the wall").returncode == 0
    event = s.wait_event(lambda e: e["event"] == "role stalled", 15, "the stall")
    assert (event["role"], event["task"], event["after"]) == ("coder", "T1", 1.0)
    s.wait(lambda: fired(short_tmp, "on_input"), 5, "on_input")
    assert fired(short_tmp, "on_input") == ["coder|stare at the wall"]
    marks = {name: r["marks"] for name, r in roles(s).items()}
    assert marks == {"orchestrator": [], "coder": ["stalled"]}  # no task, no stall
    assert "coder stalled: its screen has not changed for 1s while it holds T1" in s.stderr()

    assert s.cli("keys", "coder", "--text", "hello").returncode == 0
    s.wait(lambda: roles(s)["coder"]["marks"] == [], 5, "the stall cleared by output")
    s.wait(lambda: len(fired(short_tmp, "on_input")) == 2, 10, "the second stall")
    assert [e["event"] for e in s.events()].count("role stalled") == 2
    assert roles(s)["coder"]["marks"] == ["stalled"]


def test_a_worker_that_reported_is_no_stall_while_its_checks_run(serve):
    """The verify (or a merge gate) keeps the task open after the worker's
    work-done; the worker sitting still meanwhile is not stalled."""
    slow = f"{shlex.quote(sys.executable)} -c 'import time; time.sleep(4)'"
    s = serve(role_toml("orchestrator", start=True)
              + role_toml("coder", "--worker", stall_after="1s", verify=slow))
    s.wait_booted(["orchestrator", "coder"])
    assert s.cli("delegate", "--to", "coder", "--task", "finish fast").returncode == 0
    s.wait_event(lambda e: e["event"] == "work-done", 15, "the work-done")
    s.wait_event(lambda e: e["event"] == "verify passed", 20, "the slow verify")
    assert s.board()["T1"]["state"] == "done"
    assert not [e for e in s.events() if e["event"] == "role stalled"]


def test_a_role_waiting_on_a_human_gets_a_line(serve):
    s = serve(role_toml("orchestrator", start=True) + role_toml("coder", "--ask", "New task"))
    s.wait_booted(["coder"])
    s.cli("delegate", "--to", "coder", "--task", "deploy it")
    s.wait(lambda: "coder is waiting for a human" in s.stderr(), 15, "the waiting line")


def test_stall_action_nudge_types_a_line_only_into_the_idle_agent(serve):
    s = serve(role_toml("orchestrator", start=True)
              + role_toml("coder", stall_after="1s", stall_action="nudge"))
    s.wait_booted(["orchestrator", "coder"])
    assert s.cli("delegate", "--to", "coder", "--task", "stare at the wall").returncode == 0
    event = s.wait_event(lambda e: e["event"] == "role stalled", 15, "the stall")
    assert event["action"] == "nudge"
    nudged = s.wait(lambda: [t for t in s.submitted("coder") if t.startswith("Continue with")],
                    10, "the nudge typed")
    assert "T1" in nudged[0]
    injection = s.wait_event(lambda e: e["event"] == "injection" and e["kind"] == "notice"
                             and e["role"] == "coder", 10, "the nudge's outcome")
    assert injection["ok"] is True


def test_stall_action_restart_restarts_the_role_and_fails_its_task(serve):
    s = serve(role_toml("orchestrator", start=True)
              + role_toml("coder", stall_after="1s", stall_action="restart"))
    s.wait_booted(["orchestrator", "coder"])
    first = roles(s)["coder"]["pid"]
    assert s.cli("delegate", "--to", "coder", "--task", "stare at the wall").returncode == 0
    s.wait_event(lambda e: e["event"] == "role stalled", 15, "the stall")
    s.wait(lambda: s.board()["T1"]["state"] == "failed", 15, "T1 failed by the restart")
    s.wait(lambda: roles(s)["coder"]["pid"] not in (None, first), 15, "a new coder process")
