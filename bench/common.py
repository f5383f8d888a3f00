"""What every bench shares: the machine it ran on, and its one JSON line.

Each bench prints its tables for people and, last, one line of JSON for
scripts (``make bench`` output can be grepped for ``{"bench":``), so figures
can be compared run to run.  Ratios are against a reference measured in the
same run (tmux, git, a bare client), because absolute times depend on the
machine and on whatever else runs on it; the load average is recorded
beside them for that reason.
"""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path


def machine() -> dict[str, object]:
    """CPU count, model and the load averages at the time of the call."""
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = []
    return {"cpus": os.cpu_count(), "cpu": model, "load": load,
            "python": platform.python_version()}


def emit(bench: str, ratios: dict[str, float | None], **figures: object) -> None:
    """Print the bench's machine-readable line: its ratios and raw figures."""
    line = {"bench": bench,
            "ratios": {k: (round(v, 3) if isinstance(v, float) else v) for k, v in ratios.items()},
            **figures, "machine": machine()}
    print(json.dumps(line, sort_keys=False), flush=True)


def process_cpu(pid: int) -> float:
    """User+system CPU seconds of a process and its reaped children, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def process_rss_mb(pid: int) -> float:
    """Resident memory of a process in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0
