"""The tiling tree: splits, closes, focus moves, zoom, resize, geometry."""

from __future__ import annotations

import json

import pytest

from choragos.ui.layout import COLUMN, ROW, Layout, LayoutError, Rect, sizes

TEAM = ["orchestrator", "coder", "reviewer", "auditor", "release"]


def covered(layout: Layout, width: int, height: int) -> None:
    """Tiles and bars cover the body exactly once, with nothing outside it."""
    geometry = layout.geometry(width, height)
    cells: dict[tuple[int, int], str] = {}
    for name, rect in [*geometry.tiles.items(), *(("|", b) for b in geometry.bars)]:
        for x in range(rect.x, rect.right):
            for y in range(rect.y, rect.bottom):
                assert (x, y) not in cells, f"{name} overlaps {cells[(x, y)]} at {(x, y)}"
                assert 0 <= x < width and 0 <= y < height
                cells[(x, y)] = name
    assert len(cells) == width * height


def test_main_vertical_shows_the_start_role_left_and_stacks_the_rest():
    layout = Layout.main_vertical(TEAM, "orchestrator")
    assert layout.shown() == TEAM and layout.hidden() == [] and layout.focus == "orchestrator"
    tiles = layout.geometry(126, 48).tiles
    assert tiles["orchestrator"] == Rect(0, 0, 63, 48)
    assert [tiles[n].x for n in TEAM[1:]] == [64] * 4  # after a one-column bar
    assert [tiles[n].h for n in TEAM[1:]] == [12] * 4
    covered(layout, 126, 48)


def test_roles_beyond_the_stack_start_hidden():
    layout = Layout.main_vertical(TEAM, "coder", max_stacked=2)
    assert layout.shown() == ["coder", "orchestrator", "reviewer"]
    assert layout.hidden() == ["auditor", "release"]


def test_split_shows_the_next_hidden_role_and_never_invents_one():
    layout = Layout(TEAM, None)
    layout.split(ROW, "coder")
    assert layout.shown() == ["coder"]
    assert layout.split(ROW) == "reviewer"  # next after the focused role, in roster order
    assert layout.shown() == ["coder", "reviewer"] and layout.focus == "reviewer"
    assert layout.split(COLUMN) == "auditor"
    assert layout.split(COLUMN) == "release"
    assert layout.split(COLUMN) == "orchestrator"  # wraps around
    with pytest.raises(LayoutError, match="already on screen"):
        layout.split(ROW)
    covered(layout, 100, 40)


def test_split_in_the_same_direction_halves_the_tile():
    layout = Layout(TEAM, None)
    layout.split(ROW, "orchestrator")
    layout.split(ROW)   # orchestrator | coder
    layout.focus = "orchestrator"
    layout.split(ROW)   # orchestrator | reviewer | coder
    tiles = layout.geometry(101, 10).tiles
    assert tiles["orchestrator"].w == tiles["reviewer"].w == 25
    assert tiles["coder"].w == 49
    assert layout.shown() == ["orchestrator", "reviewer", "coder"]


def test_close_hides_the_role_and_keeps_the_rest_laid_out():
    layout = Layout.main_vertical(TEAM, "orchestrator")
    layout.focus = "reviewer"
    assert layout.close() == "reviewer"
    assert "reviewer" in layout.hidden() and "reviewer" in layout.roster
    assert layout.focus == "auditor"
    covered(layout, 90, 30)
    for name in ["coder", "auditor", "release"]:
        layout.close(name)
    assert layout.shown() == ["orchestrator"]
    assert layout.geometry(90, 30).tiles["orchestrator"] == Rect(0, 0, 90, 30)
    with pytest.raises(LayoutError, match="last pane"):
        layout.close()


def test_closing_collapses_nested_splits_of_the_same_direction():
    layout = Layout(["a", "b", "c"], None)
    layout.split(ROW, "a")
    layout.split(ROW)           # a | b
    layout.split(COLUMN)        # a | (b / c)
    layout.focus = "b"
    layout.close()
    assert layout.shown() == ["a", "c"]
    assert layout.root.direction == ROW and len(layout.root.children) == 2


def test_show_puts_a_hidden_role_into_the_focused_tile():
    layout = Layout.main_vertical(TEAM, "orchestrator", max_stacked=1)
    assert layout.hidden() == ["reviewer", "auditor", "release"]
    layout.focus = "coder"
    layout.show("release")
    assert layout.shown() == ["orchestrator", "release"] and layout.focus == "release"
    assert layout.focus_index(1) == "orchestrator"
    with pytest.raises(LayoutError):
        layout.focus_index(9)


def test_directional_focus_follows_the_geometry():
    layout = Layout.main_vertical(TEAM, "orchestrator")
    assert layout.move_focus("right", 100, 40) == "coder"  # the most overlapping first
    assert layout.move_focus("down", 100, 40) == "reviewer"
    assert layout.move_focus("down", 100, 40) == "auditor"
    assert layout.move_focus("left", 100, 40) == "orchestrator"
    assert layout.move_focus("left", 100, 40) is None
    assert layout.focus == "orchestrator"


def test_cycle_goes_round_in_tree_order():
    layout = Layout.main_vertical(TEAM[:3], "orchestrator")
    assert [layout.cycle(1) for _ in range(3)] == ["coder", "reviewer", "orchestrator"]
    assert layout.cycle(-1) == "reviewer"


def test_zoom_shows_only_the_focused_tile_and_follows_focus():
    layout = Layout.main_vertical(TEAM, "orchestrator")
    assert layout.toggle_zoom()
    assert layout.geometry(80, 24).tiles == {"orchestrator": Rect(0, 0, 80, 24)}
    assert layout.visible() == ["orchestrator"]
    layout.move_focus("right", 80, 24)
    assert layout.visible() == ["coder"]
    assert not layout.toggle_zoom()
    assert len(layout.geometry(80, 24).tiles) == 5


def test_zoom_needs_two_panes():
    layout = Layout(["a"], None)
    layout.split(ROW, "a")
    assert not layout.toggle_zoom()


def test_resize_moves_the_border_on_that_side():
    layout = Layout.main_vertical(TEAM[:3], "orchestrator")
    before = layout.geometry(101, 40).tiles["orchestrator"].w
    assert layout.resize("right")
    assert layout.geometry(101, 40).tiles["orchestrator"].w > before
    assert not layout.resize("left")  # no border left of the leftmost tile
    layout.focus = "reviewer"
    h = layout.geometry(101, 40).tiles["reviewer"].h
    assert layout.resize("up")
    assert layout.geometry(101, 40).tiles["reviewer"].h > h
    covered(layout, 101, 40)


def test_resize_never_squeezes_a_tile_away():
    layout = Layout.main_vertical(TEAM[:2], "orchestrator")
    for _ in range(100):
        layout.resize("right")
    tiles = layout.geometry(100, 20).tiles
    assert tiles["coder"].w >= 1
    covered(layout, 100, 20)


def test_roster_changes_follow_a_reload():
    layout = Layout.main_vertical(TEAM, "orchestrator")
    layout.focus = "release"
    layout.set_roster(["orchestrator", "coder", "tester"])
    assert layout.shown() == ["orchestrator", "coder"]
    assert layout.hidden() == ["tester"]
    assert layout.focus == "orchestrator"


@pytest.mark.parametrize(("total", "weights", "minimum"), [
    (100, [1, 1, 1], 1), (7, [1, 1, 1], 3), (2, [1, 1, 1], 1), (50, [5, 0.1, 1], 8),
    (0, [1], 1),
])
def test_sizes_always_add_up(total, weights, minimum):
    got = sizes(total, weights, minimum)
    assert sum(got) == total and len(got) == len(weights)
    if total >= minimum * len(weights):
        assert min(got) >= minimum


@pytest.mark.parametrize(("width", "height"), [(20, 6), (160, 49), (61, 13), (9, 3)])
def test_every_size_is_covered(width, height):
    layout = Layout.main_vertical(TEAM, "orchestrator")
    layout.focus = "coder"
    layout.split(ROW, None) if layout.hidden() else None
    covered(layout, width, height)


def test_a_saved_layout_round_trips_and_fits_a_changed_roster():
    layout = Layout.main_vertical(["lead", "coder", "tester"], "lead")
    layout.close("coder")
    layout.focus = "tester"
    layout.toggle_zoom()
    saved = json.loads(json.dumps(layout.to_dict()))
    again = Layout.from_dict(saved, ["lead", "coder", "tester"])
    assert again.to_dict() == layout.to_dict()
    assert again.hidden() == ["coder"] and again.zoomed
    smaller = Layout.from_dict(saved, ["lead", "coder"])
    assert smaller.shown() == ["lead"] and smaller.focus == "lead" and not smaller.zoomed


@pytest.mark.parametrize("bad", [
    {"root": {"split": "diagonal", "children": [{"role": "a"}], "weights": [1]}},
    {"root": {"split": "row", "children": [{"role": "a"}], "weights": []}},
    {"root": {"split": "row", "children": [{"role": "a"}, {"role": "a"}],
              "weights": [1, 1]}},
    {"root": {"role": 3}},
    {},
])
def test_a_saved_layout_that_cannot_be_read_is_refused(bad):
    with pytest.raises(LayoutError):
        Layout.from_dict(bad, ["a", "b"])


@pytest.mark.parametrize("direction", [ROW, COLUMN])
def test_a_terminal_too_small_for_every_tile_draws_only_tiles_inside_it(direction):
    layout = Layout.main_vertical(TEAM, "orchestrator")
    layout.focus = "coder"
    while layout.hidden():
        layout.split(direction)
    for width in range(1, 30):
        for height in range(1, 9):
            geometry = layout.geometry(width, height)
            for rect in [*geometry.tiles.values(), *geometry.bars]:
                assert rect.w > 0 and rect.h > 0, (width, height, rect)
                assert rect.right <= width and rect.bottom <= height, (width, height, rect)
            covered(layout, width, height)
