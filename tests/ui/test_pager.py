"""The pager builds only the lines it shows, and scrolls like any list."""

from __future__ import annotations

from ui.overlays import LazyLines, PagerOverlay

SIZE = (100, 30)


def shown(pager: PagerOverlay) -> list[str]:
    rows = [row.decode().strip("│ ") for row in pager.render(SIZE, focus=True).text]
    return [r for r in rows if r.startswith("line ")]


def test_a_long_diff_opens_with_only_its_first_screen_built():
    text = "\n".join(f"line {n}" for n in range(100_000))
    pager = PagerOverlay("diff", text, lambda: None)
    walker = pager.listbox.body
    assert isinstance(walker, LazyLines) and len(walker) == 100_000
    first = shown(pager)
    assert first[0] == "line 0" and len(first) > 20
    assert walker.built < 100
    pager.keypress(SIZE, "G")
    assert shown(pager)[-1] == "line 99999"
    pager.keypress(SIZE, "page up")
    assert shown(pager)[-1] < "line 99999"
    pager.keypress(SIZE, "g")
    assert shown(pager) == first
    assert walker.built < 200


def test_lines_are_shown_inert_and_an_empty_text_says_so():
    pager = PagerOverlay("t", "line \x1b[31mred\x07\nline 2\tthen \u202eright", lambda: None)
    # A tab is laid out as spaces (the core's rule would print it as \t).
    assert shown(pager) == ["line \\x1b[31mred\\x07", "line 2    then \\u202eright"]
    empty = PagerOverlay("t", "", lambda: None)
    assert "(empty)" in b"".join(empty.render(SIZE, focus=True).text).decode()
