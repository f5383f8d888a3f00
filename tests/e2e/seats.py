"""A real ``choragos serve --headless`` with Gemini CLI and Codex CLI seats too.

:class:`SeatCrew` is :class:`~tests.e2e.scenario.ClaudeCrew` with every CLI
installed in the one isolated HOME: Claude against the fake Messages API,
Gemini against :class:`FakeGemini`, Codex against :class:`FakeOpenAI`.  The
environment is still built from scratch: fake keys, loopback base URLs, and
a Codex ``model_provider`` whose ``base_url`` is the fake (Codex's built-in
provider does not take a base URL from the environment).  The workspace gets
the project settings ``choragos init --seats`` writes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from choragos import seatsetup
from tests.conftest import wait_until
from tests.e2e.claudeenv import REPO
from tests.e2e.fakegemini import FakeGemini
from tests.e2e.fakemodel import FakeModel
from tests.e2e.fakeopenai import FakeOpenAI
from tests.e2e.scenario import ClaudeCrew

GEMINI_BIN = REPO / ".cache" / "gemini" / "node_modules" / ".bin" / "gemini"
CODEX_BIN = REPO / ".cache" / "codex" / "node_modules" / ".bin" / "codex"
FAKE_GEMINI_KEY = "fake-gemini-key-000"
FAKE_OPENAI_KEY = "sk-fake-openai-000"
FAKE_OPENAI_MODEL = "gpt-fake"


@dataclass
class Fakes:
    """One scripted server per vendor."""

    claude: FakeModel
    gemini: FakeGemini
    openai: FakeOpenAI

    def all(self) -> tuple[FakeModel, ...]:
        return (self.claude, self.gemini, self.openai)


class AnyModel:
    """What every fake was told, read as one (for ``ClaudeCrew.wait_told``)."""

    def __init__(self, fakes: Fakes) -> None:
        self.fakes = fakes

    def user_messages(self) -> list[str]:
        return [said for fake in self.fakes.all() for said in fake.user_messages()]

    def message_requests(self, with_tools: bool = True) -> list:
        return [r for fake in self.fakes.all() for r in fake.message_requests(with_tools)]

    def wait_for_user_message(self, text: str, timeout: float = 10.0) -> str:
        needle = text.lower()
        return wait_until(lambda: next((m for m in self.user_messages() if needle in m.lower()),
                                       None), timeout, interval=0.1,
                          message=f"a model to be told {text!r}")


def seat_role(name: str, cli: str, *, start: bool = False, **keys: object) -> str:
    """One ``[[roles]]`` table running ``cli`` with the args its seat needs."""
    args = list(seatsetup.CODEX_ARGS) if cli == "codex" else []
    lines = ["[[roles]]", f"name = {json.dumps(name)}", f"command = {json.dumps(cli)}",
             f"args = {json.dumps(args)}", f"start = {'true' if start else 'false'}"]
    lines += [f"{key} = {json.dumps(value)}" for key, value in keys.items()]
    return "\n".join(lines) + "\n"


def prepare_gemini_home(home: Path, trusted: Path) -> None:
    """API-key auth chosen, no update checks or usage statistics, ``trusted`` trusted."""
    gemini = home / ".gemini"
    gemini.mkdir(parents=True, exist_ok=True)
    settings = {"security": {"auth": {"selectedType": "gemini-api-key"}},
                "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
                "privacy": {"usageStatisticsEnabled": False}}
    (gemini / "settings.json").write_text(json.dumps(settings, indent=2))
    (gemini / "trustedFolders.json").write_text(json.dumps({str(trusted): "TRUST_FOLDER"}))


def prepare_codex_home(home: Path, api_base: str, trusted: Path) -> None:
    """A ``fake`` model provider at ``api_base`` (keyed by OPENAI_API_KEY), ``trusted``."""
    codex = home / ".codex"
    codex.mkdir(parents=True, exist_ok=True)
    (codex / "config.toml").write_text(
        f'model = "{FAKE_OPENAI_MODEL}"\nmodel_provider = "fake"\n'
        "check_for_update_on_startup = false\n\n"
        f'[model_providers.fake]\nname = "fake"\nbase_url = "{api_base}"\n'
        'env_key = "OPENAI_API_KEY"\nwire_api = "responses"\n\n'
        f'[projects."{trusted}"]\ntrust_level = "trusted"\n')


class SeatCrew(ClaudeCrew):
    """A crew whose roles may be any of the three CLIs, each against its fake."""

    def __init__(self, root: Path, config: str, fakes: Fakes, bins: dict[str, Path],
                 trusted: bool = True) -> None:
        self.bins = bins
        self.fakes = fakes
        super().__init__(root, config, fakes.claude, bins["claude"], trusted=trusted)
        self.model = AnyModel(fakes)  # type: ignore[assignment]
        seatsetup.write_for(self.workdir, ["claude", "gemini"])
        home = Path(self.env["HOME"])
        trust = self.workdir if trusted else root / "elsewhere"
        prepare_gemini_home(home, trust)
        prepare_codex_home(home, fakes.openai.api_base, trust)

    def _environment(self, root: Path, home: Path) -> dict[str, str]:
        env = super()._environment(root, home)
        for cli in ("gemini", "codex"):
            (root / "bin" / cli).symlink_to(self.bins[cli])
        env.update({"GEMINI_API_KEY": FAKE_GEMINI_KEY,
                    "GOOGLE_GEMINI_BASE_URL": self.fakes.gemini.base_url,
                    "OPENAI_API_KEY": FAKE_OPENAI_KEY})
        # Gemini refuses a non-HTTPS base URL unless it is loopback; so do we.
        assert all(url.startswith("http://127.0.0.1:") for url in
                   (env["GOOGLE_GEMINI_BASE_URL"], self.fakes.openai.api_base))
        return env
