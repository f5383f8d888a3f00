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
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from choragos.agents import seatsetup
from tests.conftest import pid_alive, wait_until
from tests.e2e.claudeenv import REPO
from tests.e2e.fakegemini import FakeGemini
from tests.e2e.fakemodel import FakeModel, Turn, text
from tests.e2e.fakeopenai import FakeOpenAI
from tests.e2e.scenario import BRIEF, ClaudeCrew, Hold, holds_for

GEMINI_BIN = REPO / ".cache" / "gemini" / "node_modules" / ".bin" / "gemini"
CODEX_BIN = REPO / ".cache" / "codex" / "node_modules" / ".bin" / "codex"
FAKE_GEMINI_KEY = "fake-gemini-key-000"
FAKE_OPENAI_KEY = "sk-fake-openai-000"
FAKE_OPENAI_MODEL = "gpt-fake"
BOOT_TIMEOUT = 60  # Gemini draws nothing for ~3 s, far more on two busy cores


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


# -- scenarios every CLI seat must pass (tests/e2e/test_<cli>_seat.py) ----------------


def two_seats(start: Callable[..., SeatCrew], cli: str, **coder: object) -> SeatCrew:
    """An orchestrator and a coder, both running ``cli``."""
    return start(seat_role("orchestrator", cli, start=True) + seat_role("coder", cli, **coder))


def waits_at_dialog(s: SeatCrew, role: str, option: str, timeout: float) -> None:
    """``role`` is *waiting* with the dialog offering ``option`` on screen.  It
    is judged waiting once the dialog's first lines are drawn: a loaded
    machine may show the state before the options are drawn."""
    s.wait(lambda: (view := s.status()[role])["state"] == "waiting"
           and any(option in line for line in view["preview"]), timeout,
           f"{role} waiting at the dialog offering {option!r}")


def dialog_holds_deliveries(s: SeatCrew, option: str, never_told: str) -> None:
    """With the coder's first task stuck at a dialog: *waiting*, and a second task
    stays queued, untyped; ``never_told`` never reached the model."""
    assert s.cli("delegate", "--to", "coder", "--task", "Run the check").returncode == 0
    waits_at_dialog(s, "coder", option, 40)
    assert s.cli("delegate", "--to", "coder", "--task", "Second task").returncode == 0
    # Queued once its checkpoint is taken, a moment after the acknowledgement.
    s.wait(lambda: s.status()["coder"]["queued"] or s.times_told("New task T2"), 15,
           "the second task queued")
    assert holds_for(lambda: (v := s.status()["coder"])["state"] == "waiting"
                     and v["queued"] == 1, 4)
    assert s.times_told("New task T2") == 0 and s.times_told(never_told) == 0


def untrusted_folder_waits(start: Callable[..., SeatCrew], fake: FakeModel, cli: str,
                           option: str) -> None:
    """The trust dialog at start: *waiting*, no brief typed, no model asked."""
    s = start(seat_role("orchestrator", cli, start=True), trusted=False)
    waits_at_dialog(s, "orchestrator", option, BOOT_TIMEOUT)
    seen: list[dict] = []
    assert holds_for(lambda: seen.append(s.status()["orchestrator"])
                     or seen[-1]["state"] == "waiting", 4), seen[-1]
    assert not s.boot_injections("orchestrator") and not fake.message_requests()


def killed_worker_restarts(start: Callable[..., SeatCrew], fake: FakeModel, cli: str) -> None:
    """SIGKILL mid-turn: restarted, briefed again, its task failed and reported."""
    s = two_seats(start, cli, restart="on-failure")
    thinking = s.hold(text("Still thinking."))
    fake.on("New task T1 from choragos", thinking)
    s.wait_booted(["orchestrator", "coder"], timeout=BOOT_TIMEOUT)
    assert s.cli("delegate", "--to", "coder", "--task", "A long task").returncode == 0
    s.wait(thinking.reached.is_set, 30, "the coder's model to be asked")
    pid = s.wait_state("coder", "working", 15)["pid"]
    os.kill(pid, signal.SIGKILL)
    s.wait_told("Task T1 to coder failed")
    s.wait(lambda: len(s.boot_injections("coder")) == 2, BOOT_TIMEOUT, "the coder re-briefed")
    assert all(boot["ok"] for boot in s.boot_injections("coder"))
    view = s.wait_state("coder", "idle", 20)
    assert view["pid"] != pid and view["restarts"] == 1 and not pid_alive(pid)
    assert "killed by signal 9" in s.board()["T1"]["note"]


def report_waits_for_the_busy_turn(s: SeatCrew, busy: Hold) -> None:
    """The orchestrator's turn is held: the report stays queued, then goes in."""
    s.wait_event(lambda e: e["event"] == "work-done" and e["task"] == "T1", 60, "work-done")
    s.wait(busy.reached.is_set, 15, "the orchestrator's held turn")
    # The report is queued once the work-done's changes are read, a moment
    # after the work-done event (under load, after the turn was held).
    s.wait(lambda: s.status()["orchestrator"]["queued"] or s.injections("orchestrator", "report"),
           15, "the report queued")
    seen: list[tuple] = []

    def report_queued() -> bool:
        view = s.status()["orchestrator"]
        seen.append((view["state"], view["queued"], len(s.injections("orchestrator", "report"))))
        return seen[-1] == ("working", 1, 0)

    assert holds_for(report_queued, 1.5), f"(state, queued, reports typed): {seen}"
    busy.release()


def booted_and_briefed(s: SeatCrew, cli: str, roles: tuple[str, ...]) -> None:
    """Each role booted once, read with ``cli``'s profile, its model given the brief."""
    s.wait_booted(list(roles), timeout=BOOT_TIMEOUT)
    for role in roles:
        assert s.status()[role]["profile"] == cli
        assert len(s.boot_injections(role)) == 1 and s.boot_injections(role)[0]["ok"]
        s.wait_told(BRIEF.format(role=role))


def tool_said(*needles: str) -> Callable[[Turn], bool]:
    """A rule matching a tool result that contains every one of ``needles``."""
    return lambda turn: all(n in turn.tool_text for n in needles)
