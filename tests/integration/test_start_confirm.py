"""A start compares the config file with the one the last session here ran
with, as its operator confirmed it: a loosening written meanwhile (an agent
can edit the file) stops the start until ``--loosen``; a tightening is named."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

from choragos.session.confirmed import record_path
from tests.integration.harness import role_toml

LEAD = role_toml("lead", start=True)
GATED = LEAD + role_toml("worker", approve=True)
UNGATED = LEAD + role_toml("worker", approve=False)


def refused(s, *args: str, mode: str = "--headless") -> str:
    """A ``serve`` that must refuse with exit 2; what it said."""
    done = subprocess.run([sys.executable, "-m", "choragos", "serve", mode, *args],
                          cwd=s.workdir, env=s.env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, (done.returncode, done.stderr)
    return done.stderr


def state_of(workdir: Path) -> dict[str, str]:
    """Every file under .choragos but the logs, by path, with its contents' hash."""
    home = workdir / ".choragos"
    return {str(p.relative_to(home)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(home.rglob("*")) if p.is_file() and "logs" not in p.parts}


def test_a_gate_loosened_before_a_resume_is_refused_until_loosen(serve):
    s = serve(GATED)
    s.wait_booted(["lead", "worker"])
    assert "approve = true" in record_path(s.workdir).read_text()  # the first start recorded
    # As an agent would, while the session runs: the worker's gate goes.
    (s.workdir / ".choragos.toml").write_text(UNGATED)
    s.kill9()
    before, events = state_of(s.workdir), s._all_events()

    said = refused(s, "--resume")
    assert "run `choragos serve --headless --resume --loosen`" in said
    assert "worker approve true -> false" in said
    assert said.count("\n") == 1, said  # one sentence
    assert "run `choragos serve --detach --resume --loosen`" in refused(s, "--resume",
                                                                       mode="--detach")
    assert state_of(s.workdir) == before  # no state kept aside, the journal untouched
    assert s._all_events() == events

    s.start(args=("--resume", "--loosen"))
    assert any(e["event"] == "session resumed" for e in s.events())
    changed = s.wait_event(lambda e: e["event"] == "config changed since the last start")
    assert changed["loosened"] == ["worker approve true -> false"] and changed["confirmed"]
    said_started = "started with the loosenings you confirmed: worker approve true -> false"
    s.wait(lambda: said_started in s.stderr(), 15, "the notice on stderr")
    assert "approve = false" in record_path(s.workdir).read_text()
    assert s.stop() == 0
    s.start(args=("--resume",))  # confirmed once: not asked again


def test_a_tightening_starts_and_is_named(serve):
    s = serve(UNGATED)
    s.wait_booted(["lead"])
    assert s.stop() == 0
    (s.workdir / ".choragos.toml").write_text(GATED)
    s.start(args=("--resume",))
    tightened = "the config now tightens what only you decide: worker approve false -> true"
    s.wait(lambda: tightened in s.stderr(), 15, "the notice on stderr")
    changed = s.wait_event(lambda e: e["event"] == "config changed since the last start")
    assert changed["tightened"] == ["worker approve false -> true"]
    assert not changed["confirmed"]
    assert "approve = true" in record_path(s.workdir).read_text()


def test_a_fresh_serve_after_an_edit_asks_once_and_a_reload_records(serve):
    s = serve(LEAD)  # the newcomer's first start: nothing to compare with
    s.wait_booted(["lead"])
    assert s.stop() == 0
    (s.workdir / ".choragos.toml").write_text(LEAD + role_toml("helper", approve=True))
    kept = state_of(s.workdir)
    said = refused(s)
    assert "run `choragos serve --headless --loosen`" in said and "helper (added) runs" in said
    assert state_of(s.workdir) == kept  # the previous state is not kept aside yet
    s.start(args=("--loosen",))
    s.wait_booted(["lead", "helper"])
    # The operator's confirmed reload is what the next start compares with.
    (s.workdir / ".choragos.toml").write_text(LEAD + role_toml("helper", approve=False))
    assert s.cli("reload").returncode != 0
    loosened = s.cli("reload", "--loosen")
    assert loosened.returncode == 0, loosened.stderr
    assert "approve = false" in record_path(s.workdir).read_text()
    assert s.stop() == 0
    s.start()  # neither fresh nor resumed is asked again
