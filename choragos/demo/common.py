"""What both demo agents share: running choragos verbs like an agent would."""

from __future__ import annotations

import os
import re
import subprocess
import sys

TASK_LINE = re.compile(r"New task (T\d+) from choragos: read (\S+\.md)")
REPORT_LINE = re.compile(r"A worker reports: \[(T\d+) from ([\w-]+)\] (.*?)(?: Full report: "
                         r"read (\S+))?$")
REJECTED_LINE = re.compile(r"The operator rejected delegation (T\d+) to ([\w-]+)")
FAILED_LINE = re.compile(r"Task (T\d+) to ([\w-]+) failed")


def choragos(*args: str) -> tuple[int, str]:
    """Run ``choragos ARGS`` as the agent's shell would; returns (status, output)."""
    result = subprocess.run([sys.executable, "-m", "choragos", *args], capture_output=True,
                            text=True, timeout=20, env=os.environ.copy())
    return result.returncode, (result.stdout + result.stderr).strip()


def role() -> str:
    return os.environ.get("CHORAGOS_ROLE", "demo")
