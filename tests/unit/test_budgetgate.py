"""The gateway's budget gate and its answer watch, with counts and answers made up."""

from __future__ import annotations

import gzip
import json

from choragos.config.model import BudgetSettings, Config, Price, RoleSpec
from choragos.gateway.budgetgate import BudgetGate, policy
from choragos.gateway.watch import AnswerWatch, limit_of, read_news

PRICES = {"claude-": {"input": 1.0, "output": 5.0, "cache_read": 0.0, "cache_creation": 0.0}}


def _gate(counts: dict, **budgets: object) -> BudgetGate:
    gate = BudgetGate(lambda: counts)
    assert gate.update({"budgets": {"roles": budgets.get("roles", {}),
                                    "session": budgets.get("session"), "pricing": PRICES}})
    return gate


def test_a_role_is_refused_once_its_budget_is_spent_and_not_before() -> None:
    counts = {("coder", "claude-x", "input"): 900_000}
    gate = _gate(counts, roles={"coder": {"usd": 1.0, "tokens": None}})
    assert gate.refusal("coder") is None  # $0.90
    counts[("coder", "claude-x", "output")] = 20_000  # +$0.10: $1.00, spent
    refusal = gate.refusal("coder")
    assert "the budget of role coder is spent ($1.00 of $1.00)" in refusal
    assert "choragos budget coder AMOUNT" in refusal
    assert gate.refusal("tester") is None  # another role, no budget of its own


def test_a_token_budget_and_an_unpriced_model() -> None:
    counts = {("coder", "gpt-x", "input"): 600, ("coder", "gpt-x", "output"): 400}
    refusal = _gate(counts, roles={"coder": {"usd": None, "tokens": 1000}}).refusal("coder")
    assert "the token budget of role coder is spent (1000 tokens of 1000)" in refusal
    # The budget verb sets USD only: it is not offered for a token budget.
    assert "budget_tokens in .choragos.toml" in refusal and "AMOUNT" not in refusal
    # A raise by reload is a loosening: the command that applies it is named whole.
    assert refusal.endswith("run `choragos reload --loosen`.")
    # No price for gpt-x: priced at the table's highest ($1 in, $5 out a million), as the
    # session prices it, so $0.0026 reaches a budget of $0.002 and not one of $0.003.
    assert "of $0.0020" in _gate(counts, roles={"coder": {"usd": 0.002, "tokens": None}}
                                 ).refusal("coder")
    assert _gate(counts, roles={"coder": {"usd": 0.003, "tokens": None}}).refusal("coder") is None


def test_the_session_budget_counts_every_role() -> None:
    counts = {("a", "claude-x", "input"): 300_000, ("b", "claude-x", "input"): 300_000}
    gate = _gate(counts, session=0.5)
    assert "the session's budget is spent ($0.60 of $0.50)" in gate.refusal("a")
    assert "choragos budget --session AMOUNT" in gate.refusal("b")


def test_a_new_policy_replaces_the_old_and_junk_is_ignored() -> None:
    counts = {("coder", "claude-x", "input"): 2_000_000}
    gate = _gate(counts, roles={"coder": {"usd": 1.0, "tokens": None}})
    assert gate.refusal("coder")
    assert not gate.update({"key": "00"}) and gate.refusal("coder")
    assert gate.update({"budgets": {"roles": {"coder": {"usd": 5.0}}, "pricing": PRICES}})
    assert gate.refusal("coder") is None


def test_the_policy_holds_only_the_blocking_budgets() -> None:
    config = Config(roles=(RoleSpec("lead", "claude", start=True, budget=2.0),
                           RoleSpec("coder", "claude", budget=1.0, budget_action="block"),
                           RoleSpec("tester", "claude", budget_tokens=50,
                                    budget_action="block")),
                    pricing={"claude-": Price(input=1.0, output=5.0)},
                    budget=BudgetSettings(session=10.0, action="pause"))
    made = policy(config)
    assert made["roles"] == {"coder": {"usd": 1.0, "tokens": None, "action": "block"},
                             "tester": {"usd": None, "tokens": 50, "action": "block"}}
    assert made["session"] is None and made["pricing"]["claude-"]["output"] == 5.0
    assert json.loads(json.dumps(made)) == made  # it travels as one JSON line


def test_the_watch_says_a_limit_once_per_change() -> None:
    said: list[dict] = []
    watch = AnswerWatch(said.append, clock=lambda: 1000.0)
    body = gzip.compress(json.dumps({"type": "error", "error": {
        "type": "rate_limit_error", "message": "slow"}}).encode())
    assert watch.answered("coder", "anthropic", 429, {"Retry-After": "7",
                                                      "Content-Encoding": "gzip"}, body)
    watch.answered("coder", "anthropic", 200, {}, b"")
    watch.answered("coder", "anthropic", 200, {}, b"")  # nothing to say: it was not limited
    assert watch.answered("coder", "anthropic", 400, {}, b"{}") is None
    assert said == [{"limit": {"role": "coder", "kind": "rate limit", "source": "anthropic",
                               "until": 1007.0, "detail": "slow"}},
                    {"lifted": "coder"}]
    role, limit = limit_of(read_news(json.dumps(said[0]).encode()))
    assert (role, limit.until, limit.detail) == ("coder", 1007.0, "slow")
    assert read_news(b"listening 127.0.0.1:1") is None and limit_of({"limit": "x"}) is None


def test_a_stream_is_split_at_its_events_and_each_api_reads_its_error_event() -> None:
    from choragos.gateway.streamcut import error_event, events
    assert list(events(b"data: a\n\nevent: x\ndata: b\r\n\r\ndata: c")) == [
        b"data: a\n\n", b"event: x\ndata: b\r\n\r\n", b"data: c"]
    for api, path in (("anthropic", ("error", "message")), ("openai", ("message",)),
                      ("gemini", ("error", "message"))):
        raw = error_event(api, "spent")
        assert raw.endswith((b"\n\n", b"\r\n\r\n"))
        data = json.loads(raw.split(b"data: ", 1)[1])
        for key in path:
            data = data[key]
        assert data == "spent"


def test_the_first_call_let_through_after_refusals_says_the_block_is_over() -> None:
    counts = {("coder", "claude-x", "input"): 2_000_000}
    gate = _gate(counts, roles={"coder": {"usd": 1.0, "tokens": None}})
    assert gate.verdict("coder")[1] is False and gate.verdict("coder")[0]
    gate.update({"budgets": {"roles": {"coder": {"usd": 5.0}}, "pricing": PRICES}})
    assert gate.verdict("coder") == (None, True)
    assert gate.verdict("coder") == (None, False)
    assert gate.verdict("tester") == (None, False)
