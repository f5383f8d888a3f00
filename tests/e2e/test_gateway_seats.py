"""The real Codex and Gemini CLIs routed through the built-in gateway the way a seat is.

Each CLI runs once, non-interactively, with exactly the variables and
arguments choragos/gateway/routing.py gives its seat (its role key included), against
the project's fake API server behind a real gateway that holds a session key;
the test checks that every request went through the gateway with the CLI's
own API key and that the usage was counted for the role, per model.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from choragos.config.model import RoleSpec
from choragos.gateway.roles import Roles, new_session_key, role_key
from choragos.gateway.routing import routing
from tests.e2e.claudeenv import base_env
from tests.e2e.fakegemini import FakeGemini
from tests.e2e.fakemodel import FakeModel, Usage, text
from tests.e2e.fakeopenai import FakeOpenAI
from tests.integration.gatewayfakes import base_url, running_gateway, tokens

CACHE = Path(__file__).resolve().parents[2] / ".cache"
ANSWER = "hello through the gateway"
USAGE = Usage(input_tokens=321, output_tokens=9)


def _cli(name: str) -> Path:
    path = CACHE / name / "node_modules" / ".bin" / name
    if not os.access(path, os.X_OK):
        pytest.skip(f"the {name} CLI is not installed under .cache/{name} (make {name})")
    return path


def _run(fake: FakeModel, api: str, command: str, argv_tail: list[str], extra: dict[str, str],
         home: Path, cwd: Path) -> tuple[subprocess.CompletedProcess, dict]:
    """Run the CLI as a seat named ``coder`` would run, through a gateway to ``fake``."""
    fake.default = text(ANSWER)
    fake.title = ANSWER  # a request that offers no tools gets the side reply
    session_key = new_session_key()
    with running_gateway({api: fake.base_url}, roles=Roles(session_key)) as gateway:
        env_add, args = routing(RoleSpec("coder", command), f"{base_url(gateway)}/agent/coder",
                                role_key(session_key, "coder"))
        env = {**base_env(home), **extra, **env_add}
        done = subprocess.run([command, *args, *argv_tail], env=env, cwd=cwd, text=True,
                              capture_output=True, timeout=150, stdin=subprocess.DEVNULL)
        return done, tokens(gateway)


def _dirs(root: Path) -> tuple[Path, Path]:
    (root / "home").mkdir()
    (root / "work").mkdir()
    return root / "home", root / "work"


@pytest.mark.codex
@pytest.mark.timeout(180)
def test_codex_through_its_provider_arguments(short_tmp: Path) -> None:
    codex = _cli("codex")
    home, work = _dirs(short_tmp)
    with FakeOpenAI(usage=USAGE) as fake:
        done, counted = _run(fake, "openai", str(codex),
                             ["exec", "--skip-git-repo-check", "say hello"],
                             {"OPENAI_API_KEY": "sk-openai-test-000"}, home, work)
    assert done.returncode == 0, done.stderr[-2000:]
    assert ANSWER in done.stdout and "provider: choragos" in done.stderr
    calls = [r for r in fake.requests if r.method == "POST"]
    assert [r.path for r in calls] == ["/v1/responses"]
    assert calls[0].headers["authorization"] == "Bearer sk-openai-test-000"
    assert counted == {"coder": {calls[0].body["model"]: {
        "input": 321, "output": 9, "cache_read": 0, "cache_creation": 0}}}


@pytest.mark.gemini
@pytest.mark.timeout(180)
def test_gemini_through_google_gemini_base_url(short_tmp: Path) -> None:
    gemini = _cli("gemini")
    home, work = _dirs(short_tmp)
    (home / ".gemini").mkdir()
    (home / ".gemini" / "settings.json").write_text(
        '{"security": {"auth": {"selectedType": "gemini-api-key"}}}')
    with FakeGemini(usage=USAGE) as fake:
        done, counted = _run(fake, "gemini", str(gemini), ["-p", "say hello"],
                             {"GEMINI_API_KEY": "gemini-test-key",
                              "GEMINI_CLI_TRUST_WORKSPACE": "true"}, home, work)
    assert done.returncode == 0, done.stderr[-2000:]
    assert ANSWER in done.stdout
    calls = [r for r in fake.requests if r.method == "POST"]
    assert calls and all(r.headers["x-goog-api-key"] == "gemini-test-key" for r in calls)
    # Every call (the CLI's model router included) is counted under the model it named.
    models = {r.path.rsplit("/", 1)[1].split(":")[0] for r in calls}
    per_call = {"input": 321, "output": 9, "cache_read": 0, "cache_creation": 0}
    assert counted == {"coder": {m: {d: v * sum(f"/{m}:" in r.path for r in calls)
                                     for d, v in per_call.items()} for m in models}}
