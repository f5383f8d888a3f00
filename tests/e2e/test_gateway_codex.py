"""The real Codex CLI routed through the built-in gateway by its command-line provider.

Codex's built-in OpenAI provider reads no base-URL variable, so a Codex
seat gets ``-c model_providers.choragos=...`` arguments (choragos/routing.py).
This runs the real CLI (``codex exec``) with exactly those arguments and
checks that its request went through the gateway, with its own key, to the
fake Responses API, and that the usage was counted for the role.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from choragos.config import RoleSpec
from choragos.routing import routed
from tests.e2e.claudeenv import base_env
from tests.e2e.fakemodel import Usage, text
from tests.e2e.fakeopenai import FakeOpenAI
from tests.integration.gatewayfakes import base_url, running_gateway, tokens

CODEX = Path(__file__).resolve().parents[2] / ".cache" / "codex" / "node_modules" / ".bin" / "codex"

pytestmark = [pytest.mark.codex, pytest.mark.timeout(180)]


def test_codex_exec_goes_through_the_gateway_and_is_counted(short_tmp: Path) -> None:
    if not os.access(CODEX, os.X_OK):
        pytest.skip("the Codex CLI is not installed under .cache/codex (make codex)")
    home, work = short_tmp / "home", short_tmp / "work"
    home.mkdir()
    work.mkdir()
    with (FakeOpenAI(usage=Usage(input_tokens=321, output_tokens=9)) as fake,
          running_gateway({"openai": fake.base_url}) as gateway):
        fake.default = text("hello through the gateway")
        fake.title = "hello through the gateway"  # codex exec offers no tools: a side reply
        spec = routed(RoleSpec("coder", "codex"), f"{base_url(gateway)}/agent/coder")
        env = {**base_env(home), "OPENAI_API_KEY": "sk-openai-test-000"}
        done = subprocess.run([str(CODEX), *spec.args, "exec", "--skip-git-repo-check",
                               "say hello"], env=env, cwd=work, capture_output=True,
                              text=True, timeout=150, stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stderr[-2000:]
        assert "hello through the gateway" in done.stdout
        assert "provider: choragos" in done.stderr
        calls = [r for r in fake.requests if r.method == "POST"]
        assert [r.path for r in calls] == ["/v1/responses"]
        assert calls[0].headers["authorization"] == "Bearer sk-openai-test-000"
        model = calls[0].body["model"]
        assert tokens(gateway) == {"coder": {model: {"input": 321, "output": 9,
                                                     "cache_read": 0, "cache_creation": 0}}}
