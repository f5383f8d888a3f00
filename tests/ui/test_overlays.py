"""Dialogs at any size: a cut is marked, lines below the last row are
announced, every key of the help stands apart from its text."""

from __future__ import annotations

import time

import urwid

from choragos.config.model import Keys
from choragos.ui.keys import Keymap
from choragos.ui.overlays import BoardOverlay, ConfirmOverlay, HelpOverlay


def shown(widget: urwid.Widget, size: tuple[int, int]) -> list[str]:
    return [row.decode("utf-8") for row in widget.render(size, focus=True).text]


def test_a_dialog_shorter_than_its_text_says_more_is_below_until_it_is_not():
    lines = [f"line {n}" for n in range(12)] + ["undo with `choragos rollback pre-rollback-T4`"]
    dialog = ConfirmOverlay("Roll back?", lines, lambda answer: None, "y roll back")
    first = shown(dialog, (60, 10))
    assert first[7].startswith("│" + "↓ more below: ↓ PgDn") and "line 5" in first[6]
    assert "y roll back   n / Esc cancel" in first[8]
    for _ in range(3):
        dialog.keypress((60, 10), "page down")
    last = shown(dialog, (60, 10))
    assert not any("↓ more below: ↓ PgDn" in row for row in last)
    assert "undo with `choragos rollback pre-rollback-T4`" in last[7]


def test_the_board_shows_every_id_whole_and_marks_what_it_cuts():
    tasks = [{"id": f"T{n}", "role": "a-very-long-role-name-of-32-char", "state": "done",
              "label": "write the changelog " * 8, "created": time.time() - 5, "changes": []}
             for n in (999, 1000)]
    text = shown(BoardOverlay(tasks, lambda action, task: None), (90, 12))
    assert text[1].startswith("│ID    ROLE                STATE")
    row = next(line for line in text if "T1000" in line)
    assert row.startswith("│T1000 a-very-long-role-n… done "), row
    assert row.endswith("write the changelog write th…│"), row


def test_every_key_in_the_help_stands_apart_from_its_text():
    text = shown(HelpOverlay(Keymap.from_config(Keys()), lambda: None), (100, 60))
    assert any("C-b PgUp / [  scroll back" in row for row in text)
    assert any("r report   d diff   e edit" in row for row in text)


def test_a_help_text_that_wraps_stays_in_its_column_at_80x24():
    # The deck's dialog at 80 columns is 64 wide: two borders and 62 inside.
    text = shown(HelpOverlay(Keymap.from_config(Keys()), lambda: None), (64, 22))
    split = next(i for i, row in enumerate(text) if row.startswith("│C-b -  "))
    assert text[split + 1].startswith("│" + " " * 14), text[split + 1]
    assert text[split + 1].strip("│ ") == "role", text[split + 1]
    keys = [row[1:15].strip() for row in text[4:18]]
    assert all(key.startswith("C-b") or key == "" for key in keys), keys


def test_the_selected_task_is_one_bar_through_its_state_colour():
    tasks = [{"id": "T1", "role": "coder", "state": "gated", "label": "ship it",
              "created": time.time(), "changes": []}]
    canvas = BoardOverlay(tasks, lambda action, task: None).render((60, 8), focus=True)
    row = next(runs for runs in canvas.content()
               if b"T1" in b"".join(text for _, _, text in runs))
    # Between the dialog's borders; the innermost layer is the row's own.
    inside = {getattr(attr, "layers", (attr,))[0] for attr, _, _ in row[1:-1]}
    assert inside == {"selected"}, row


def test_the_selected_task_is_named_whole_under_a_narrow_board():
    tasks = [{"id": "T7", "role": "release", "state": "gated", "created": time.time(),
              "label": "Tag v1.2.3 and push the tag", "changes": []}]
    text = shown(BoardOverlay(tasks, lambda action, task: None), (60, 16))
    assert any(row.startswith("│T7   release       gated") and "Tag v…" in row for row in text)
    assert "│task    Tag v1.2.3 and push the tag" in "\n".join(text)


def test_the_editors_status_line_marks_a_path_cut_at_a_narrow_screen(tmp_path):
    from choragos.ui.editor import EditorPopup

    path = str(tmp_path / ("a-long-folder-name/" * 4) / "T7.md")
    popup = EditorPopup(["sleep", "30"], path, tmp_path, 50, 14, lambda: None, lambda: None)
    try:
        lines, _ = popup.render(50, 15, 256)
    finally:
        popup.kill()
    status = lines[-1][0].decode("utf-8")
    assert status.startswith(" EDITOR ") and status.endswith("…"), status
