"""Dialogs drawn over the deck: help, task board, gate, pager, confirmation,
search, and what the session said as it started.

Each is an urwid widget that handles its own keys and reports what the user
chose through a callback; none of them talks to the session itself.  Text
that came from agents (task labels, file contents) is made inert first, so
it can never drive the operator's terminal.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import urwid

from choragos.durations import format_duration
from choragos.gitstore.changes import files_cell
from choragos.ui.keys import ACTION_HELP, Keymap, display_name
from choragos.ui.pane import clipped, fitted, inert, text_width

HINT_GAP = "   "  # between the key groups of a hint line ("y approve   n reject")


class KeyHint(urwid.Text):
    """A dialog's key line: on as many rows as it needs, broken only between
    key groups, so no key is cut off at the dialog's edge."""

    def __init__(self, hint: str) -> None:
        self.groups = hint.split(HINT_GAP)
        self._fitted_to: int | None = None
        super().__init__(hint, wrap="ellipsis")

    def _fit(self, cols: int) -> None:
        if cols != self._fitted_to:
            self._fitted_to = cols
            self.set_text("\n".join(fitted(self.groups, cols, HINT_GAP)))

    def rows(self, size: tuple[int], focus: bool = False) -> int:
        self._fit(size[0])
        return super().rows(size, focus)

    def render(self, size: tuple[int], focus: bool = False) -> urwid.Canvas:
        self._fit(size[0])
        return super().render(size, focus)


class Dialog(urwid.WidgetWrap):
    """A bordered box with a title and a key hint line."""

    def __init__(self, title: str, body: urwid.Widget, hint: str) -> None:
        self.body = body
        frame = urwid.Frame(body, footer=urwid.AttrMap(KeyHint(hint), "dim"))
        self.box = urwid.LineBox(urwid.AttrMap(frame, "overlay"), title=f" {title} ",
                                 title_attr="overlay title")
        super().__init__(urwid.AttrMap(self.box, "overlay border"))

    def selectable(self) -> bool:
        return True


class MoreList(urwid.ListBox):
    """A dialog's lines: while some are below its last row, that row says so
    and how to reach them, so a dialog shorter than its text (a small
    terminal) hides none of it without a sign."""

    MORE = "↓ more below: ↓ PgDn"

    def render(self, size: tuple[int, int], focus: bool = False) -> urwid.Canvas:
        canvas = super().render(size, focus)
        cols, rows = size
        if rows < 2 or "bottom" in self.ends_visible(size, focus):
            return canvas
        mark = urwid.Text(("overlay title", self.MORE), wrap="ellipsis").render((cols,))
        above = urwid.CompositeCanvas(canvas)
        above.trim_end(1)
        return urwid.CanvasCombine([(above, None, False), (mark, None, False)])


def _lines(texts: Sequence[Any]) -> urwid.ListBox:
    return MoreList(urwid.SimpleFocusListWalker(
        [t if isinstance(t, urwid.Widget) else urwid.Text(t) for t in texts]))


class LazyLines(urwid.ListWalker):
    """A pager's lines, each made a widget only when the list box reaches it:
    a diff of a hundred thousand lines opens at once instead of stalling the
    deck while every line is built."""

    _KEEP = 4096  # widgets kept for reuse; well past any screen

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.focus = 0
        self._made: dict[int, urwid.Text] = {}

    def __len__(self) -> int:
        return len(self.lines)

    @property
    def built(self) -> int:
        """How many lines are widgets now."""
        return len(self._made)

    def __getitem__(self, position: int) -> urwid.Text:
        if not 0 <= position < len(self.lines):
            raise IndexError(position)
        made = self._made.get(position)
        if made is None:
            if len(self._made) >= self._KEEP:
                self._made.clear()
            made = self._made[position] = urwid.Text(inert(self.lines[position]))
        return made

    def next_position(self, position: int) -> int:
        if position + 1 >= len(self.lines):
            raise IndexError(position)
        return position + 1

    def prev_position(self, position: int) -> int:
        if position <= 0:
            raise IndexError(position)
        return position - 1

    def set_focus(self, position: int) -> None:
        self[position]  # an out-of-range position raises, as a list's would
        self.focus = position
        self._modified()

    def positions(self, reverse: bool = False) -> range:
        return range(len(self.lines) - 1, -1, -1) if reverse else range(len(self.lines))


class _Scrolling(Dialog):
    """A dialog whose body is a list the user scrolls with the usual keys."""

    CLOSE = ("esc", "q")

    def __init__(self, title: str, lines: Sequence[Any] | urwid.ListBox, hint: str,
                 on_close: Callable[[], None]) -> None:
        self.listbox = lines if isinstance(lines, urwid.ListBox) else _lines(lines or [""])
        self.on_close = on_close
        super().__init__(title, self.listbox, hint)

    def keypress(self, size: tuple[int, int], key: str) -> str | None:
        if key in self.CLOSE:
            self.on_close()
            return None
        key = {"j": "down", "k": "up", " ": "page down", "b": "page up", "g": "home",
               "G": "end"}.get(key, key)
        if key in ("home", "end"):
            walker = self.listbox.body
            if len(walker):
                self.listbox.focus_position = 0 if key == "home" else len(walker) - 1
            return None
        return super().keypress(size, key)


class HelpOverlay(_Scrolling):
    def __init__(self, keymap: Keymap, on_close: Callable[[], None]) -> None:
        prefix = display_name(keymap.prefix_spelling)
        rows: list[Any] = [("overlay title", f"Everything starts with the prefix, {prefix}; "
                                             "other keys go to the focused agent."), ""]
        extra = [
            (f"{prefix} 1-9", "focus role N (a hidden role takes the focused pane)"),
            (f"{prefix} {prefix}", f"send {prefix} itself to the agent"),
            (f"{prefix} PgUp / [", "scroll back through the focused pane's history"),
            (f"{prefix} Esc", "cancel the prefix"),
        ]
        bindings = [(keymap.describe(a), text) for a, text in ACTION_HELP.items()] + extra
        width = max(len(key) for key, _ in bindings) + 2  # every key apart from its text
        # Two columns, so a text that wraps on a narrow screen stays under its
        # own column and every key stands alone at the left edge.
        rows += [urwid.Columns([(width, urwid.Text(("accent", key))), urwid.Text(text)])
                 for key, text in bindings]
        rows += ["", ("overlay title", "Scrollback (after PgUp or /)"),
                 "PgUp PgDn ↑ ↓ wheel  move    /  search    n / N  older / newer match",
                 "g / G  oldest / newest    q or Esc  back to the live screen", "",
                 ("overlay title", "Dialogs"),
                 "gate:  y approve   n reject   v view the task   e edit it   Esc later",
                 "board: ↑ ↓ select   Enter view   r report   d diff   e edit   u roll back   "
                 "y / n decide a gate   h write the session's HTML page",
                 "start notices (what the start said): ↑ ↓ scroll   Enter / Esc close",
                 "", "The mouse focuses panes and scrolls them (unless [ui] mouse = false)."]
        super().__init__("Keys", rows, "↑ ↓ scroll   q / Esc close", on_close)

    CLOSE = ("esc", "q", "?")


class PagerOverlay(_Scrolling):
    def __init__(self, title: str, text: str, on_close: Callable[[], None]) -> None:
        lines = MoreList(LazyLines(text.splitlines() or ["(empty)"]))
        super().__init__(inert(title), lines, "↑ ↓ PgUp PgDn g G scroll   q / Esc close",
                         on_close)


class NoticeOverlay(_Scrolling):
    """What the session said as it started (a state kept aside, a config
    warning), each notice a paragraph wrapped to the dialog's width."""

    CLOSE = ("esc", "q", "enter")

    def __init__(self, notices: Sequence[str], on_close: Callable[[], None]) -> None:
        rows: list[Any] = [("overlay title", "This session said as it started:"), ""]
        for notice in notices:
            rows += [inert(notice), ""]
        rows.append(("dim", "Also on the terminal once the deck leaves it, and in "
                            ".choragos/logs/server.log."))
        super().__init__("Start notices", rows, "↑ ↓ PgDn scroll   Enter / Esc close", on_close)


class ConfirmOverlay(Dialog):
    """A question with y / n; ``on_answer(bool)`` is called once."""

    def __init__(self, title: str, lines: Sequence[Any], on_answer: Callable[[bool], None],
                 yes_hint: str = "y confirm", allow_yes: bool = True) -> None:
        self.on_answer = on_answer
        self.allow_yes = allow_yes
        hint = f"{yes_hint}   n / Esc cancel" if allow_yes else "Esc close"
        super().__init__(inert(title), _lines(lines or [""]), hint)

    def keypress(self, size: tuple[int, int], key: str) -> str | None:
        if key in ("y", "Y") and self.allow_yes:
            self.on_answer(True)
        elif key in ("n", "N", "esc", "q"):
            self.on_answer(False)
        else:
            return super().keypress(size, key)
        return None


class PromptOverlay(Dialog):
    """One line of text; Enter submits, Esc cancels."""

    def __init__(self, title: str, caption: str, on_done: Callable[[str | None], None],
                 text: str = "") -> None:
        self.edit = urwid.Edit(caption, text)
        self.on_done = on_done
        super().__init__(inert(title), urwid.Filler(self.edit, "top"),
                         "Enter search   Esc cancel")

    def keypress(self, size: tuple[int, int], key: str) -> str | None:
        if key == "enter":
            self.on_done(self.edit.edit_text)
            return None
        if key == "esc":
            self.on_done(None)
            return None
        return super().keypress(size, key)

    def insert(self, text: str) -> None:
        self.edit.insert_text(text)


class GateOverlay(Dialog):
    """The oldest delegation waiting for approval."""

    def __init__(self, gate: dict, position: int, total: int, preview: str,
                 on_key: Callable[[str], None]) -> None:
        self.gate = gate
        self.on_key = on_key
        self.place = (position, total)
        self.heading = urwid.Text("")
        self.refresh()
        rows: list[Any] = [
            self.heading,
            "",
            [("dim", "task   "), inert(gate.get("label", ""))],
        ]
        if gate.get("brief"):
            rows.append([("dim", "brief  "), inert(gate["brief"])])
        merge = gate.get("kind") == "merge"
        rows += ["", ("dim", "── the diff to merge ──" if merge
                      else "── the task as the worker will read it ──")]
        rows += [inert(line) for line in preview.splitlines()[:40]]
        super().__init__("Merge gate" if merge else "Gate", _lines(rows),
                         "y merge   n keep the branch (the orchestrator is told)   v whole diff"
                         "   Esc later" if merge else
                         "y approve   n reject (the orchestrator is told)   v view   "
                         "e edit   Esc later")

    def refresh(self) -> None:
        """Redraw the heading, so the waiting time keeps counting while it is open."""
        gate = self.gate
        age = format_duration(int(time.time() - gate["created"])) if gate.get("created") else "-"
        position, total = self.place
        self.heading.set_text([("waiting bold", "Approval needed: "),
                               ("bold", f"{inert(gate['id'])} for {inert(gate['role'])}"),
                               f"   (waiting {age}; {position} of {total})"])

    def keypress(self, size: tuple[int, int], key: str) -> str | None:
        if key in ("y", "n", "v", "e", "esc"):
            self.on_key(key)
            return None
        return super().keypress(size, key)


_BOARD_COLUMNS = (("ID", 5), ("ROLE", 14), ("STATE", 10), ("AGE", 7), ("TOOK", 7),
                  ("CK", 3), ("FILES", 6))  # each column's least width
_ROLE_WIDEST = 20  # past this the role column cuts a name (with "…"), to leave the task room


def board_widths(tasks: list[dict]) -> tuple[int, ...]:
    """The board's column widths: every id whole (T1000 is not T100), every
    role name whole up to a limit."""
    widths = [width for _, width in _BOARD_COLUMNS]
    widths[0] = max([widths[0], *(text_width(inert(t["id"])) + 1 for t in tasks)])
    widths[1] = max(widths[1], min(_ROLE_WIDEST, max(
        (text_width(inert(t["role"])) + 1 for t in tasks), default=0)))
    return tuple(widths)


def board_header(widths: tuple[int, ...]) -> str:
    return "".join(name.ljust(width) for (name, _), width in zip(_BOARD_COLUMNS, widths,
                                                                 strict=True)) + "TASK"


def _cell(text: str, width: int) -> str:
    """``text`` in a column ``width`` wide, a column apart from the next."""
    shown = clipped(text, width - 1)
    return shown + " " * (width - text_width(shown))


SHOWN_CHANGES = 12  # file entries the board's detail line names; it counts the rest


def changed_files(task: dict) -> str:
    """The detail line's ``changed``: the files by path; past a few, their
    count and lines first (the line is cut at the dialog's edge), then the
    first few and how many more."""
    def one(c: dict) -> str:
        counts = "binary" if c.get("added") is None else f"+{c['added']} -{c['deleted']}"
        return f"{c['path']} ({c['kind']}, {counts})"
    shown = task["changes"][:SHOWN_CHANGES]
    line = ", ".join(one(c) for c in shown)
    counted = task.get("changed")  # absent in a journal from before totals: the list was whole
    if not isinstance(counted, dict) or counted["files"] <= len(shown):
        return line
    return (f"{counted['files']} files (+{counted['added']} -{counted['deleted']}): {line} "
            f"and {counted['files'] - len(shown)} more")


class _TaskRow(urwid.WidgetWrap):
    def __init__(self, task: dict, now: float, widths: tuple[int, ...]) -> None:
        self.task = task
        state = task.get("state", "")
        style = {"done": "working", "gated": "waiting", "failed": "failed",
                 "rejected": "dim", "timed-out": "failed", "blocked": "waiting",
                 "delivered": "accent"}.get(state)
        took = task.get("duration")
        cells = [inert(task["id"]), inert(task["role"]), state,
                 format_duration(int(now - task["created"])) if task.get("created") else "-",
                 format_duration(int(took)) if took is not None else "-",
                 "✓" if task.get("checkpoint") else "·", files_cell(task)]
        markup: list[Any] = []
        for width, cell in zip(widths, cells, strict=True):
            markup.append((style if cell == state else None, _cell(cell, width)))
        markup.append(inert(task.get("label", "")))
        text = urwid.Text(markup, wrap="ellipsis")
        # The selection bar runs whole through the state's colour too.
        super().__init__(urwid.AttrMap(text, None, focus_map={None: "selected",
                                                              style: "selected"}))

    def selectable(self) -> bool:
        return True

    def keypress(self, size: tuple[int], key: str) -> str | None:
        return key


class BoardOverlay(Dialog):
    """Every task; the chosen action goes to ``on_action(action, task)``."""

    def __init__(self, tasks: list[dict], on_action: Callable[[str, dict | None], None],
                 selected: str | None = None) -> None:
        self.on_action = on_action
        now = time.time()
        self.count = len(tasks)
        widths = board_widths(tasks)
        self.header = urwid.Text(board_header(widths), wrap="clip")
        self.walker = urwid.SimpleFocusListWalker([_TaskRow(t, now, widths) for t in tasks])
        self.listbox = urwid.ListBox(self.walker)
        self.detail = urwid.Text("", wrap="ellipsis")
        if not tasks:
            body: urwid.Widget = urwid.Filler(urwid.Text(
                "No tasks yet. The orchestrator hands them out with `choragos delegate`.",
                align="center"))
        else:
            ids = [t["id"] for t in tasks]
            self.listbox.focus_position = ids.index(selected) if selected in ids else len(tasks) - 1
            body = urwid.Frame(self.listbox, header=urwid.AttrMap(self.header, "dim"),
                               footer=self.detail)
            self._show_detail()
        super().__init__(f"Task board ({len(tasks)})", body,
                         "Enter view   r report   d diff   e edit   u roll back   y / n gate   "
                         "c cancel   h HTML page   Esc close")

    def update(self, tasks: list[dict]) -> bool:
        """Show ``tasks`` in place (states, ages), keeping the selection; False
        when the list grew from or to empty and the board must be rebuilt."""
        if not tasks or not self.count:
            return False
        chosen = (self.current() or {}).get("id")
        now = time.time()
        widths = board_widths(tasks)
        self.header.set_text(board_header(widths))
        self.walker[:] = [_TaskRow(t, now, widths) for t in tasks]
        ids = [t["id"] for t in tasks]
        self.listbox.focus_position = ids.index(chosen) if chosen in ids else len(tasks) - 1
        self.count = len(tasks)
        self.box.set_title(f" Task board ({len(tasks)}) ")
        self._show_detail()
        return True

    def current(self) -> dict | None:
        if not len(self.walker):
            return None
        widget = self.listbox.focus
        return widget.task if widget is not None else None

    def _show_detail(self) -> None:
        task = self.current()
        if task is None:
            return
        # The task again, as wide as the dialog: its column is narrow on a small screen.
        lines = [[("dim", "task    "), inert(task.get("label", ""))],
                 [("dim", "brief   "), inert(task.get("brief") or "-  (the task file: "
                                            f".choragos/tasks/{task['id']}.md)")],
                 [("dim", "report  "), inert(task.get("report") or "-")]]
        if task.get("note"):
            lines.append([("dim", "note    "), inert(task["note"])])
        if task.get("checks"):
            lines.append([("dim", "checks  "), inert(task["checks"])])
        if task.get("changes"):
            lines.append([("dim", "changed "), inert(changed_files(task))])
        self.detail.set_text([part for line in lines for part in (*line, "\n")][:-1])

    def keypress(self, size: tuple[int, int], key: str) -> str | None:
        actions = {"enter": "view", "v": "view", "r": "report", "e": "edit", "u": "rollback",
                   "d": "diff", "c": "cancel",
                   "y": "approve", "n": "reject", "h": "page", "esc": "close", "q": "close"}
        if key in actions:
            self.on_action(actions[key], self.current())
            return None
        key = {"j": "down", "k": "up"}.get(key, key)
        result = super().keypress(size, key)
        self._show_detail()
        return result
