from hypothesis import given
from hypothesis import strategies as st

from choragos.board.tasks import Task
from choragos.roles import briefs


@given(st.text())
def test_one_line_is_inert(text):
    line = briefs.one_line(text)
    assert "\x1b" not in line and "\n" not in line and "\r" not in line
    assert all(ord(c) >= 0x20 and not 0x7f <= ord(c) <= 0x9f for c in line)


def test_one_line_removes_escape_sequences_whole():
    hostile = "fix \x1b[2J\x1b]0;pwned\x07bug\r\nnow; rm -rf / `id` $(id)"
    assert briefs.one_line(hostile) == "fix bug now; rm -rf / `id` $(id)"


def test_task_document_carries_text_and_exact_command():
    task = Task(id="T7", role="coder", text="do `this`; $(that)", brief="/abs/b.md")
    doc = briefs.task_document(task, "Be careful.")
    assert "do `this`; $(that)" in doc
    assert "Read /abs/b.md" in doc
    assert "choragos work-done --id T7 --done" in doc
    assert "Be careful." in doc


def test_report_line():
    line = briefs.report_line("T3", "coder", "Added\nbackoff", "/w/.choragos/reports/T3.md")
    assert line == ("A worker reports: [T3 from coder] Added backoff "
                    "Full report: read /w/.choragos/reports/T3.md")


def test_orchestrator_brief_lists_roster_and_verbs():
    workers = [{"name": "coder", "command": "claude", "model": "opus", "approve": False},
               {"name": "release", "command": "claude", "model": "", "approve": True}]
    doc = briefs.orchestrator_brief("orchestrator", "Plan only.", workers)
    assert "| coder | claude | opus | no |" in doc
    assert "| release | claude | - | yes" in doc
    assert "choragos delegate --to coder --task" in doc
    assert "A worker reports:" in doc


def test_one_line_drops_bidi_controls():
    from choragos.roles.briefs import one_line

    text = "a\u202eb\u202cc \u2066d\u2069 \u200ee\u200f \u061cf \u202ag\u202b"
    assert one_line(text) == "abc d e f g"


def test_a_line_repeated_again_carries_one_mark_naming_the_latest_cause():
    once = briefs.repeated_line("A worker reports: [T1] done", "lead restarted while it was typed")
    twice = briefs.repeated_line(once, "the choragos session restarted")
    assert twice == ("(Repeated after the choragos session restarted; ignore it if you had "
                     "it) A worker reports: [T1] done")
    assert briefs.repeated_line(twice) == twice


def test_a_mark_inside_the_text_is_the_text_s_own():
    text = "quote: (Repeated after x; ignore it if you had it) y"
    assert briefs.repeated_line(text, "z").endswith(text)
