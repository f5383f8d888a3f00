"""A role's transcript keeps its file open, and still never writes through
a link planted at its path nor into a file that is no longer there."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from choragos.terminal import transcript as tr
from choragos.terminal.emulator import GAP_MARKER
from choragos.terminal.transcript import Transcript, logical_lines
from choragos.terminal.vtcells import ascii_lines


@pytest.fixture
def logs(tmp_path):
    path = tmp_path / ".choragos" / "logs"
    path.mkdir(parents=True)
    return path


def _recheck_now(monkeypatch) -> None:
    monkeypatch.setattr(tr, "RECHECK", 0.0)


def test_a_flood_of_appends_opens_the_file_once(logs):
    t = Transcript(logs / "coder.log")
    for i in range(500):
        t.append_lines([f"line {i}"])
    assert t.opened == 1
    assert (logs / "coder.log").read_text().splitlines()[-1] == "line 499"
    assert os.stat(logs / "coder.log").st_mode & 0o777 == 0o600


def test_a_deleted_transcript_is_made_again(logs, monkeypatch):
    t = Transcript(logs / "coder.log")
    t.append_lines(["before"])
    (logs / "coder.log").unlink()
    _recheck_now(monkeypatch)
    t.append_lines(["after"])
    assert (logs / "coder.log").read_text() == "after\n" and t.opened == 2


def test_a_link_planted_at_the_path_is_not_written_through(logs, tmp_path, monkeypatch):
    victim = tmp_path / "victim.bashrc"
    victim.write_text("export SAFE=1\n")
    t = Transcript(logs / "coder.log")
    t.append_lines(["first"])
    (logs / "coder.log").unlink()
    (logs / "coder.log").symlink_to(victim)
    t.append_lines(["before the check"])  # still the file it opened
    _recheck_now(monkeypatch)
    t.append_lines(["after the check"])  # refused: the path is a link now
    assert victim.read_text() == "export SAFE=1\n"
    assert t.error is not None and "link" in str(t.error)


def test_a_second_name_for_the_file_makes_it_opened_afresh(logs, tmp_path, monkeypatch):
    t = Transcript(logs / "coder.log")
    t.append_lines(["one"])
    os.link(logs / "coder.log", tmp_path / "elsewhere")
    _recheck_now(monkeypatch)
    t.append_lines(["two"])  # the path now has two names: refused, not written
    assert (tmp_path / "elsewhere").read_text() == "one\n"
    assert t.error is not None and "hard links" in str(t.error)


def test_a_flooding_transcript_rotates_and_keeps_the_newest_lines(logs):
    t = Transcript(logs / "coder.log", max_bytes=1000)
    for i in range(400):
        t.append_lines([f"line {i:04d} " + "x" * 40])  # 51 bytes a line
    names = sorted(p.name for p in logs.iterdir())
    assert names == ["coder.log", "coder.log.1", "coder.log.2", "coder.log.3"]
    kept = [line for name in ("coder.log.3", "coder.log.2", "coder.log.1", "coder.log")
            for line in (logs / name).read_text().splitlines()]
    assert kept[-1].startswith("line 0399")  # the newest, in order, none twice
    numbers = [int(line.split()[1]) for line in kept]
    assert numbers == list(range(numbers[0], 400)) and len(numbers) == 60  # 3 full files
    assert all((logs / name).stat().st_size <= 1000 + 51 for name in names)
    assert all(os.stat(logs / name).st_mode & 0o777 == 0o600 for name in names)
    assert t.error is None


def test_a_transcript_carries_on_from_its_size_after_a_restart(logs):
    (logs / "coder.log").write_bytes(b"y" * 990)
    os.chmod(logs / "coder.log", 0o600)
    t = Transcript(logs / "coder.log", max_bytes=1000)
    t.append_lines(["the role's first line after its restart"])
    assert (logs / "coder.log.1").read_bytes().endswith(b"after its restart\n")
    t.append_lines(["next"])
    assert (logs / "coder.log").read_text() == "next\n"


def test_rows_the_terminal_wrapped_are_joined_back_into_their_line() -> None:
    rows = ["the quick brown fox jum", "ped over the lazy dog", "short", "exactly ten",
            "0123456789", "abc"]
    lines, carry = logical_lines(rows, 10)
    # only a row filling the width exactly continues on the next one
    assert lines == ["the quick brown fox jum", "ped over the lazy dog", "short",
                     "exactly ten", "0123456789abc"]
    assert carry == ""
    lines, carry = logical_lines(["abcde fghi", "jk lmnopqr"], 10)
    assert (lines, carry) == ([], "abcde fghijk lmnopqr")  # waits for the row that ends it
    lines, carry = logical_lines(["s", GAP_MARKER], 10, carry)
    assert (lines, carry) == (["abcde fghijk lmnopqrs", GAP_MARKER], "")


def test_frames_and_gaps_are_never_joined() -> None:
    frame = ["╭" + "─" * 8 + "╮", "│ > hi   │", "╰" + "─" * 8 + "╯"]
    assert logical_lines(frame, 10) == (frame, "")
    assert logical_lines(["x" * 10, "│ framed │"], 10) == (["x" * 10, "│ framed │"], "")
    assert logical_lines(["x" * 10, GAP_MARKER], 10) == (["x" * 10, GAP_MARKER], "")
    assert logical_lines(["-" * 10, "after a rule"], 10) == (["-" * 10, "after a rule"], "")
    # wide characters count two cells
    assert logical_lines(["漢字漢字漢", "tail"], 10) == (["漢字漢字漢tail"], "")


def test_rows_of_one_cell_characters_are_measured_without_a_width_lookup(monkeypatch) -> None:
    # Every row a flooding pane scrolls off comes here: a width looked up per
    # character in Python cost the session several times the flood's parsing.
    looked = []
    width_of = tr.wcwidth
    monkeypatch.setattr(tr, "wcwidth", lambda char: looked.append(char) or width_of(char))
    rows = [f"\x20[{i:08d}] compiling module_{i}.py ... ok {'.' * (i % 60)}"[:40]
            for i in range(2000)]
    rows += ["end", "✓ passed: " + "é" * 30, "next"]
    lines, carry = logical_lines(rows, 40)
    assert looked == []
    assert lines[-1] == "✓ passed: " + "é" * 30 + "next" and carry == ""
    # Combining accents take no cell: such a row is measured character by character.
    accented = "e\u0301" * 5 + "x" * 5
    assert logical_lines([accented, "y"], 10) == ([accented + "y"], "")
    assert looked


def test_a_wrapped_line_lands_whole_in_the_file(tmp_path) -> None:
    t = Transcript(tmp_path / "role.log")
    t.append_lines(["a long line that the termi", "nal wrapped"], 26)
    t.flush_screen(["the screen's last row wraps", "its end", ""], 27)
    t.close()
    assert (tmp_path / "role.log").read_text().splitlines() == [
        "a long line that the terminal wrapped",
        "the screen's last row wrapsits end"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.text(" abx-.", max_size=12), st.sampled_from(["-" * 6, "x" * 6])),
                max_size=30),
       st.integers(1, 8), st.text("ab", max_size=7))
def test_ascii_rows_are_joined_as_the_row_at_a_time_walk_joins_them(
        rows: list[str], width: int, carry: str) -> None:
    """A flood's rows (printable ASCII) are joined in bulk: as the walk over
    every row joins them, carry and rules included."""
    stripped = [row.rstrip() for row in rows]
    assert ascii_lines(stripped, width, carry) == tr._any_lines(stripped, width, carry)
    assert logical_lines(rows, width, carry) == tr._any_lines(stripped, width, carry)


def test_a_flood_s_rows_are_walked_in_python_only_where_they_fill_the_width(
        monkeypatch) -> None:
    # A narrow pane's flood scrolls rows of which a third fill its width (the
    # lines it wrapped): the others are taken in C, not walked one by one.
    walked = []
    monkeypatch.setattr(tr, "_fills", lambda row, width: walked.append(row) or False)
    rows = [f"[{i:08d}]_compiling_module_{i % 997}.py_..._ok_{'.' * (i % 60)}"
            for i in range(300)]
    rows = [row for row in rows if len(row) % 40]  # a row as wide as the pane would join
    wrapped = [row[j:j + 40] for row in rows for j in range(0, len(row), 40)]
    lines, carry = logical_lines(wrapped, 40)
    assert lines + ([carry] if carry else []) == rows
    assert walked == []
