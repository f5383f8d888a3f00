"""Deciding whether a saved session may be resumed, and the orchestrator's recap."""

from __future__ import annotations

from pathlib import Path

from choragos.board.journal import Image
from choragos.config.model import Config, RoleSpec
from choragos.session import resume
from tests.unit.test_journal import task

TEAM = Config(roles=(RoleSpec(name="lead", command="x", start=True),
                     RoleSpec(name="coder", command="x")), source=Path("/p/.choragos.toml"))


def image(*tasks: dict, config: str = "/p/.choragos.toml", **fields) -> Image:
    return Image(config=config, pid=42, last_t=1.0, tasks={t["id"]: t for t in tasks},
                 **fields)


def test_the_same_config_and_roster_resume():
    assert resume.refusal(image(task("T1", "delivered")), TEAM) is None


def test_another_config_is_refused_with_the_way_out():
    reason = resume.refusal(image(config="/p/old.toml"), TEAM)
    assert "ran with the config /p/old.toml" in reason
    assert "choragos serve --resume --config /p/old.toml" in reason


def test_a_dropped_role_with_open_tasks_is_refused_but_not_after_a_handoff():
    saved = image(task("T1", "gated", role="release"), task("T2", "done", role="qa"))
    reason = resume.refusal(saved, TEAM)
    assert "release (T1)" in reason and "qa" not in reason
    saved.handoff = {"config": "/p/.choragos.toml"}
    assert resume.refusal(saved, TEAM) is None


def test_a_handoff_config_is_accepted_and_named():
    saved = image(config="/p/old.toml", handoff={"config": "/p/new.toml"})
    other = Config(roles=TEAM.roles, source=Path("/p/new.toml"))
    assert resume.refusal(saved, other) is None
    assert "--config /p/new.toml" in resume.refusal(saved, TEAM)


def test_the_recap_lists_done_in_flight_gated_and_the_instruction():
    done = {**task("T1", "done"), "summary": "wrote the parser"}
    blocked = {**task("T4", "blocked"), "summary": "needs the API key"}
    text = resume.recap(image(done, task("T2", "delivered"), task("T3", "gated", "release"),
                              blocked))
    assert "- T4 (coder): blocked: needs the API key" in text
    assert "- T1 (coder): wrote the parser" in text
    assert "- T2 (coder): delivered: do T2" in text
    assert "### Waiting at a gate" in text and "T3 (release)" in text
    assert "Do not re-delegate in-flight tasks unless you decide to" in text
