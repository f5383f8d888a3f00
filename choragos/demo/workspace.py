"""The scratch project the demo team works on: a git repository with app.py.

Kept apart from your own checkout, so the demo's edits, checkpoints and
rollbacks never touch it.  Created once; run ``make demo-clean`` to start over.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

APP = '''import sys

def main() -> None:
    print("hello from the demo app")


if __name__ == "__main__":
    main()
'''


def create(path: str) -> None:
    root = Path(path)
    if (root / ".git").exists():
        return
    root.mkdir(parents=True, exist_ok=True)
    (root / "app.py").write_text(APP)
    (root / "README.md").write_text("# demo app\n\nThe project the choragos demo team works on.\n")
    env = {**os.environ, "GIT_AUTHOR_NAME": "demo", "GIT_AUTHOR_EMAIL": "demo@example.invalid",
           "GIT_COMMITTER_NAME": "demo", "GIT_COMMITTER_EMAIL": "demo@example.invalid"}
    for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-qm", "demo app"]):
        subprocess.run(["git", *args], cwd=root, check=True, env=env)
