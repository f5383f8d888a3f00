"""Where a new session's task numbering continues from."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from choragos import taskids
from choragos.checkpoints import CheckpointStore


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
