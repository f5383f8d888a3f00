"""Reaching a session from another directory: ``-t/--target`` and the only one running."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from tests.deck.conftest import cli_for, kill_all_and_remove
from tests.integration.harness import base_env, git_init, role_toml

pytestmark = pytest.mark.timeout(120)

TEAM = role_toml("orchestrator", start=True) + role_toml("coder", "--worker")


@pytest.fixture
def machine():
    """Projects found through the per-user socket directory, as a user's are
    (no $CHORAGOS_SOCK): each test has its own runtime directory."""
    root = Path(tempfile.mkdtemp(prefix="cht-", dir="/tmp"))
    runtime = root / "run"
    runtime.mkdir(mode=0o700)
    env = base_env({"XDG_RUNTIME_DIR": str(runtime), "AGENT_LOG": str(root / "agents.jsonl")})
    elsewhere = root / "elsewhere"
    elsewhere.mkdir()

    def project(name: str) -> Path:
        work = root / name
        work.mkdir()
        git_init(work)
        (work / ".choragos.toml").write_text(TEAM)
        return work

    cli = cli_for(env, elsewhere)
    yield project, cli
    kill_all_and_remove(cli, root)


def test_the_read_verbs_reach_the_only_session_and_say_so(machine):
    project, cli = machine
    work = project("alpha")
    assert cli("serve", "--detach", cwd=work).returncode == 0

    status = cli("status")
    assert status.returncode == 0, status.stderr
    assert f"choragos status: no session here; using the one running in {work}" in status.stderr
    assert "orchestrator" in status.stdout
    board = cli("board")
    assert board.returncode == 0 and "using the one running in" in board.stderr
    report = cli("report")
    assert report.returncode == 0, report.stderr
    assert f"using the one running in {work}" in report.stderr and "orchestrator" in report.stdout
    logs = cli("logs", "orchestrator")
    assert logs.returncode == 0 and f"using the one running in {work}" in logs.stderr
    assert "=== " in logs.stdout  # the transcript's header line
    diff = cli("diff", "T1")  # no task yet: the session's repository is the one asked
    assert diff.returncode == 1 and "no checkpoint for T1" in diff.stderr
    attach = cli("attach")  # no terminal here, but the session it would reach is named
    assert f"using the one running in {work}" in attach.stderr
    # A verb that changes something never picks another directory's session,
    # and its hint names the session that runs rather than "start one".
    ping = cli("ping")
    assert ping.returncode == 3
    assert f"a session runs in {work} (`choragos ls`)" in ping.stderr
    assert "start one" not in ping.stderr
    # In the project (or below it), a file not there is not "no session here".
    (work / "src").mkdir()
    for where in (work, work / "src"):
        inside = cli("logs", "nosuch", cwd=where)
        assert inside.returncode == 1 and "no session here" not in inside.stderr, inside.stderr
        assert inside.stderr.startswith("choragos logs: nosuch has no transcript at "), \
            inside.stderr


def test_target_names_a_session_by_directory_or_name(machine):
    project, cli = machine
    alpha, beta = project("alpha"), project("beta")
    for work in (alpha, beta):
        assert cli("serve", "--detach", cwd=work).returncode == 0
    several = cli("status")
    assert several.returncode == 3
    assert "2 run elsewhere" in several.stderr and "pick one with -t DIR" in several.stderr
    by_name = json.loads(cli("status", "-t", "beta", "--json").stdout)
    assert by_name["ok"] and {r["name"] for r in by_name["roles"]} == {"orchestrator", "coder"}
    by_dir = cli("board", "--target", str(alpha))
    assert by_dir.returncode == 0 and by_dir.stderr == ""
    assert cli("report", "-t", "alpha").returncode == 0
    unknown = cli("status", "-t", "gamma")
    assert unknown.returncode == 3
    assert "no directory and no running session is named gamma" in unknown.stderr
    # this directory's own session still comes first
    here = cli("status", cwd=beta)
    assert here.returncode == 0 and here.stderr == ""


def test_attach_by_name_from_another_directory_brings_the_deck(deck):
    from tests.deck.conftest import TmuxDeck

    d: TmuxDeck = deck()
    d.serve()
    d.keys("C-b", "d")
    d.wait_screen("[detached from")
    elsewhere = d.root / "elsewhere"
    elsewhere.mkdir()
    assert d.ls()[0]["attached"] is None
    d.shell(f"clear; cd {elsewhere} && choragos attach -t {d.workdir.name}")
    d.wait_screen("C-b ? help", 30)
    assert d.ls()[0]["attached"]  # this terminal's client holds the deck
