"""A pane as the web view shows it: its rows with colours, and the answers
a waiting question offers.

The answers are read off the screen, never guessed: the options of a
numbered menu ("❯ 1. Yes", "2. No"), or the letters a "(y/n)" prompt names.
Choosing one types exactly what the operator would press (the option's
digit, or the letter); nothing is typed unless the operator picks it.
"""

from __future__ import annotations

import re
from typing import Any

from choragos.terminal.emulator import Snapshot

# "❯ 1. Yes", "│ ● 2. Allow always", "  3. No, and tell Claude what to do"
_OPTION = re.compile(r"^\s*[│┃|]?\s*(?:[●❯›>▶»]\s*)?(\d)\.\s+(\S.*?)\s*[│┃|]?\s*$")
_CHOICES = re.compile(r"[(\[]\s*(y(?:es)?)\s*/\s*(n(?:o)?)\s*[)\]]", re.IGNORECASE)
TAIL = 16  # the lines a question is looked for in, from the bottom of the screen
_FLAGS = ("bold", "italic", "underline", "strikethrough", "reverse")


def screen_json(role: str, shot: Snapshot) -> dict[str, Any]:
    """Rows as runs ``[text, fg, bg, flags]``: the page draws them as spans."""
    rows = []
    for runs in shot.runs:
        rows.append([[run.text, run.fg, run.bg,
                      "".join(flag[0] for flag in _FLAGS if getattr(run, flag))]
                     for run in runs])
    return {"role": role, "cols": shot.cols, "rows": shot.rows, "cursor": list(shot.cursor),
            "title": shot.title, "lines": list(shot.lines), "runs": rows}


def answers(lines: list[str] | tuple[str, ...]) -> list[dict[str, str]]:
    """What the question at the bottom of the screen lets one answer."""
    tail = [line for line in lines if line.strip()][-TAIL:]
    options: dict[str, str] = {}
    for line in tail:
        match = _OPTION.match(line)
        if match:
            options.setdefault(match.group(1), match.group(2))
    if len(options) >= 2:
        return [{"label": f"{key}. {label}", "text": key} for key, label in options.items()]
    for line in reversed(tail):
        match = _CHOICES.search(line)
        if match:
            return [{"label": match.group(1), "text": match.group(1)[0].lower()},
                    {"label": match.group(2), "text": match.group(2)[0].lower()}]
    return []
