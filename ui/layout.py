"""The deck's tiling tree: which roles are shown, where, and which one has focus.

Pure data, no urwid: the deck asks for :meth:`Layout.geometry` of its body
area and draws what it gets.  A tile is a role's pane; a split lays its
children side by side (``ROW``: a one-column bar between neighbours) or on
top of each other (``COLUMN``: every pane has its own title row, which
separates it from the one above).  Roles not in the tree are *hidden*: they
keep running, they are just not on screen.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

ROW = "row"        # children side by side: prefix+v ("split vertical")
COLUMN = "column"  # children stacked: prefix+- ("split horizontal")

MIN_WIDTH = 8      # a tile narrower than this is not worth drawing
MIN_HEIGHT = 3     # title row + two rows of screen
RESIZE_STEP = 0.05


class LayoutError(Exception):
    """An operation that cannot be done; the message is shown to the user."""


@dataclass(frozen=True)
class Rect:
    """A tile's place on the screen: its column, row, width and height."""

    x: int
    y: int
    w: int
    h: int

    @property
    def right(self) -> int:
        return self.x + self.w

    @property
    def bottom(self) -> int:
        return self.y + self.h

    def contains(self, x: int, y: int) -> bool:
        return self.x <= x < self.right and self.y <= y < self.bottom


@dataclass
class Leaf:
    """A tile of the layout: one role's pane."""

    role: str


@dataclass
class Split:
    """A split of the layout: its children side by side or stacked, and their shares."""

    direction: str
    children: list[Leaf | Split]
    weights: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.weights:
            self.weights = [1.0] * len(self.children)


Node = Leaf | Split


@dataclass(frozen=True)
class Geometry:
    """Where everything goes for one body size."""

    tiles: dict[str, Rect]          # role -> the tile (title row included)
    bars: tuple[Rect, ...]          # one-column separators between side-by-side tiles


class Layout:
    """A tmux-like tiling of role panes with one focused tile."""

    def __init__(self, roster: Iterable[str], root: Node | None = None,
                 focus: str | None = None) -> None:
        self.roster: list[str] = list(dict.fromkeys(roster))
        self.root: Node | None = root
        self.focus: str | None = focus
        self.zoomed = False

    # -- construction -----------------------------------------------------------

    @classmethod
    def main_vertical(cls, roster: Iterable[str], main: str | None = None,
                      max_stacked: int = 6) -> Layout:
        """``main`` on the left, the other roles stacked on the right (tmux's
        main-vertical); roles beyond ``max_stacked`` start hidden."""
        names = list(dict.fromkeys(roster))
        if not names:
            return cls(names)
        main = main if main in names else names[0]
        others = [n for n in names if n != main][:max(0, max_stacked)]
        if not others:
            return cls(names, Leaf(main), main)
        right: Node = Leaf(others[0]) if len(others) == 1 else \
            Split(COLUMN, [Leaf(n) for n in others])
        return cls(names, Split(ROW, [Leaf(main), right], [1.0, 1.0]), main)

    # -- saving (a resumed session keeps its layout) ---------------------------------

    def to_dict(self) -> dict:
        return {"root": _node_dict(self.root), "focus": self.focus, "zoomed": self.zoomed}

    @classmethod
    def from_dict(cls, data: dict, roster: Iterable[str]) -> Layout:
        """A saved layout fitted to today's roster; LayoutError when it cannot be read."""
        try:
            root = _node_from(data["root"])
        except (KeyError, TypeError, ValueError) as exc:
            raise LayoutError(f"the saved layout cannot be read: {exc}") from None
        roles = [leaf.role for leaf in _leaves(root)]
        if len(roles) != len(set(roles)):
            raise LayoutError("the saved layout shows a role twice")
        layout = cls(roster, root, data.get("focus"))
        layout.zoomed = data.get("zoomed") is True
        layout.set_roster(layout.roster)  # drops roles the team no longer has
        return layout

    # -- queries ----------------------------------------------------------------

    def shown(self) -> list[str]:
        """Roles on screen, in tree order (left to right, top to bottom)."""
        return [leaf.role for leaf in _leaves(self.root)]

    def hidden(self) -> list[str]:
        shown = set(self.shown())
        return [name for name in self.roster if name not in shown]

    def visible(self) -> list[str]:
        """Roles actually drawn: only the focused one while zoomed."""
        if self.zoomed and self.focus is not None:
            return [self.focus]
        return self.shown()

    def geometry(self, width: int, height: int) -> Geometry:
        tiles: dict[str, Rect] = {}
        bars: list[Rect] = []
        if self.root is None or width <= 0 or height <= 0:
            return Geometry(tiles, ())
        if self.zoomed and self.focus is not None:
            return Geometry({self.focus: Rect(0, 0, width, height)}, ())
        _place(self.root, Rect(0, 0, width, height), tiles, bars)
        return Geometry(tiles, tuple(bars))

    def role_at(self, width: int, height: int, x: int, y: int) -> str | None:
        for role, rect in self.geometry(width, height).tiles.items():
            if rect.contains(x, y):
                return role
        return None

    # -- roster -----------------------------------------------------------------

    def set_roster(self, roster: Iterable[str]) -> None:
        """Follow a team change: removed roles leave the tree, new ones start hidden."""
        self.roster = list(dict.fromkeys(roster))
        for role in [r for r in self.shown() if r not in self.roster]:
            self._remove(role)
        if self.root is None and self.roster:
            self.root = Leaf(self.roster[0])
        if self.focus not in self.shown():
            shown = self.shown()
            self.focus = shown[0] if shown else None
            self.zoomed = False

    # -- editing ----------------------------------------------------------------

    def split(self, direction: str, role: str | None = None) -> str:
        """Split the focused tile; the new half shows ``role`` or the next hidden
        role.  Never starts anything: a role is shown or it is not."""
        if direction not in (ROW, COLUMN):
            raise ValueError(direction)
        hidden = self.hidden()
        if role is None:
            if not hidden:
                raise LayoutError("every role is already on screen")
            role = self._next_hidden(hidden)
        elif role not in hidden:
            raise LayoutError(f"{role} is already on screen" if role in self.roster
                              else f"no role named {role}")
        if self.root is None or self.focus is None:
            self.root, self.focus = Leaf(role), role
            return role
        self.zoomed = False
        parent, index = self._find(self.focus)
        leaf = Leaf(role)
        if parent is not None and parent.direction == direction:
            # tmux halves the pane: the new tile takes half of the old one's share.
            half = parent.weights[index] / 2
            parent.weights[index] = half
            parent.children.insert(index + 1, leaf)
            parent.weights.insert(index + 1, half)
        else:
            old = self._leaf(self.focus)
            replacement = Split(direction, [Leaf(old.role), leaf])
            self._replace(old, replacement)
        self.focus = role
        return role

    def close(self, role: str | None = None) -> str:
        """Take a tile off screen; its role keeps running, hidden."""
        role = role or self.focus
        if role is None or role not in self.shown():
            raise LayoutError("no pane to close")
        if len(self.shown()) == 1:
            raise LayoutError("the last pane stays open (show another role first)")
        order = self.shown()
        self._remove(role)
        self.zoomed = False
        if self.focus == role:
            at = order.index(role)
            remaining = self.shown()
            self.focus = remaining[min(at, len(remaining) - 1)]
        return role

    def show(self, role: str) -> None:
        """Focus ``role``; a hidden role takes the focused tile's place."""
        if role not in self.roster:
            raise LayoutError(f"no role named {role}")
        if role in self.shown():
            self.focus = role  # while zoomed, the zoom follows the focus
            return
        if self.focus is None or self.root is None:
            self.root, self.focus = Leaf(role), role
            return
        self._leaf(self.focus).role = role
        self.focus = role

    def focus_index(self, number: int) -> str:
        """Focus role number ``number`` (1-based, in roster order)."""
        if not 1 <= number <= len(self.roster):
            raise LayoutError(f"there is no role {number} (the team has {len(self.roster)})")
        role = self.roster[number - 1]
        self.show(role)
        return role

    def cycle(self, step: int) -> str | None:
        shown = self.shown()
        if not shown:
            return None
        at = shown.index(self.focus) if self.focus in shown else 0
        self.focus = shown[(at + step) % len(shown)]
        return self.focus

    def move_focus(self, direction: str, width: int, height: int) -> str | None:
        """Focus the tile next to the focused one: ``left``/``right``/``up``/``down``."""
        if self.focus is None:
            return None
        zoomed, self.zoomed = self.zoomed, False  # neighbours as if unzoomed
        try:
            tiles = self.geometry(width, height).tiles
        finally:
            self.zoomed = zoomed
        here = tiles.get(self.focus)
        if here is None:
            return None
        best, best_key = None, None
        for role, rect in tiles.items():
            if role == self.focus:
                continue
            key = _neighbour_key(here, rect, direction)
            if key is not None and (best_key is None or key < best_key):
                best, best_key = role, key
        if best is not None:
            self.focus = best
        return best

    def toggle_zoom(self) -> bool:
        if self.focus is None:
            return False
        self.zoomed = not self.zoomed and len(self.shown()) > 1
        return self.zoomed

    def resize(self, direction: str, step: float = RESIZE_STEP) -> bool:
        """Grow the focused tile towards ``direction`` (shrinking its neighbour).

        Moves the border on that side of the tile, like tmux's resize-pane:
        ``right``/``down`` push the border after the tile, ``left``/``up`` the
        border before it.  Returns False when there is no such border.
        """
        if self.focus is None or self.zoomed:
            return False
        want = ROW if direction in ("left", "right") else COLUMN
        forward = direction in ("right", "down")
        node: Node = self._leaf(self.focus)
        while True:
            parent, index = self._parent_of(node)
            if parent is None:
                return False
            if parent.direction == want:
                other = index + 1 if forward else index - 1
                if 0 <= other < len(parent.children):
                    return _shift(parent, index, other, step)
            node = parent

    # -- internals --------------------------------------------------------------

    def _next_hidden(self, hidden: list[str]) -> str:
        """The first hidden role after the focused one in roster order, wrapping."""
        if self.focus in self.roster:
            at = self.roster.index(self.focus)
            ordered = self.roster[at + 1:] + self.roster[:at]
            for name in ordered:
                if name in hidden:
                    return name
        return hidden[0]

    def _leaf(self, role: str) -> Leaf:
        for leaf in _leaves(self.root):
            if leaf.role == role:
                return leaf
        raise LayoutError(f"{role} is not on screen")

    def _find(self, role: str) -> tuple[Split | None, int]:
        return self._parent_of(self._leaf(role))

    def _parent_of(self, target: Node) -> tuple[Split | None, int]:
        for node in _nodes(self.root):
            if isinstance(node, Split):
                for index, child in enumerate(node.children):
                    if child is target:
                        return node, index
        return None, -1

    def _replace(self, old: Node, new: Node) -> None:
        parent, index = self._parent_of(old)
        if parent is None:
            self.root = new
        else:
            parent.children[index] = new

    def _remove(self, role: str) -> None:
        leaf = self._leaf(role)
        parent, index = self._parent_of(leaf)
        if parent is None:
            self.root = None
            return
        del parent.children[index]
        del parent.weights[index]
        if len(parent.children) == 1:
            only = parent.children[0]
            grand, at = self._parent_of(parent)
            if isinstance(only, Split) and grand is not None and only.direction == grand.direction:
                # Flatten a same-direction chain, keeping proportions.
                share = grand.weights[at]
                total = sum(only.weights)
                grand.children[at:at + 1] = only.children
                grand.weights[at:at + 1] = [share * w / total for w in only.weights]
            else:
                self._replace(parent, only)


def _node_dict(node: Node | None) -> dict | None:
    if node is None:
        return None
    if isinstance(node, Leaf):
        return {"role": node.role}
    return {"split": node.direction, "children": [_node_dict(c) for c in node.children],
            "weights": list(node.weights)}


def _node_from(data: dict | None) -> Node | None:
    if data is None:
        return None
    if "role" in data:
        if not isinstance(data["role"], str):
            raise ValueError("a tile's role must be a name")
        return Leaf(data["role"])
    children = [_node_from(child) for child in data["children"]]
    weights = [float(w) for w in data["weights"]]
    if data["split"] not in (ROW, COLUMN) or not children or None in children \
            or len(weights) != len(children):
        raise ValueError("a split needs a direction and one weight per child")
    return Split(data["split"], children, weights)


def _leaves(node: Node | None) -> Iterator[Leaf]:
    if node is None:
        return
    if isinstance(node, Leaf):
        yield node
        return
    for child in node.children:
        yield from _leaves(child)


def _nodes(node: Node | None) -> Iterator[Node]:
    if node is None:
        return
    yield node
    if isinstance(node, Split):
        for child in node.children:
            yield from _nodes(child)


def _shift(split: Split, grow: int, shrink: int, step: float) -> bool:
    total = sum(split.weights)
    amount = min(step * total, split.weights[shrink] - 0.05 * total)
    if amount <= 0:
        return False
    split.weights[grow] += amount
    split.weights[shrink] -= amount
    return True


def sizes(total: int, weights: list[float], minimum: int = 1) -> list[int]:
    """Split ``total`` cells by ``weights``; every share gets at least ``minimum``
    when there is room, and the shares always add up to ``total``."""
    count = len(weights)
    if count == 0:
        return []
    if total < minimum * count:
        base = [total // count] * count
        for i in range(total - sum(base)):
            base[i] += 1
        return base
    weight_sum = sum(weights) or float(count)
    exact = [total * w / weight_sum for w in weights]
    out = [int(e) for e in exact]
    # Hand the rounding remainder to the largest fractional parts.
    order = sorted(range(count), key=lambda i: exact[i] - int(exact[i]), reverse=True)
    for i in order[:total - sum(out)]:
        out[i] += 1
    # Then lift any share under the minimum, taking from the largest.
    for i in range(count):
        while out[i] < minimum:
            donor = max(range(count), key=lambda j: out[j])
            if out[donor] <= minimum:
                break
            out[donor] -= 1
            out[i] += 1
    return out


def _place(node: Node, rect: Rect, tiles: dict[str, Rect], bars: list[Rect]) -> None:
    if rect.w <= 0 or rect.h <= 0:
        # A terminal too small for every tile: the ones squeezed to nothing are
        # not drawn (a tile of no rows would put its title below the body).
        return
    if isinstance(node, Leaf):
        tiles[node.role] = rect
        return
    count = len(node.children)
    if node.direction == ROW:
        widths = sizes(max(rect.w - (count - 1), 0), node.weights, MIN_WIDTH)
        x = rect.x
        for index, (child, w) in enumerate(zip(node.children, widths, strict=True)):
            _place(child, Rect(x, rect.y, w, rect.h), tiles, bars)
            x += w
            if index < count - 1 and x < rect.right:
                bars.append(Rect(x, rect.y, 1, rect.h))
                x += 1
    else:
        heights = sizes(rect.h, node.weights, MIN_HEIGHT)
        y = rect.y
        for child, h in zip(node.children, heights, strict=True):
            _place(child, Rect(rect.x, y, rect.w, h), tiles, bars)
            y += h


def _neighbour_key(here: Rect, there: Rect, direction: str) -> tuple[int, int] | None:
    """How good a neighbour ``there`` is in ``direction`` (smaller is better), or None."""
    if direction in ("left", "right"):
        gap = here.x - there.right if direction == "left" else there.x - here.right
        overlap = min(here.bottom, there.bottom) - max(here.y, there.y)
    else:
        gap = here.y - there.bottom if direction == "up" else there.y - here.bottom
        overlap = min(here.right, there.right) - max(here.x, there.x)
    if gap < 0 or overlap <= 0:
        return None
    return gap, -overlap
