"""The deck's input router as a table: (mode, what is open, bytes) -> the
intents and the mode after, with no deck, no loop and no PTY."""

from __future__ import annotations

import pytest

from choragos.config.model import Keys
from choragos.ui import deckinput as di
from choragos.ui import keys as k

PLAIN = di.Context()
DIALOG = di.Context(dialog=True)
EDITING = di.Context(editing=True, dialog=True)
SCROLLING = di.Context(scrolling=True)


def route(data: bytes, context: di.Context = PLAIN, mode: str = di.NORMAL,
          keys: Keys | None = None) -> tuple[list, str]:
    """Every intent ``data`` makes (pending bytes flushed), and the mode after."""
    router = di.InputRouter(k.Keymap.from_config(keys or Keys()))
    router.mode = mode
    tokens = [*router.tokens(data), *router.flush()]
    intents = [intent for token in tokens
               if (intent := router.route(token, context)) is not None]
    return [_shown(intent) for intent in intents], router.mode


def _shown(intent: di.Intent) -> tuple:
    """An intent as plain data: its class name and what it carries (a token as its bytes)."""
    value = next(iter(vars(intent).values()))
    return type(intent).__name__, value.raw if isinstance(value, k.Token) else value


@pytest.mark.parametrize(("data", "context", "mode", "intents", "after"), [
    # typed at the agents, each key with its exact bytes
    (b"ls\r", PLAIN, "normal", [("TypeKeys", b"l"), ("TypeKeys", b"s"), ("TypeKeys", b"\r")],
     "normal"),
    (b"\x1b[A", PLAIN, "normal", [("TypeKeys", b"\x1b[A")], "normal"),
    (b"\x1b", PLAIN, "normal", [("TypeKeys", b"\x1b")], "normal"),  # a lone ESC, flushed
    # the prefix and what follows it
    (b"\x02", PLAIN, "normal", [], "prefix"),
    (b"\x02\x02", PLAIN, "normal", [("TypeKeys", b"\x02")], "normal"),
    (b"\x02\x1b", PLAIN, "normal", [], "normal"),
    (b"\x02z", PLAIN, "normal", [("RunAction", "zoom")], "normal"),
    (b"\x02t", PLAIN, "normal", [("RunAction", "task_board")], "normal"),
    (b"\x02?", PLAIN, "normal", [("RunAction", "help")], "normal"),
    (b"\x023", PLAIN, "normal", [("FocusNumber", 3)], "normal"),
    (b"\x02[", PLAIN, "normal", [("ScrollBack", False)], "normal"),
    (b"\x02\x1b[5~", PLAIN, "normal", [("ScrollBack", True)], "normal"),
    (b"\x02Y", PLAIN, "normal", [("Unbound", "Y")], "normal"),
    (b"z", PLAIN, "prefix", [("RunAction", "zoom")], "normal"),
    # resize mode: borders move until Esc, Enter, q or the resize key again
    (b"\x02r", PLAIN, "normal", [], "resize"),
    (b"hl\x1b[A", PLAIN, "resize", [("MoveBorder", "left"), ("MoveBorder", "right"),
                                    ("MoveBorder", "up")], "resize"),
    (b"x", PLAIN, "resize", [], "resize"),
    (b"q", PLAIN, "resize", [], "normal"),
    (b"r", PLAIN, "resize", [], "normal"),
    (b"\x1b", PLAIN, "resize", [], "normal"),
    # a pane showing its scrollback takes the keys; the prefix still works
    (b"k", SCROLLING, "normal", [("ScrollKey", "k")], "normal"),
    (b"\x1b[6~", SCROLLING, "normal", [("ScrollKey", "page down")], "normal"),
    (b"\x02z", SCROLLING, "normal", [("RunAction", "zoom")], "normal"),
    # an open dialog takes every key, the prefix too; the editor above all
    (b"y", DIALOG, "normal", [("ToDialog", b"y")], "normal"),
    (b"\x02", DIALOG, "normal", [("ToDialog", b"\x02")], "normal"),
    (b"\x02q", EDITING, "normal", [("ToEditor", b"\x02"), ("ToEditor", b"q")], "normal"),
    # the mouse, whatever is open (the actions send it to the dialog or a pane)
    (b"\x1b[<0;5;3M", PLAIN, "normal", [("Mouse", ("mouse press", 1, 4, 2))], "normal"),
    (b"\x1b[<0;5;3M", DIALOG, "normal", [("Mouse", ("mouse press", 1, 4, 2))], "normal"),
    # terminal reports are no keys
    (b"\x1b[I\x1b[O", PLAIN, "normal", [], "normal"),
    # a paste is typed as it is, a prefix inside it is text
    (b"\x1b[200~a\x02b\x1b[201~", PLAIN, "normal",
     [("TypeKeys", b"\x1b[200~"), ("TypeKeys", b"a\x02b"), ("TypeKeys", b"\x1b[201~")],
     "normal"),
    (b"\x1b[200~x\x1b[201~", PLAIN, "prefix",
     [("TypeKeys", b"\x1b[200~"), ("TypeKeys", b"x"), ("TypeKeys", b"\x1b[201~")], "prefix"),
])
def test_bytes_become_intents(data, context, mode, intents, after):
    assert route(data, context, mode) == (intents, after)


def test_a_rebound_prefix_and_action():
    keys = Keys(prefix="ctrl+a", zoom="Z")
    assert route(b"\x02", keys=keys) == ([("TypeKeys", b"\x02")], "normal")
    assert route(b"\x01Z", keys=keys) == ([("RunAction", "zoom")], "normal")
    assert route(b"\x01z", keys=keys) == ([("Unbound", "z")], "normal")


def test_a_sequence_cut_by_a_read_waits_for_the_rest():
    router = di.InputRouter(k.Keymap.from_config(Keys()))
    assert router.tokens(b"\x1b[") == [] and router.pending and not router.idle
    (token,) = router.tokens(b"B")
    assert router.route(token, PLAIN) == di.TypeKeys(token) and router.idle


@pytest.mark.parametrize(("data", "prefix", "plain"), [
    (b"hello world", "ctrl+b", True),
    (b"ls -la\r", "ctrl+b", True),
    (b"\x7f", "ctrl+b", True),
    (b"", "ctrl+b", False),
    (b"a\x02", "ctrl+b", False),      # the prefix
    (b"\x1b[A", "ctrl+b", False),     # an escape sequence
    (b"\t", "ctrl+b", False),         # a control key
    ("é".encode(), "ctrl+b", False),  # not ASCII: the tokenizer's
    (b"a`b", "`", False),             # a printable prefix
    (b"go\r", "enter", False),        # Enter as the prefix
])
def test_plain_typing_is_told_apart(data, prefix, plain):
    router = di.InputRouter(k.Keymap.from_config(Keys(prefix=prefix)))
    assert router.plain(data) is plain


def test_every_action_the_router_runs_has_a_method():
    from choragos.config.model import KEY_ACTIONS
    from choragos.ui.deckactions import Actions

    methods = {name[4:] for name in dir(Actions) if name.startswith("act_")}
    assert methods == set(KEY_ACTIONS) - {"resize_mode"}  # that mode is the router's
