"""Budgets through a real session and a scripted gateway ``/metrics`` (actors/guardrails.py)."""

from __future__ import annotations

import json

import pytest

from tests.integration.harness import Serve, role_toml
from tests.integration.metricsserver import ScriptedGateway
from tests.integration.test_loud import fired, hook_toml

MODEL = "m-test"
MILLION = 1_000_000  # input tokens priced at $1 per million: tokens / 1e6 is the cost


@pytest.fixture
def gateway():
    fake = ScriptedGateway()
    yield fake
    fake.down()


def _config(port: int, out_dir, coder_budget: float = 1.0, session: str = "") -> str:
    text = (role_toml("orchestrator", start=True)
            + role_toml("coder", budget=coder_budget)
            + role_toml("tester", budget="0.50", budget_action="pause")
            + f'[sphragis]\nenabled = true\naddr = "127.0.0.1:{port}"\n'
            + f'[pricing."{MODEL}"]\ninput = 1.0\n'
            + hook_toml(out_dir, "on_budget"))
    return text + (f'[budget]\nsession = "{session}"\n' if session else "")


def _roles(s: Serve) -> dict[str, dict]:
    out = s.cli("status", "--json")
    assert out.returncode == 0, out.stderr
    return {r["name"]: r for r in json.loads(out.stdout)["roles"]}


def _cost_seen(s: Serve, role: str, cost: float) -> bool:
    return _roles(s)[role]["cost"] == pytest.approx(cost)


def _told(s: Serve) -> list[str]:
    return [line for line in s.submitted("orchestrator") if line.startswith("Budget:")]


def test_role_budgets_notify_pause_fire_once_and_rearm_on_reload(serve, gateway, short_tmp):
    s = serve(_config(gateway.port, short_tmp))
    s.wait_booted(["orchestrator", "coder", "tester"])
    s.wait_event(lambda e: e["event"] == "gateway up", message="gateway up")
    assert _roles(s)["coder"]["budget"] == {"usd": 1.0, "tokens": None, "over": False}

    gateway.set("coder", MODEL, input=int(1.2 * MILLION))
    s.wait(lambda: fired(short_tmp, "on_budget"), 10, "on_budget for coder")
    assert fired(short_tmp, "on_budget") == ["coder|$1.20 of $1.00"]
    coder = _roles(s)["coder"]
    assert coder["marks"] == ["over budget"] and coder["budget"]["over"] is True
    assert coder["state"] != "paused"
    s.wait(lambda: _told(s), 15, "the orchestrator told")
    assert _told(s)[0].startswith("Budget: coder is over its budget ($1.20 of $1.00); "
                                  "it keeps working")
    assert "coder is over its budget: $1.20 of $1.00" in s.stderr()

    gateway.set("coder", MODEL, input=int(1.3 * MILLION))  # still over: no second alarm
    s.wait(lambda: _cost_seen(s, "coder", 1.3), 10, "the new count")

    gateway.set("tester", MODEL, input=int(0.6 * MILLION))
    s.wait(lambda: _roles(s)["tester"]["state"] == "paused", 10, "tester paused")
    s.wait(lambda: len(_told(s)) == 2, 15, "the orchestrator told about tester")
    assert "tester is over its budget ($0.60 of $0.50); it is paused" in _told(s)[1]
    assert fired(short_tmp, "on_budget") == ["coder|$1.20 of $1.00", "tester|$0.60 of $0.50"]

    (s.workdir / ".choragos.toml").write_text(_config(gateway.port, short_tmp, 2.0))
    assert s.cli("reload").returncode == 1  # a raise is the operator's to confirm
    assert s.cli("reload", "--loosen").returncode == 0
    s.wait(lambda: _roles(s)["coder"]["marks"] == [], 10, "coder re-armed")
    assert _roles(s)["coder"]["budget"] == {"usd": 2.0, "tokens": None, "over": False}
    gateway.set("coder", MODEL, input=int(2.1 * MILLION))
    s.wait(lambda: len(fired(short_tmp, "on_budget")) == 3, 10, "coder over the new cap")
    assert fired(short_tmp, "on_budget")[2] == "coder|$2.10 of $2.00"
    assert [e["event"] for e in s.events()].count("over budget") == 3

    out = s.cli("report", "--json")
    budgets = {r["role"]: r["budget"] for r in json.loads(out.stdout)["roles"]}
    assert budgets["coder"] == {"usd": 2.0, "tokens": None, "over": True}
    assert budgets["tester"] == {"usd": 0.5, "tokens": None, "over": True}
    assert "$1.30/$2.00" in s.cli("status").stdout or "$2.10/$2.00" in s.cli("status").stdout


def test_the_session_budget_pauses_every_role(serve, gateway, short_tmp):
    s = serve(_config(gateway.port, short_tmp, coder_budget=50.0, session="1.00"))
    s.wait_booted(["orchestrator", "coder", "tester"])
    s.wait_event(lambda e: e["event"] == "gateway up", message="gateway up")
    gateway.set("coder", MODEL, input=int(0.4 * MILLION))
    gateway.set("orchestrator", MODEL, input=int(0.7 * MILLION))
    s.wait(lambda: all(r["state"] == "paused" for r in _roles(s).values()), 10,
           "every role paused")
    assert fired(short_tmp, "on_budget") == ["session|$1.10 of $1.00"]
    assert "THE CREW IS OVER ITS SESSION BUDGET: $1.10 of $1.00" in s.stderr()
    status = json.loads(s.cli("status", "--json").stdout)
    assert status["budget"] == {"usd": 1.0, "cost": pytest.approx(1.1), "over": True,
                                "action": "pause"}
    assert "session budget: $1.10 of $1.00 (over" in s.cli("status").stdout
    gateway.set("coder", MODEL, input=int(0.5 * MILLION))
    s.wait(lambda: _cost_seen(s, "coder", 0.5), 10, "the new count")
    assert len(fired(short_tmp, "on_budget")) == 1
    assert s.cli("resume", "orchestrator").returncode == 0
    s.wait(lambda: any("the whole crew is over its budget" in x for x in _told(s)), 15,
           "the orchestrator told once resumed")
    report = json.loads(s.cli("report", "--json").stdout)
    assert report["session_budget"] == {"usd": 1.0, "over": True}


def test_a_budget_without_a_gateway_warns_that_it_cannot_be_enforced(serve):
    s = serve(role_toml("orchestrator", start=True) + role_toml("coder", budget_tokens=1000)
              + '[sphragis]\naddr = "127.0.0.1:9"\ncommand = "no-such-gateway-here"\n')
    s.wait_booted(["coder"])
    warning = s.wait_event(lambda e: e["event"] == "config warning", 5, "the warning")
    assert warning["message"].startswith("budgets cannot be enforced: the gateway is off")
    assert warning["message"].endswith("set `[gateway] builtin = true` in .choragos.toml and "
                                       "start again to count and enforce them")
    # Also among the start's notices: on serve's terminal (and the deck's
    # first frame), not only in the server's log.
    s.wait(lambda: "choragos: budgets cannot be enforced" in s.stderr(), 10, "the notice")
    assert s.stderr().count("choragos: budgets cannot be enforced") == 1


def test_an_unpriced_model_is_priced_at_the_highest_price_and_fires_the_usd_budget(
        serve, gateway, short_tmp):
    """Before, a model missing from [pricing] made the role's cost unknown and took
    it out of every USD budget: $1.20 spent against a $1.00 cap, and no alarm."""
    s = serve(_config(gateway.port, short_tmp, session="5.00"))
    s.wait_booted(["orchestrator", "coder", "tester"])
    s.wait_event(lambda e: e["event"] == "gateway up", message="gateway up")
    gateway.set("coder", "not-in-pricing", input=int(1.2 * MILLION))
    said = s.wait_event(lambda e: e["event"] == "cost estimated", 10, "the estimate said")
    assert said["role"] == "coder" and said["model"] == "not-in-pricing"
    s.wait(lambda: fired(short_tmp, "on_budget"), 10, "on_budget for coder")
    assert fired(short_tmp, "on_budget") == [
        "coder|~$1.20 of $1.00 (estimated: not-in-pricing not in [pricing])"]
    coder = _roles(s)["coder"]
    assert coder["cost"] == pytest.approx(1.2) and coder["estimated"] == ["not-in-pricing"]
    assert "~$1.20/$1.00" in s.cli("status").stdout
    status = json.loads(s.cli("status", "--json").stdout)
    assert status["budget"]["cost"] == pytest.approx(1.2)  # in the session total too
    assert "which [pricing] does not list" in s.stderr()


def test_a_role_already_over_budget_at_the_first_reading_is_flagged(gateway, short_tmp):
    """The counts are over the cap before the session reads them once: the alarm must
    not wait for the tokens to change again."""
    gateway.set("tester", MODEL, input=int(0.6 * MILLION))
    work = short_tmp / "work"
    work.mkdir()
    s = Serve(work, _config(gateway.port, short_tmp), sock=short_tmp / "s.sock").start()
    try:
        over = s.wait_event(lambda e: e["event"] == "over budget", 15, "over budget")
        assert over["role"] == "tester" and over["spent"] == "$0.60 of $0.50"
        s.wait(lambda: _roles(s)["tester"]["state"] == "paused", 15, "tester paused")
    finally:
        assert s.stop() == 0, s.stderr()
