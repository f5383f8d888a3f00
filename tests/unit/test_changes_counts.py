"""A task's changed files: the kept entries, the totals, and how they are shown."""

from __future__ import annotations

import json

from choragos.cli import report as cli
from choragos.gitstore import changes
from ui.overlays import SHOWN_CHANGES, changed_files


def entry(n: int, added: int | None = 1, deleted: int | None = 0) -> dict:
    return {"path": f"f{n:03d}.txt", "kind": "added", "added": added, "deleted": deleted}


def test_totals_count_every_file_and_skip_a_binary_files_lines():
    found = [entry(0, 3, 1), entry(1, None, None), entry(2, 2, 5)]
    assert changes.totals(found) == {"files": 3, "added": 5, "deleted": 6}
    assert changes.headline(changes.totals(found)) == "3 files changed (+5 -6)"
    assert changes.headline(changes.totals(found[:1])) == "1 file changed (+3 -1)"
    assert changes.headline(changes.totals([])) == "no files changed"


def test_the_files_cell_reads_the_totals_before_the_kept_list():
    kept = [entry(n) for n in range(3)]
    counted = {"files": 900, "added": 900, "deleted": 0}
    assert changes.files_cell({"state": "done", "changes": kept, "changed": counted}) == "900"
    # A journal from before totals were kept: its list was whole.
    assert changes.files_cell({"state": "done", "changes": kept}) == "3"
    assert changes.files_cell({"state": "done", "changes": [], "changed": None}) == "0!"
    assert changes.files_cell({"state": "failed", "changes": []}) == "0"
    assert changes.files_cell({"state": "delivered", "changes": None}) == "-"


def test_the_files_cell_follows_the_flag_the_session_set():
    # A read-only role: nothing changed is fine, a change is what is flagged.
    assert changes.files_cell({"state": "done", "changes": [], "flagged": False}) == "0"
    assert changes.files_cell({"state": "done", "changes": [entry(0)], "flagged": True}) == "1!"


def test_the_boards_detail_line_names_a_few_files_and_counts_the_rest():
    kept = [entry(n) for n in range(changes.LISTED)]
    line = changed_files({"changes": kept, "changed": {"files": 5000, "added": 1,
                                                        "deleted": 0}})
    assert line.startswith("5000 files (+1 -0): f000.txt (added, +1 -0), ")
    assert line.count("(added, +1 -0)") == SHOWN_CHANGES
    assert line.endswith(f"f{SHOWN_CHANGES - 1:03d}.txt (added, +1 -0) and "
                         f"{5000 - SHOWN_CHANGES} more")
    assert changed_files({"changes": kept[:2]}) == ("f000.txt (added, +1 -0), "
                                                    "f001.txt (added, +1 -0)")


def test_a_report_of_an_older_log_totals_the_list_it_has(tmp_path, capsys):
    records = [{"t": 1.0, "ts": "-", "event": "deck starting", "version": "0", "pid": 1,
                "mode": "headless", "dir": "/p", "config": "built-in"},
               {"t": 2.0, "ts": "-", "event": "changes", "task": "T1", "role": "dev",
                "files": [entry(0, 4, 1), entry(1, None, None), "junk"], "flagged": False},
               {"t": 3.0, "ts": "-", "event": "changes", "task": "T2", "role": "dev",
                "files": [entry(2)], "totals": {"files": 700, "added": 9, "deleted": 2},
                "flagged": False}]
    log = tmp_path / "events.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert cli.run([str(log), "--json"]) == 0
    found = json.loads(capsys.readouterr().out)["changes"]
    assert [c["totals"] for c in found] == [{"files": 3, "added": 4, "deleted": 1},
                                            {"files": 700, "added": 9, "deleted": 2}]


def test_one_tree_against_itself_runs_no_git(tmp_path, monkeypatch):
    """A task that changed nothing leaves the same tree as its checkpoint:
    counted, the two ``git diff`` runs per report (forks of the server)
    are not made for it."""
    runs = []
    monkeypatch.setattr(changes, "_git", lambda root, *args: runs.append(args) or b"")
    tree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
    assert changes.diff_trees(tmp_path, tree, tree) == []
    assert runs == []
    changes.diff_trees(tmp_path, tree, "0" * 40)
    assert len(runs) == 2
