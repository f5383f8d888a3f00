"""The deck's input router: the client's bytes -> intents.

:class:`InputRouter` owns the tokenizer and the key mode (normal, after
the prefix, resize) and decides, key by key, what the key means: typed at
the agents, an action of ``[keys]``, a key for the open dialog or the
editor, a scroll or a border move.  It changes nothing else and draws
nothing: the deck's actions (``ui/deckactions.py``) carry the intents out.
What a key means depends on what is open, so the deck routes one key at a
time and passes what is open now (:class:`Context`).
"""

from __future__ import annotations

from dataclasses import dataclass

from choragos.ui import keys as k

# Bytes that are typed as themselves whatever the deck's state: printable
# ASCII, Enter and Backspace (no escape sequence, no control key).
_PLAIN = bytes([*range(0x20, 0x7f), 0x0d, 0x7f])
_PLAIN_NAMES = {"enter": b"\r", "backspace": b"\x7f"}
_PASTE_KEYS = (k.PASTE_TEXT, "end paste", "begin paste")
_DIRECTIONS = {"left": "left", "h": "left", "right": "right", "l": "right", "up": "up",
               "k": "up", "down": "down", "j": "down"}

NORMAL, PREFIX, RESIZE = "normal", "prefix", "resize"


@dataclass(frozen=True)
class Context:
    """What is open when a key arrives."""

    editing: bool = False    # the editor covers the deck
    dialog: bool = False     # a dialog is open
    scrolling: bool = False  # the focused pane shows its scrollback


# -- intents ------------------------------------------------------------------------------


@dataclass(frozen=True)
class TypeKeys:
    """Type the key at the focused agent (or every shown one, broadcasting)."""

    token: k.Token


@dataclass(frozen=True)
class ToEditor:
    """The editor over the deck gets the key."""

    token: k.Token


@dataclass(frozen=True)
class ToDialog:
    """The open dialog gets the key."""

    token: k.Token


@dataclass(frozen=True)
class Mouse:
    """A mouse event: (name, button, x, y)."""

    event: tuple


@dataclass(frozen=True)
class RunAction:
    """Run a ``[keys]`` action (names as in ``config.KEY_ACTIONS``)."""

    action: str


@dataclass(frozen=True)
class FocusNumber:
    """Show and focus the role with this number (1 = the first of the roster)."""

    number: int


@dataclass(frozen=True)
class ScrollBack:
    """Enter the focused pane's scrollback, a page up when ``page``."""

    page: bool


@dataclass(frozen=True)
class ScrollKey:
    """A key for the focused pane's scrollback (pages, lines, search)."""

    key: str


@dataclass(frozen=True)
class MoveBorder:
    """Resize mode: move the focused tile's border this way."""

    direction: str


@dataclass(frozen=True)
class Unbound:
    """The prefix and a key that is not bound (shown as ``key``)."""

    key: str


Intent = (TypeKeys | ToEditor | ToDialog | Mouse | RunAction | FocusNumber | ScrollBack
          | ScrollKey | MoveBorder | Unbound)


class InputRouter:
    """Bytes -> keys -> intents, with the key mode."""

    def __init__(self, keymap: k.Keymap) -> None:
        self.keymap = keymap
        self.tokenizer = k.Tokenizer()
        self.mode = NORMAL

    def reset(self) -> None:
        """Back to the normal key mode (the client left, or the loop crashed)."""
        self.mode = NORMAL

    @property
    def pending(self) -> bool:
        """Bytes of a key cut off at the end of a read wait for more (or for flush)."""
        return self.tokenizer.pending

    @property
    def idle(self) -> bool:
        """No key sequence, paste or key mode in progress."""
        return self.mode == NORMAL and not self.tokenizer.pending and not self.tokenizer.in_paste

    def plain(self, data: bytes) -> bool:
        """``data`` is plain typing (printable keys, Enter, Backspace, not the prefix):
        it means the same whatever the keys before it were."""
        if not data or data.translate(None, _PLAIN):
            return False
        prefix = self.keymap.prefix
        return _PLAIN_NAMES.get(prefix, prefix.encode()) not in data

    def tokens(self, data: bytes) -> list[k.Token]:
        return self.tokenizer.feed(data)

    def flush(self) -> list[k.Token]:
        """What was left pending, with its plain meaning (a lone ESC is Escape)."""
        return self.tokenizer.flush()

    def route(self, token: k.Token, context: Context) -> Intent | None:
        """What ``token`` means now; None when it only changed the mode, or means nothing."""
        key = token.key
        if context.editing:
            return ToEditor(token)
        if isinstance(key, tuple):
            return Mouse(key)
        if not isinstance(key, str) or key in ("focus in", "focus out"):
            return None  # a terminal report, not a key
        if context.dialog:
            return ToDialog(token)
        if self.tokenizer.in_paste or key in _PASTE_KEYS:
            return TypeKeys(token)
        if self.mode == PREFIX:
            self.mode = NORMAL
            return self._after_prefix(token)
        if key == self.keymap.prefix:
            self.mode = PREFIX
            return None
        if self.mode == RESIZE:
            return self._resize_key(key)
        if context.scrolling:
            return ScrollKey(key)
        return TypeKeys(token)

    def _after_prefix(self, token: k.Token) -> Intent | None:
        key = token.key
        if key == self.keymap.prefix:
            return TypeKeys(token)  # prefix twice: the agent gets the key itself
        if key == "esc":
            return None
        if len(key) == 1 and key in "123456789":
            return FocusNumber(int(key))
        if key in ("page up", "["):
            return ScrollBack(page=key == "page up")
        action = self.keymap.action(key)
        if action is None:
            return Unbound(key)
        if action == "resize_mode":
            self.mode = RESIZE
            return None
        return RunAction(action)

    def _resize_key(self, key: str) -> Intent | None:
        direction = _DIRECTIONS.get(key)
        if direction is not None:
            return MoveBorder(direction)
        if key in ("esc", "enter", "q", self.keymap.spellings["resize_mode"]):
            self.mode = NORMAL
        return None

