"""Every ``--json`` verb answers in one envelope, success or failure (docs/cli.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.harness import base_env, role_toml

TEAM = role_toml("lead", start=True) + role_toml("coder")

# verb -> (the argv after the verb, the payload field its success carries,
#          whether it talks to a session)
VERBS = {
    "status": ([], "roles", True),
    "board": ([], "tasks", True),
    "gate": (["list"], "gates", True),
    "cancel": (["T1"], "id", True),
    "ls": ([], "sessions", True),
    "report": ([], "roles", False),
    "doctor": ([], "checks", False),
    "checkpoints": (["list"], "checkpoints", False),
    "web": ([], "url", True),
}
# The web view is off unless the config serves it.
WEB = '[web]\nlisten = "127.0.0.1:0"\n'


def run(cwd: Path, env: dict[str, str], *argv: str) -> tuple[int, dict]:
    done = subprocess.run([sys.executable, "-m", "choragos", *argv, "--json"], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=30)
    return done.returncode, json.loads(done.stdout)


def test_every_json_verb_is_listed_here() -> None:
    from choragos.cli.main import VERBS as ALL

    with_json = set()
    for verb, (module, _) in ALL.items():
        source = Path(__import__(module, fromlist=["run"]).__file__).read_text()
        if '"--json"' in source:
            with_json.add(verb)
    assert with_json == set(VERBS)


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_one_envelope_for_success_and_failure(verb: str, serve) -> None:
    args, field, _ = VERBS[verb]
    session = serve(TEAM + (WEB if verb == "web" else ""))
    session.wait_booted(["lead", "coder"])
    work, env = session.workdir, session.env
    if verb == "cancel":  # a task to take back: queued behind a paused role
        assert session.cli("pause", "coder").returncode == 0
        assert session.cli("delegate", "--to", "coder", "--task", "later").returncode == 0
    code, answer = run(work, env, verb, *args)
    assert code == 0, answer
    assert answer["ok"] is True and answer["verb"] == verb
    assert isinstance(answer[field], str if verb in ("web", "cancel") else list)
    assert "status" not in answer
    assert "error" not in answer and "exit" not in answer

    code, answer = run(work, env, verb, *args, "--no-such-option")
    assert code == 2
    assert answer == {"ok": False, "verb": verb, "error": answer["error"], "exit": 2}
    assert "--no-such-option" in answer["error"]

    elsewhere = work.parent / "elsewhere"
    elsewhere.mkdir()
    lonely = {**base_env(), "XDG_RUNTIME_DIR": str(work.parent / "run"),
              "CHORAGOS_SOCK": str(work.parent / "none.sock")}
    code, answer = run(elsewhere, lonely, verb, *args)
    if verb in ("ls", "doctor"):
        return  # nothing running and an empty directory are answers, not failures
    assert code in (1, 3) and answer["ok"] is False and answer["verb"] == verb
    assert answer["exit"] == code and answer["error"]
