"""Colours: the deck's palette from ``[ui.theme]``, and agents' cell styles as urwid attributes."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache

import urwid

from choragos.roles.rolestatus import RoleStatus
from choragos.terminal.vtcells import Run, palette

TRUECOLOR = 2 ** 24

# pyte's names for the sixteen colours -> urwid's.
_SIXTEEN = {
    "black": "black", "red": "dark red", "green": "dark green", "brown": "brown",
    "blue": "dark blue", "magenta": "dark magenta", "cyan": "dark cyan", "white": "light gray",
    "brightblack": "dark gray", "brightred": "light red", "brightgreen": "light green",
    "brightbrown": "yellow", "brightblue": "light blue", "brightmagenta": "light magenta",
    "brightcyan": "light cyan", "brightwhite": "white",
}
_INDEX_OF_HEX = {palette(i): i for i in range(16, 256)}
_CUBE = (0, 95, 135, 175, 215, 255)


def nearest_256(hex6: str) -> int:
    """The xterm-256 index closest to ``rrggbb``."""
    if hex6 in _INDEX_OF_HEX:
        return _INDEX_OF_HEX[hex6]
    r, g, b = (int(hex6[i:i + 2], 16) for i in (0, 2, 4))

    def level(v: int) -> int:
        return 0 if v < 48 else 1 if v < 115 else (v - 35) // 40

    cube = tuple(_CUBE[level(v)] for v in (r, g, b))
    cube_index = 16 + 36 * level(r) + 6 * level(g) + level(b)
    grey = min(23, max(0, (r + g + b) // 3 - 3) // 10)
    grey_value = 8 + 10 * grey

    def distance(c: tuple[int, int, int]) -> int:
        return sum((x - y) ** 2 for x, y in zip(c, (r, g, b), strict=True))

    return cube_index if distance(cube) <= distance((grey_value,) * 3) else 232 + grey


def colour(value: int | str, colors: int = 256) -> str:
    """A theme colour (palette index or ``#rrggbb``) in urwid's spelling."""
    if isinstance(value, int):
        return f"h{value}"
    hex6 = value.lstrip("#").lower()
    return f"#{hex6}" if colors >= TRUECOLOR else f"h{nearest_256(hex6)}"


def _cell_colour(name: str, colors: int) -> str:
    if name == "default":
        return "default"
    if name in _SIXTEEN:
        return _SIXTEEN[name]
    return f"#{name}" if colors >= TRUECOLOR else f"h{nearest_256(name)}"


@lru_cache(maxsize=4096)
def run_attr(fg: str, bg: str, bold: bool, italic: bool, underline: bool,
             strikethrough: bool, reverse: bool, blink: bool,
             colors: int = 256) -> urwid.AttrSpec | None:
    """The urwid attribute for one style of an agent's cells (None: the default)."""
    if (fg, bg) == ("default", "default") and not (bold or italic or underline or strikethrough
                                                   or reverse or blink):
        return None
    flags = [flag for flag, on in (("bold", bold), ("italics", italic),
                                   ("underline", underline), ("strikethrough", strikethrough),
                                   ("standout", reverse), ("blink", blink)) if on]
    if colors == 1:  # NO_COLOR: an agent's emphasis survives, its colours do not
        return urwid.AttrSpec(",".join(["default", *flags]), "default", colors)
    fg_spec = ",".join([_cell_colour(fg, colors), *flags])
    try:
        return urwid.AttrSpec(fg_spec, _cell_colour(bg, colors), colors)
    except urwid.AttrSpecError:
        return urwid.AttrSpec(",".join(["default", *flags]), "default", colors)


def attr_of(run: Run, colors: int = 256) -> urwid.AttrSpec | None:
    # A run is its text and then run_attr's arguments, in their order.
    return run_attr(*run[1:], colors)


def build_palette(theme: Mapping[str, int | str]) -> list[tuple]:
    """The deck's named attributes, coloured by ``[ui.theme]``."""
    c = {name: colour(value) for name, value in theme.items()}
    black = "h16"
    entries = [
        # name, 16-colour fg, 16-colour bg, mono, 256-colour fg, 256-colour bg
        ("accent", "light cyan", "", "bold", c["accent"], ""),
        ("accent bold", "light cyan,bold", "", "bold", c["accent"] + ",bold", ""),
        ("working", "light green", "", "", c["working"], ""),
        ("waiting", "yellow", "", "bold", c["waiting"], ""),
        ("waiting bold", "yellow,bold", "", "bold", c["waiting"] + ",bold", ""),
        ("scroll", "light magenta", "", "", c["scroll"], ""),
        ("idle", "light gray", "", "", c["idle"], ""),
        ("dim", "dark gray", "", "", c["dim"], ""),
        ("failed", "light red", "", "bold", "h203", ""),
        ("bold", "default,bold", "", "bold", "default,bold", ""),
        ("title", "light gray", "", "", c["idle"], ""),
        ("title focus", "black", "light cyan", "standout", black, c["accent"]),
        ("bar", "dark gray", "", "", c["dim"], ""),
        ("status", "light gray", "black", "", "h252", "h235"),
        ("status dim", "dark gray", "black", "", c["dim"], "h235"),
        ("status accent", "black", "light cyan", "standout", black, c["accent"]),
        ("status waiting", "black", "yellow", "standout", black, c["waiting"]),
        ("status scroll", "black", "light magenta", "standout", black, c["scroll"]),
        ("status message", "white", "black", "bold", "h255,bold", "h235"),
        ("overlay", "default", "", "", "default", ""),
        ("overlay border", "light cyan", "", "", c["accent"], ""),
        ("overlay title", "light cyan,bold", "", "bold", c["accent"] + ",bold", ""),
        ("selected", "black", "light cyan", "standout", black, c["accent"]),
        ("match", "black", "light magenta", "standout", black, c["scroll"]),
        ("card name", "default,bold", "", "bold", "default,bold", ""),
        ("card focus", "black", "light cyan", "standout", black, c["accent"]),
    ]
    return entries


STATE_STYLE: dict[RoleStatus, str] = {
    RoleStatus.WORKING: "working", RoleStatus.WAITING: "waiting", RoleStatus.IDLE: "idle",
    RoleStatus.STARTING: "accent", RoleStatus.BOOTING: "accent", RoleStatus.PAUSED: "scroll",
    RoleStatus.EXITED: "dim", RoleStatus.FAILED: "failed", RoleStatus.LIMITED: "waiting",
}
STATE_DOT: dict[RoleStatus, str] = {
    RoleStatus.WORKING: "●", RoleStatus.WAITING: "●", RoleStatus.IDLE: "○",
    RoleStatus.STARTING: "◌", RoleStatus.BOOTING: "◌", RoleStatus.PAUSED: "‖",
    RoleStatus.EXITED: "✕", RoleStatus.FAILED: "✕", RoleStatus.LIMITED: "◷",
}
