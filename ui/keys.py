"""Keys: the deck's keymap, the input tokenizer, and what an agent is sent.

The user's terminal sends bytes.  :class:`Tokenizer` cuts them into keys
(urwid's own decoder names each one) while keeping every key's original
bytes, so a key the deck does not want reaches the agent exactly as typed.
Only two things are ever rewritten on the way to an agent: cursor keys,
which follow the agent's application-cursor mode (DECCKM), and the
bracketed-paste markers, which pass only to an agent that turned mode 2004
on.  Mouse events are re-encoded for the pane they land in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import urwid
from urwid.display import escape

from choragos.config.model import KEY_ACTIONS, Keys

# What each action does, in the words of the help overlay and docs/keybindings.md.
ACTION_HELP: dict[str, str] = {
    "split_vertical": "split side by side, showing the next hidden role",
    "split_horizontal": "split top and bottom, showing the next hidden role",
    "close_pane": "close the pane (the role keeps running, hidden)",
    "focus_pane_left": "focus the pane to the left",
    "focus_pane_down": "focus the pane below",
    "focus_pane_up": "focus the pane above",
    "focus_pane_right": "focus the pane to the right",
    "cycle_pane_next": "focus the next pane",
    "cycle_pane_previous": "focus the previous pane",
    "zoom": "zoom the focused pane to the whole deck, and back",
    "resize_mode": "resize mode: arrows or h/j/k/l move borders, esc ends",
    "toggle_sidebar": "show or hide the sidebar",
    "restart_role": "restart the focused role (asks first)",
    "pause_role": "pause or resume the focused role",
    "reload": "re-read the config file and update the team",
    "detach": "detach; the team keeps working",
    "broadcast": "type into every shown pane at once (toggle)",
    "task_board": "open the task board",
    "search": "search the focused pane's scrollback",
    "help": "show the key bindings",
}
assert set(ACTION_HELP) == set(KEY_ACTIONS), "every action needs a help line"

_NAMED = {
    "tab": "tab", "shift+tab": "shift tab", "enter": "enter", "esc": "esc",
    "space": " ", "backspace": "backspace", "up": "up", "down": "down", "left": "left",
    "right": "right", "pgup": "page up", "pgdn": "page down", "home": "home", "end": "end",
    **{f"f{n}": f"f{n}" for n in range(1, 13)},
}
# Control chords a terminal sends as a byte urwid names after another key.
_CTRL_ALIASES = {"ctrl+h": "backspace", "ctrl+i": "tab", "ctrl+j": "enter", "ctrl+m": "enter"}


def urwid_name(key: str) -> str:
    """A ``[keys]`` spelling (``ctrl+b``, ``pgup``, ``R``) as urwid names the key."""
    if len(key) == 1:
        return key
    lowered = key.lower()
    if lowered in _NAMED:
        return _NAMED[lowered]
    if lowered in _CTRL_ALIASES:
        return _CTRL_ALIASES[lowered]
    if lowered.startswith("ctrl+") and len(lowered) == 6:
        return f"ctrl {lowered[-1]}"
    raise ValueError(f"not a deck key: {key!r}")


def display_name(key: str) -> str:
    """How a ``[keys]`` spelling is shown to people: ``C-b``, ``PgUp``, ``R``."""
    if key.startswith("ctrl+"):
        return "C-" + key[5:]
    return {"pgup": "PgUp", "pgdn": "PgDn", "shift+tab": "S-Tab", "space": "Space",
            "tab": "Tab", "enter": "Enter", "esc": "Esc"}.get(key, key)


@dataclass(frozen=True)
class Keymap:
    """The prefix key and, after it, which key runs which action."""

    prefix: str                 # urwid name
    prefix_spelling: str        # as written in [keys]
    actions: Mapping[str, str]  # urwid name -> action
    spellings: Mapping[str, str]  # action -> as written in [keys]

    @classmethod
    def from_config(cls, keys: Keys) -> Keymap:
        spellings = keys.bindings
        actions = {urwid_name(key): action for action, key in spellings.items()}
        return cls(urwid_name(keys.prefix), keys.prefix, actions, spellings)

    def action(self, key: Any) -> str | None:
        return self.actions.get(key) if isinstance(key, str) else None

    def describe(self, action: str) -> str:
        """``C-b v`` for an action, as the help overlay shows it."""
        return f"{display_name(self.prefix_spelling)} {display_name(self.spellings[action])}"


# -- tokenizing the user's input ------------------------------------------------------

PASTE_BEGIN = b"\x1b[200~"
PASTE_END = b"\x1b[201~"
PASTE_TEXT = "paste text"  # the key name of a token holding pasted bytes


class Token(NamedTuple):
    """One key (or one piece of a paste): its original bytes and urwid's names."""

    raw: bytes
    keys: tuple[Any, ...]

    @property
    def key(self) -> Any:
        return self.keys[0] if self.keys else None


class Tokenizer:
    """Cuts a byte stream into :class:`Token` s.

    A sequence cut off at the end of a read is kept until more bytes arrive;
    if none do, :meth:`flush` (called after a short timeout) gives what is
    left its plain meaning: a lone ESC is the Escape key.  Between the paste
    markers nothing is interpreted: the pasted bytes come out as
    ``paste text`` tokens, so a prefix key inside a paste is just text.
    """

    def __init__(self) -> None:
        urwid.set_encoding("utf8")
        self._buffer = bytearray()
        self.in_paste = False

    @property
    def pending(self) -> bool:
        return bool(self._buffer)

    def feed(self, data: bytes) -> list[Token]:
        self._buffer += data
        return self._drain(more=True)

    def flush(self) -> list[Token]:
        return self._drain(more=False)

    def _drain(self, more: bool) -> list[Token]:
        out: list[Token] = []
        while self._buffer:
            if self.in_paste:
                if not self._paste_chunk(out, more):
                    break
                continue
            codes = list(self._buffer)
            try:
                keys, rest = escape.process_keyqueue(codes, more)
            except escape.MoreInputRequired:
                break
            used = len(codes) - len(rest)
            raw = bytes(self._buffer[:used])
            del self._buffer[:used]
            out.append(Token(raw, tuple(keys)))
            if raw == PASTE_BEGIN:
                self.in_paste = True
        return out

    def _paste_chunk(self, out: list[Token], more: bool) -> bool:
        end = self._buffer.find(PASTE_END)
        if end < 0:
            # Keep back what could be the start of the end marker.
            keep = _marker_prefix(self._buffer, PASTE_END) if more else 0
            text = bytes(self._buffer[:len(self._buffer) - keep])
            del self._buffer[:len(text)]
            if text:
                out.append(Token(text, (PASTE_TEXT,)))
            return False
        if end:
            out.append(Token(bytes(self._buffer[:end]), (PASTE_TEXT,)))
        del self._buffer[:end + len(PASTE_END)]
        out.append(Token(PASTE_END, ("end paste",)))
        self.in_paste = False
        return True


def _marker_prefix(buffer: bytearray, marker: bytes) -> int:
    for size in range(min(len(marker) - 1, len(buffer)), 0, -1):
        if buffer.endswith(marker[:size]):
            return size
    return 0


# -- what the agent is sent -------------------------------------------------------------

_CURSOR_FINALS = b"ABCDHF"


def to_agent(token: Token, *, application_cursor: bool, bracketed_paste: bool) -> bytes:
    """The bytes an agent gets for ``token``, following the agent's own modes."""
    key = token.key
    if key in ("begin paste", "end paste"):
        return token.raw if bracketed_paste else b""
    if key == PASTE_TEXT:
        return paste_to_agent(token.raw, bracketed_paste=bracketed_paste)
    if not isinstance(key, str) or key in ("focus in", "focus out"):
        return b""  # mouse events and terminal reports are the deck's business
    raw = token.raw
    if len(raw) == 3 and raw[2] in _CURSOR_FINALS and raw[:2] in (b"\x1b[", b"\x1bO"):
        # Plain cursor keys: ESC O x in application-cursor mode, ESC [ x otherwise.
        return (b"\x1bO" if application_cursor else b"\x1b[") + raw[2:]
    return raw


def paste_to_agent(text: bytes, *, bracketed_paste: bool) -> bytes:
    """Pasted bytes for an agent: an ESC inside a bracketed paste could end it early."""
    return text.replace(b"\x1b", b"") if bracketed_paste else text


def text_of(token: Token) -> str:
    """The characters a token types, for text fields in overlays."""
    if token.key == PASTE_TEXT:
        return token.raw.decode("utf-8", "replace").replace("\r", " ").replace("\n", " ")
    key = token.key
    if isinstance(key, str) and len(key) == 1 and key.isprintable():
        return key
    return ""


_BUTTONS = {1: 0, 2: 1, 3: 2, 4: 64, 5: 65}


def mouse_to_agent(event: str, button: int, x: int, y: int, *, mode: int,
                   sgr: bool) -> bytes:
    """A mouse event at pane cell (x, y) in the encoding the agent asked for.

    ``mode`` is the agent's tracking mode (9, 1000, 1002, 1003; 0 = none).
    """
    if mode == 0:
        return b""
    name = event.rsplit(" ", 2)
    kind = " ".join(name[-2:])  # "mouse press", "mouse release", "mouse drag"
    if kind == "mouse drag" and mode not in (1002, 1003):
        return b""
    if kind == "mouse release" and mode == 9:
        return b""
    code = _BUTTONS.get(button, 0)
    if kind == "mouse drag":
        code += 32
    modifiers = event[: -len(kind)]
    code += 4 * ("shift" in modifiers) + 8 * ("meta" in modifiers) + 16 * ("ctrl" in modifiers)
    if sgr:
        final = "m" if kind == "mouse release" else "M"
        return f"\x1b[<{code};{x + 1};{y + 1}{final}".encode()
    if kind == "mouse release":
        code = 3 + (code & ~3 & ~64)
    if x > 222 or y > 222:
        return b""  # the legacy encoding cannot say where
    return bytes([0x1b, ord("["), ord("M"), 32 + code, 33 + x, 33 + y])
