"""The deck without a session: headless renders and injected keys.

A fake port stands in for the session: real terminal emulators fed with
text, a recorder for what roles are told, and canned control-command acks.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import Path

import pytest
import urwid

from choragos.actors import messages as m
from choragos.actors.supervisor import ChildSpec, StartChild, StopAll, Supervisor
from choragos.board.tasks import Task, TaskState
from choragos.config.model import Config, Keys, RoleSpec, UISettings
from choragos.session import news
from choragos.terminal.emulator import Terminal
from choragos.ui.deck import Deck, _Loop
from choragos.ui.pane import PaneView, deepest
from choragos.ui.theme import build_palette
from choragos.ui.uiactor import UIActor
from tests.conftest import wait_until

ROLES = ("orchestrator", "coder", "release")


class FakePort:
    def __init__(self, workdir: Path, keys: Keys | None = None) -> None:
        roles = tuple(RoleSpec(name, "agent", start=name == "orchestrator",
                               approve=name == "release", model="m1") for name in ROLES)
        self.config = Config(roles=roles, ui=UISettings(auto_focus=False),
                             keys=keys or Keys())
        self.workdir = workdir
        self.terminals = {name: Terminal(80, 24) for name in ROLES}
        for name, terminal in self.terminals.items():
            terminal.feed(f"hello from {name}\r\n{name}> ".encode())
        self.told: list[tuple[str, object]] = []
        self.requests: list[dict] = []
        self.echoes: list[tuple[str, str]] = []  # expect_echo / echo_drawn, in order
        self.echo_sizes: list[int] = []  # the bytes typed, for each expect_echo

    def dispatch(self, request: dict) -> dict:
        self.requests.append(request)
        return {"status": "ok", "roles": [], "tasks": [], "gates": []}

    def tell_role(self, role: str, message: object) -> None:
        self.told.append((role, message))

    def type_keys(self, role: str, data: bytes) -> None:
        self.told.append((role, m.WriteInput(data)))

    def terminal(self, role: str) -> Terminal | None:
        return self.terminals.get(role)

    def expect_echo(self, role: str, size: int) -> None:
        self.echoes.append(("expect", role))
        self.echo_sizes.append(size)

    def type_echoed(self, role: str, data: bytes) -> bool:
        """As the session's: the echo announced, then the keys written."""
        if role not in self.terminals:
            return False
        self.expect_echo(role, len(data))
        self.type_keys(role, data)
        return True

    def echo_drawn(self, role: str) -> None:
        self.echoes.append(("drawn", role))

    def typed(self, role: str) -> bytes:
        return b"".join(msg.data for r, msg in self.told
                        if r == role and isinstance(msg, m.WriteInput))


def deck_on(port: FakePort) -> Deck:
    """A deck on ``port``, 120x40, its loop ready to draw."""
    return ready_to_draw(Deck(port, 120, 40))


def ready_to_draw(made: Deck) -> Deck:
    """``made`` (120x40) with a loop to draw with, and a client attached."""
    made.loop = _Loop(made.view, build_palette(made.ui.theme), screen=made.screen)
    made.loop.deck = made
    made.loop.screen_size = (120, 40)
    made.attached = True
    return made


@pytest.fixture
def deck(tmp_path):
    made = deck_on(FakePort(tmp_path))
    yield made
    made.stop()
    made.screen.close()


def screen_text(deck: Deck) -> list[str]:
    canvas = deck.loop.widget.render((120, 40), focus=True)
    return [row.decode("utf-8") for row in canvas.text]


def drain(deck: Deck) -> bytes:
    """Everything the deck wrote to its client since the last call."""
    data = b""
    while True:
        try:
            data += os.read(deck.screen.master, 65536)
        except BlockingIOError:
            return data


def keys(deck: Deck, data: bytes) -> None:
    deck.keypath.keys(data)
    for token in deck.router.flush():  # as the deck's flush alarm does
        deck.keypath.key(token)


def test_every_role_has_a_pane_and_a_card(deck):
    text = "\n".join(screen_text(deck))
    for name in ROLES:
        assert f"hello from {name}" in text
        assert f"{ROLES.index(name) + 1} {name}" in text  # pane title with its number
    assert "C-b ? help" in screen_text(deck)[-1]


def test_pane_sizes_follow_the_tiles(deck):
    screen_text(deck)
    sizes = {role: msg for role, msg in deck.port.told if isinstance(msg, m.Resize)}
    body = 120 - 34
    assert sizes["orchestrator"].cols + 1 + sizes["coder"].cols == body
    assert sizes["orchestrator"].rows == 40 - 1 - 1  # status line, title row


def test_typing_reaches_the_focused_agent_only(deck):
    keys(deck, b"ls -la\r\x1b[A")
    assert deck.port.typed("orchestrator") == b"ls -la\r\x1b[A"
    assert deck.port.typed("coder") == b""


def test_prefix_commands_are_not_typed(deck):
    keys(deck, b"\x02l")  # focus right
    assert deck.state.layout.focus == "coder"
    keys(deck, b"x")
    assert deck.port.typed("coder") == b"x"
    keys(deck, b"\x02\x02")  # the prefix twice types the prefix
    assert deck.port.typed("coder") == b"x\x02"


def test_close_and_split_change_what_is_shown_but_stop_nothing(deck):
    keys(deck, b"\x02x")
    assert "orchestrator" not in deck.state.layout.shown()
    assert "hello from orchestrator" not in "\n".join(screen_text(deck))
    assert not [msg for _, msg in deck.port.told if isinstance(msg, m.StopProcess | m.Restart)]
    keys(deck, b"\x02v")
    assert "orchestrator" in deck.state.layout.shown()
    assert "hello from orchestrator" in "\n".join(screen_text(deck))


def test_zoom_shows_one_pane(deck):
    keys(deck, b"\x02z")
    text = "\n".join(screen_text(deck))
    assert "hello from orchestrator" in text and "hello from coder" not in text
    assert "ZOOM" in screen_text(deck)[-1]


@pytest.mark.parametrize("dialog", [b"", b"\x02?"])
def test_a_terminal_too_small_for_every_tile_still_draws(deck, dialog):
    """Three tiles in two rows (a terminal shrunk to its status line and one
    more) once put a title below the body: the deck crashed at every restart
    until the whole session gave up."""
    keys(deck, dialog)
    for cols in (1, 4, 10, 40, 120):
        for rows in (1, 2, 3, 4, 6):
            canvas = deck.loop.widget.render((cols, rows), focus=True)
            assert (canvas.cols(), canvas.rows()) == (cols, rows)


def test_status_line_shows_the_prefix_mode(deck):
    keys(deck, b"\x02")
    assert "PREFIX" in screen_text(deck)[-1]
    keys(deck, b"\x1b")
    assert "PREFIX" not in screen_text(deck)[-1]


def test_a_gate_opens_its_overlay_and_y_approves(deck):
    task = Task("T4", "release", "Tag v2", state=TaskState.GATED, created=1.0)
    deck.apply(news.GateOpened(news.GateView(task)))
    text = "\n".join(screen_text(deck))
    assert "Approval needed: T4 for release" in text
    assert "1 gate waiting" in screen_text(deck)[-1]
    keys(deck, b"y")
    deck.commands.shutdown(wait=True)
    assert {"cmd": "gate", "action": "approve", "id": "T4"} in deck.port.requests
    assert deck.overlays.widget is None


def test_n_rejects_with_a_reason(deck):
    deck.apply(news.GateOpened(news.GateView(Task("T5", "release", "Tag v3",
                                                  state=TaskState.GATED))))
    keys(deck, b"n")
    deck.commands.shutdown(wait=True)
    (request,) = [r for r in deck.port.requests if r.get("cmd") == "gate"]
    assert request["action"] == "reject" and request["id"] == "T5" and request["reason"]


def test_gates_queue_in_arrival_order(deck):
    for number in (7, 8):
        deck.apply(news.GateOpened(news.GateView(Task(f"T{number}", "release",
                                                      f"job {number}",
                                                      state=TaskState.GATED))))
    assert "T7 for release" in "\n".join(screen_text(deck))
    keys(deck, b"\x1b")  # later: T7 stays queued, T8 shows
    assert "T8 for release" in "\n".join(screen_text(deck))
    assert "2 gates waiting" in screen_text(deck)[-1]


def test_role_views_update_titles_and_cards(deck):
    deck.apply(news.RoleChanged(m.RoleView("coder", "waiting", pid=42, restarts=2,
                                           preview=("Do you want to proceed?",))))
    text = "\n".join(screen_text(deck))
    assert "coder ● waiting" in text
    assert "waiting · m1 · ↻2 · pid 42" in text
    assert "Do you want to proceed?" in text


def test_help_lists_every_binding(deck):
    keys(deck, b"\x02?")
    text = "\n".join(screen_text(deck))
    assert "C-b v" in text and "split side by side" in text
    keys(deck, b"q")
    assert deck.overlays.widget is None


def test_pause_uses_the_control_commands(deck):
    keys(deck, b"\x02p")
    deck.commands.shutdown(wait=True)
    assert {"cmd": "pause", "role": "orchestrator"} in deck.port.requests


def test_pause_of_a_role_that_is_not_running_says_so_and_asks_nothing(deck):
    deck.apply(news.RoleChanged(news.RoleView("orchestrator", "exited", detail="exit status 3")))
    keys(deck, b"\x02p")
    deck.commands.shutdown(wait=True)
    assert not [r for r in deck.port.requests if r.get("cmd") in ("pause", "resume")]
    status = screen_text(deck)[-1]
    assert "orchestrator is not running (exited): nothing to pause; C-b R restarts it" in status
    assert "paused" not in status


def test_closing_a_role_past_the_number_keys_names_no_key_it_lacks(tmp_path, monkeypatch):
    monkeypatch.setattr(f"{__name__}.ROLES", ("orchestrator", *(f"w{n}" for n in range(2, 11))))
    made = deck_on(FakePort(tmp_path))
    try:
        made.state.layout.show("w10")
        keys(made, b"\x02x")
        status = screen_text(made)[-1]
        assert "w10 is hidden and keeps running (a click on its card or a split shows it)" in status
        made.state.layout.show("w9")
        keys(made, b"\x02x")
        assert "w9 is hidden and keeps running (C-b 9 shows it)" in screen_text(made)[-1]
    finally:
        made.stop()
        made.screen.close()


def test_text_cut_at_a_title_or_the_status_line_ends_in_an_ellipsis(deck):
    deck.apply(news.TaskChanged(Task("T9", "coder", "a task title " * 12,
                                     state=TaskState.DELIVERED, created=1.0)))
    deck.apply(news.RoleChanged(news.RoleView("release", "exited",
                                              detail="held: memory: 0.2 GiB available")))
    deck.say("a message far longer than the status line has room for " * 3)
    text = screen_text(deck)
    title = next(row for row in text if " 2 coder " in row)
    assert re.search(r" 2 coder ◌ starting  T9 a task title .*…│", title), title
    assert " 3 release ✕ exited, held: memory: 0.2 Gi…│" in "\n".join(text)  # why, on its title
    assert text[-1].endswith("has room for a message far longer than t…"), text[-1]
    assert len(text[-1]) == 120


def test_scrollback_and_search(deck):
    terminal = deck.port.terminals["coder"]
    terminal.feed(b"".join(f"line {i}\r\n".encode() for i in range(100)))
    keys(deck, b"\x02l")
    screen_text(deck)
    keys(deck, b"\x02\x1b[5~")  # prefix PgUp
    assert deck.state.panes["coder"].scroll is not None
    keys(deck, b"q")
    assert deck.state.panes["coder"].scroll is None
    keys(deck, b"\x02/")
    deck.overlays.widget.insert("line 3")
    keys(deck, b"\r")
    scroll = deck.state.panes["coder"].scroll
    assert scroll is not None and scroll.query == "line 3" and len(scroll.matches) == 11
    assert "line 39" in "\n".join(screen_text(deck))  # the newest match is in view
    keys(deck, b"n")
    assert scroll.current == 9
    keys(deck, b"\x1b")
    assert deck.state.panes["coder"].scroll is None
    assert deck.port.typed("coder") == b""  # nothing of that reached the agent


@pytest.mark.parametrize("offset", [1, 9, 700, 2970, 5000])
def test_a_packed_history_scrolls_as_a_plain_one(offset):
    """The scroll view reads the page it shows (a block or two of a packed
    history) and shows what it showed from the whole history: the same lines
    as a terminal whose history was never packed, the same match marked."""
    shown = []
    for pause in (True, False):
        terminal = Terminal(60, 30)
        for start in range(0, 3000, 500):
            terminal.feed(b"".join(f"line {i}\r\n".encode() for i in range(start, start + 500)))
        if pause:
            terminal.catch_up()  # the output paused: the history packs
            packed, plain, _ = terminal._history.held()
            assert plain == 1 and packed > 40
        pane = PaneView("coder")
        pane.scroll_to(terminal, offset, 20)
        pane.scroll.query, pane.scroll.matches, pane.scroll.current = "line 1", [1], 0
        lines, _ = pane.content(terminal, 40, 20, focused=True, colors=256)
        shown.append(lines)
        if pause:
            assert terminal._history.cached() <= 2  # not the whole history
    assert shown[0] == shown[1]


def test_the_top_of_the_history_is_reached_in_a_tile_shorter_than_the_terminal():
    """A role's terminal may be taller than its tile (the size floor): scrolled
    to the top, the pane shows the first line kept, not the line the tile's
    missing rows would leave it at."""
    terminal = Terminal(60, 30)
    terminal.feed(b"".join(f"line {i}\r\n".encode() for i in range(100)))
    pane = PaneView("coder")
    pane.scroll_to(terminal, deepest(terminal, 12), 12)
    lines, _ = pane.content(terminal, 40, 12, focused=True, colors=256)
    assert lines[0][0].decode().rstrip() == "line 0"
    pane.scroll_by(terminal, 50, 12)  # further up stays at the top
    assert pane.content(terminal, 40, 12, focused=True, colors=256)[0][0] == lines[0]


def test_rebound_prefix(tmp_path):
    port = FakePort(tmp_path, Keys(prefix="ctrl+a", zoom="Z"))
    made = Deck(port, 100, 30)
    made.loop = _Loop(made.view, [], screen=made.screen)
    made.loop.deck = made
    try:
        keys(made, b"\x02")  # C-b is just a key now
        assert port.typed("orchestrator") == b"\x02"
        keys(made, b"\x01Z")
        assert made.state.layout.zoomed
    finally:
        made.stop()
        made.screen.close()


def test_palette_is_valid_for_urwid():
    screen = urwid.display.raw.Screen()
    screen.register_palette(build_palette({"accent": "#7aa2f7", "working": 42, "waiting": 214,
                                           "scroll": 213, "idle": 244, "dim": 240}))


def test_mouse_focuses_and_the_wheel_scrolls_back(deck):
    terminal = deck.port.terminals["coder"]
    terminal.feed(b"".join(f"row {i}\r\n".encode() for i in range(80)))
    screen_text(deck)
    rect = deck.state.layout.geometry(120 - 34, 39).tiles["coder"]
    x, y = rect.x + 2, rect.y + 3
    keys(deck, f"\x1b[<0;{x + 1};{y + 1}M\x1b[<0;{x + 1};{y + 1}m".encode())
    assert deck.state.layout.focus == "coder"
    keys(deck, f"\x1b[<64;{x + 1};{y + 1}M".encode())  # wheel up
    assert deck.state.panes["coder"].scroll.offset == 3
    assert deck.port.typed("coder") == b""


def test_the_mouse_goes_to_an_agent_that_asked_for_it(deck):
    deck.port.terminals["coder"].feed(b"\x1b[?1000h\x1b[?1006h")
    rect = deck.state.layout.geometry(120 - 34, 39).tiles["coder"]
    keys(deck, f"\x1b[<0;{rect.x + 5};{rect.y + 3}M".encode())
    assert deck.port.typed("coder") == b"\x1b[<0;5;2M"  # pane-relative, below the title


def test_the_core_rings_and_the_deck_passes_it_on(deck):
    import os
    deck.screen.start()
    while True:  # drop what starting wrote
        try:
            os.read(deck.screen.master, 65536)
        except BlockingIOError:
            break
    deck.apply(news.Bell("release", "on_gate"))
    assert b"\a" in os.read(deck.screen.master, 65536)
    deck.screen.stop()


def test_tiny_terminals_and_wide_characters_do_not_break_drawing(deck):
    deck.port.terminals["coder"].feed("中文字符 emoji 🎉 café\r\n".encode())
    for cols, rows in ((30, 8), (12, 3), (200, 60)):
        deck.loop.screen_size = (cols, rows)
        canvas = deck.loop.widget.render((cols, rows), focus=True)
        assert canvas.cols() == cols and canvas.rows() == rows
        keys(deck, b"\x02?")
        deck.loop.widget.render((cols, rows), focus=True)
        keys(deck, b"q")


def test_a_crash_of_the_loop_is_a_crash_of_the_supervised_ui_actor(tmp_path):
    """The deck has no crash loop of its own: its crash reaches the session's
    supervisor as the UI actor's, which starts the actor and the loop again."""
    port = FakePort(tmp_path)
    made = Deck(port, 100, 30)
    events: list = []
    sup = Supervisor.start(on_event=lambda name, **f: events.append((name, f)))
    try:
        sup.ask(StartChild(ChildSpec("ui", lambda h: UIActor.start(made, sup))))
        made.client_attached(made.client)
        wait_until(lambda: b"C-b ? help" in drain(made), 5, message="a first frame")
        first = made._thread

        def boom() -> None:
            raise RuntimeError("kaboom")
        made.post(boom)
        crash = tmp_path / ".choragos" / "logs" / "crash.log"
        wait_until(lambda: crash.exists() and "kaboom" in crash.read_text(), 5,
                   message="the crash log")
        wait_until(lambda: any(name == "actor restarted" and f["actor"] == "ui"
                               and "kaboom" in f["error"] for name, f in events), 5,
                   message="the supervisor to restart the UI actor")
        wait_until(lambda: b"the deck crashed and restarted" in drain(made), 5,
                   message="the deck drawn again, saying what happened")
        assert made._thread is not first and made.running
        made.feed_input(b"still here")
        wait_until(lambda: port.typed("orchestrator") == b"still here", 5,
                   message="keys to reach the agent after the restart")
    finally:
        sup.ask(StopAll())
        sup.stop()
        made.stop()
        made.screen.close()


def test_the_board_lists_tasks_with_their_files(deck):
    done = Task("T1", "coder", "Add retry", state=TaskState.DONE, created=1.0, delivered=2.0,
                finished=9.0, report="/w/.choragos/reports/T1.md", checkpoint="refs/x",
                changes=({"path": "a.py", "kind": "modified", "added": 2, "deleted": 1},),
                checks="verify passed")
    deck.apply(news.TaskChanged(done))
    deck.apply(news.TaskChanged(Task("T2", "release", "Ship", state=TaskState.QUEUED,
                                         created=3.0)))
    keys(deck, b"\x02t")
    text = "\n".join(screen_text(deck))
    assert "Task board (2)" in text
    assert re.search(r"T1\s+coder\s+done\s+\S+\s+7s\s+✓\s+1\s+Add retry", text)
    assert re.search(r"T2\s+release\s+queued\s+\S+\s+-\s+·\s+-\s+Ship", text)
    assert re.search(r"T2\s+release\s+queued", text)
    keys(deck, b"\x1b[A")  # select T1
    text = "\n".join(screen_text(deck))
    assert "report  /w/.choragos/reports/T1.md" in text
    assert "checks  verify passed" in text and "changed a.py (modified, +2 -1)" in text
    keys(deck, b"n")  # T1 is not at a gate
    assert "not waiting at a gate" in screen_text(deck)[-1]


def test_the_board_cancels_a_queued_task_after_a_y(deck):
    sent: list[dict] = []
    deck.commands.command = lambda request, then=None, quiet=False: sent.append(request)
    deck.apply(news.TaskChanged(Task("T1", "coder", "Add retry", state=TaskState.DONE,
                                     created=1.0, finished=9.0)))
    deck.apply(news.TaskChanged(Task("T2", "release", "Ship", state=TaskState.QUEUED,
                                     created=3.0)))
    keys(deck, b"\x02t")  # T2, the newest, is selected
    keys(deck, b"c")
    assert "Cancel T2?" in "\n".join(screen_text(deck))
    keys(deck, b"n")
    cancels = lambda: [r["id"] for r in sent if r["cmd"] == "cancel"]  # noqa: E731
    assert cancels() == [] and "Cancel T2?" not in "\n".join(screen_text(deck))
    keys(deck, b"\x02t")
    keys(deck, b"c")
    keys(deck, b"y")
    assert cancels() == ["T2"]
    keys(deck, b"\x02t")
    keys(deck, b"\x1b[A")  # T1 is done: nothing to take back
    keys(deck, b"c")
    assert "only a queued or gated task can be cancelled" in screen_text(deck)[-1]
    assert cancels() == ["T2"]


def test_a_click_on_a_card_shows_that_role(deck):
    keys(deck, b"\x02x")  # hide the orchestrator
    text = screen_text(deck)
    row = next(i for i, line in enumerate(text) if "orchestrator ★ (hidden)" in line)
    keys(deck, f"\x1b[<0;{120 - 10};{row + 1}M".encode())
    assert deck.state.layout.focus == "orchestrator"
    assert "orchestrator" in deck.state.layout.shown()


def test_cards_show_gateway_tokens_and_cost(deck):
    assert "↑" not in "\n".join(screen_text(deck))  # no telemetry, no made-up zeros
    usage = news.RoleUsage({"input": 12_345, "output": 678, "cache_read": 0,
                            "cache_creation": 0}, 0.0042)
    deck.apply(news.TokensChanged({"coder": usage, "release": replace(usage, cost=None),
                                   "orchestrator": replace(usage, estimated=("mystery",))}))
    text = "\n".join(screen_text(deck))
    assert "↑12.3k ↓678 $0.0042" in text
    assert "↑12.3k ↓678 ~$0.0042" in text  # a model [pricing] lacks: estimated
    assert text.count("↑12.3k ↓678") == 3 and text.count("$0.0042") == 2  # release: no table


def test_cards_show_budgets_and_the_guardrails_marks(deck):
    usage = news.RoleUsage({"input": 1_200_000, "output": 0}, 1.2,
                           budget={"usd": 1.0, "tokens": None, "over": True})
    deck.apply(news.TokensChanged({"coder": usage}))
    deck.apply(news.MarksChanged({"coder": ("over budget", "stalled")}))
    text = "\n".join(screen_text(deck))
    assert "↑1.2M ↓0 $1.20/$1.00" in text
    assert "over budget · stalled" in text
    deck.apply(news.MarksChanged({"coder": ()}))
    assert "over budget" not in "\n".join(screen_text(deck))


def test_status_line_shows_the_gateway_state_only_when_configured(deck):
    assert "gateway" not in screen_text(deck)[-1]
    deck.apply(news.GatewayChanged("down"))
    assert "gateway down" in screen_text(deck)[-1]
    deck.apply(news.GatewayChanged("on"))
    assert "gateway on" in screen_text(deck)[-1]


def test_a_slow_full_sync_never_overwrites_fresher_role_news(deck):
    answers: dict = {}
    deck.commands.command = lambda request, then=None, quiet=False: answers.update(
        {request["cmd"]: then})
    stale = {"status": "ok", "roles": [{"name": "coder", "state": "booting", "pid": 1}]}
    deck.sync()                                                # asked now ...
    deck.apply(news.RoleChanged(m.RoleView("coder", "working", pid=7)))  # ... news meanwhile
    answers["status"](stale)                                    # ... the answer last
    assert (deck.state.roles["coder"].status, deck.state.roles["coder"].pid) == ("working", 7)
    deck.sync()                                                # no news this time
    answers["status"]({"status": "ok", "roles": [{"name": "coder", "state": "idle", "pid": 7}]})
    assert deck.state.roles["coder"].status == "idle"


def test_the_card_says_which_agent_profile_reads_the_role(deck):
    deck.apply(news.RoleChanged(m.RoleView("coder", "idle", pid=42, profile="gemini")))
    text = "\n".join(screen_text(deck))
    assert "idle · m1 · gemini · ↻0" in text, text


def test_a_limited_role_card_says_what_limit_and_until_when(deck):
    deck.apply(news.RoleChanged(m.RoleView("coder", "limited", pid=42,
                                           detail="rate limit until 03:00:07",
                                           limited_until=1_800_000_000.0)))
    text = "\n".join(screen_text(deck))
    assert "coder ◷ limited" in text, text
    assert "rate limit until 03:00:07" in text


def test_the_deck_carries_out_keys_and_prefix_commands_without_a_wrapper_for_each(
        deck, monkeypatch):
    """The actions' handlers are found by the class's lookup: reading a
    ``singledispatchmethod`` made a new wrapper (``functools.update_wrapper``)
    for every intent, a keystroke's among them."""
    import functools

    made = []
    real = functools.update_wrapper

    def counting(wrapper, wrapped, *args, **kwargs):
        made.append(getattr(wrapped, "__qualname__", "?"))
        return real(wrapper, wrapped, *args, **kwargs)

    monkeypatch.setattr(functools, "update_wrapper", counting)
    keys(deck, b"echo hi\r")  # eight intents, each a key typed
    keys(deck, b"\x022")  # the prefix and a number: the second role focused
    keys(deck, b"x")
    monkeypatch.undo()
    assert deck.port.typed("orchestrator") == b"echo hi\r"
    assert deck.port.typed("coder") == b"x"
    assert made == []  # before, one for each of the ten intents


GATES_PROBE = """
import sys, tempfile
from pathlib import Path
from choragos.board.tasks import Task, TaskState
from choragos.session import news
from choragos.ui.deck import Deck, _Loop
from choragos.ui.theme import build_palette
from tests.ui.test_deck import FakePort

made = Deck(FakePort(Path(tempfile.mkdtemp())), 120, 40)
made.loop = _Loop(made.view, build_palette(made.ui.theme), screen=made.screen)
made.loop.deck = made
made.attached = True
made._show_waiting()  # as at an attach, and when a dialog closes (no notices, no gate)
made.apply(news.Bell("coder", "on_input"))
before = "choragos.ui.overlays" in sys.modules
made.apply(news.GateOpened(news.GateView(Task("T4", "release", "Tag", state=TaskState.GATED))))
print(before, "choragos.ui.overlays" in sys.modules, made.overlays.widget is not None)
made.stop()
made.screen.close()
"""


def test_the_dialogs_module_loads_with_the_first_gate_not_with_the_first_news():
    """A crew without gates never loads the dialogs (and the urwid widgets
    they are made of): looking for a gate to show loads nothing when there
    is none, and the first gate's dialog loads it."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", GATES_PROBE], capture_output=True, text=True,
                         timeout=60, cwd=Path(__file__).resolve().parents[2])
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "True", "True"]
