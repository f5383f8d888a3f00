"""Where a new session's task numbering continues from."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from choragos.board import taskids
from choragos.gitstore.checkpoints import CheckpointStore


def test_an_empty_directory_starts_at_one(tmp_path: Path) -> None:
    assert taskids.first_free(tmp_path) == 1


def test_task_files_and_reports_count(tmp_path: Path) -> None:
    (tmp_path / ".choragos" / "tasks").mkdir(parents=True)
    (tmp_path / ".choragos" / "reports").mkdir()
    (tmp_path / ".choragos" / "tasks" / "T4.md").write_text("x")
    (tmp_path / ".choragos" / "reports" / "T11.verify.log").write_text("x")
    (tmp_path / ".choragos" / "reports" / "notes-T99x.md").write_text("not a task's")
    assert taskids.first_free(tmp_path) == 12


def test_the_event_log_and_its_rotations_count(tmp_path: Path) -> None:
    logs = tmp_path / ".choragos" / "logs"
    logs.mkdir(parents=True)
    record = {"event": "work-done", "task": "T7", "summary": 'says "task": "T900"'}
    (logs / "events.jsonl").write_text(json.dumps(record) + "\n")
    (logs / "events.jsonl.2").write_text(json.dumps({"event": "x", "id": "T8"}) + "\n")
    assert taskids.first_free(tmp_path) == 9


def test_checkpoints_of_every_tree_count(tmp_path: Path) -> None:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(tmp_path)}
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True, env=env)
    (tmp_path / "a.txt").write_text("a")
    with CheckpointStore(tmp_path) as store:
        store.snapshot("T5", "coder", "work")
        store.snapshot("pre-rollback-T6", "choragos", "undo point")
    assert taskids.first_free(tmp_path) == 7


def _git(tmp_path: Path, *args: str, cwd: Path | None = None) -> None:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(tmp_path),
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    subprocess.run(["git", *args], cwd=cwd or tmp_path, check=True, env=env,
                   capture_output=True)


def test_packed_checkpoint_refs_count_and_a_linked_worktree_sees_its_main_trees(
        tmp_path: Path) -> None:
    main = tmp_path / "main"
    main.mkdir()
    _git(tmp_path, "init", "-q", cwd=main)
    (main / "a.txt").write_text("a")
    _git(tmp_path, "add", "a.txt", cwd=main)
    _git(tmp_path, "commit", "-qm", "a", cwd=main)
    with CheckpointStore(main) as store:
        store.snapshot("T5", "coder", "work")
    _git(tmp_path, "pack-refs", "--all", cwd=main)
    loose = main / ".git" / "refs" / "choragos"
    assert not [f for _, _, f in os.walk(loose) if f]  # packed, none loose
    assert taskids.first_free(main) == 6
    _git(tmp_path, "worktree", "add", "-q", str(tmp_path / "linked"), cwd=main)
    assert taskids.first_free(tmp_path / "linked") == 6


def test_a_repository_that_never_had_a_checkpoint_is_not_opened(tmp_path: Path) -> None:
    """Numbering tasks in a repository without checkpoint refs needs no git
    library: a session with checkpoints off never loads dulwich (10 MB)."""
    _git(tmp_path, "init", "-q")
    code = ("import sys; from pathlib import Path; from choragos.board import taskids; "
            f"n = taskids.first_free(Path({str(tmp_path)!r})); "
            "print(n, 'dulwich.repo' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60).stdout.split()
    assert out == ["1", "False"]
