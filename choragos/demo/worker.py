"""A demo worker: takes a task, "works" for a few seconds, reports for real.

Each style touches the scratch project the way its role would: the coder
edits ``app.py``, the reviewer reads it, the tester runs it, the release
role writes ``CHANGELOG.md``.  Every report is a real ``choragos
work-done`` with a report file, so the orchestrator gets it back.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from choragos.demo.common import TASK_LINE, choragos, role
from choragos.demo.tui import PromptTUI, paint

VERSION_CODE = '''
if "--version" in sys.argv:
    print("demo-app 0.2.0")
    sys.exit(0)
'''


class Worker:
    def __init__(self, style: str, seconds: float) -> None:
        self.style = style
        self.seconds = seconds
        self.tui = PromptTUI(role())
        self.briefed = False

    def line(self, text: str) -> None:
        if not self.briefed and "choragos team" in text:
            self.briefed = True
            self.tui.say(f"Read my brief. I am the {paint(self.style, bold=True)}; "
                         "waiting for work.")
            return
        match = TASK_LINE.search(text)
        if match is None:
            if text.strip():
                self.tui.say(paint("(a demo worker: I only take choragos tasks)", dim=True))
            return
        task_id, path = match.group(1), match.group(2)
        try:
            task = _task_text(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            self.tui.say(paint(f"cannot read {path}: {exc}", "red"))
            return
        self.tui.say(f"{paint('●', 'yellow')} {paint(task_id, bold=True)} {task}")
        summary, report = getattr(self, "do_" + self.style)(task)
        self.report(task_id, task, summary, report)

    # -- the styles --------------------------------------------------------------

    def do_coder(self, task: str) -> tuple[str, str]:
        self.tui.busy("reading app.py", self.seconds * 0.3)
        app = Path("app.py")
        if "--version" in task and app.exists() and "--version" not in app.read_text():
            text = app.read_text().replace("import sys\n", "import sys\n" + VERSION_CODE, 1)
            self.tui.busy("editing app.py", self.seconds * 0.5)
            app.write_text(text)
            for line in VERSION_CODE.strip().splitlines():
                self.tui.say(paint(f"+ {line}", "green"))
            self.tui.busy("running the tests", self.seconds * 0.2)
            return "added --version to app.py; tests pass", f"Added:\n\n```{VERSION_CODE}```\n"
        notes = Path("NOTES.md")
        self.tui.busy("writing NOTES.md", self.seconds * 0.7)
        # Appended, so a second demo in the same scratch project (app.py
        # already has the flag) still changes a file, as real work would.
        with notes.open("a", encoding="utf-8") as handle:
            handle.write(f"# Notes ({time.strftime('%Y-%m-%d %H:%M:%S')})\n\n{task}\n\n"
                         "- the --version flag prints 0.2.0\n\n")
        return "wrote NOTES.md", f"Wrote NOTES.md for: {task}\n"

    def do_reviewer(self, task: str) -> tuple[str, str]:
        self.tui.busy("reading the diff", self.seconds * 0.5)
        self.tui.say(paint("  app.py: flag handled before any other work — good", "green"))
        self.tui.say(paint("  nit: the version string is duplicated in CHANGELOG", "yellow"))
        self.tui.busy("writing the review", self.seconds * 0.5)
        return "LGTM with one nit", "Looks good. One nit: keep the version in one place.\n"

    def do_tester(self, task: str) -> tuple[str, str]:
        self.tui.busy("setting up", self.seconds * 0.4)
        self.tui.say(paint("$ python app.py --version", dim=True))
        result = subprocess.run([sys.executable, "app.py", "--version"], capture_output=True,
                                text=True, timeout=10)
        output = (result.stdout + result.stderr).strip() or "(no output)"
        self.tui.say(output)
        self.tui.busy("checking", self.seconds * 0.6)
        ok = result.returncode == 0 and "0.2.0" in output
        verdict = "passes: prints demo-app 0.2.0" if ok else f"FAILS: {output[:80]}"
        return verdict, f"`python app.py --version` printed:\n\n    {output}\n"

    def do_release(self, task: str) -> tuple[str, str]:
        self.tui.busy("collecting the changes", self.seconds * 0.5)
        Path("CHANGELOG.md").write_text("# Changelog\n\n## 0.2.0\n\n- `--version` prints the "
                                        "version.\n")
        self.tui.busy("writing CHANGELOG.md", self.seconds * 0.5)
        return "CHANGELOG.md written for 0.2.0", "Wrote CHANGELOG.md for 0.2.0.\n"

    # -- reporting ----------------------------------------------------------------

    def report(self, task_id: str, task: str, summary: str, body: str) -> None:
        path = Path(".choragos") / "reports" / f"{task_id}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# {task_id} ({role()})\n\nTask: {task}\n\n{body}", encoding="utf-8")
        command = ["work-done", "--id", task_id, "--done", "--task", summary,
                   "--report", str(path)]
        self.tui.say(paint("$ choragos " + " ".join(command[:4]) + " …", dim=True))
        code, output = choragos(*command)
        self.tui.say(output if code == 0 else paint(output, "red"))


def _task_text(document: str) -> str:
    """The task from a choragos task file (the section after "## The task")."""
    lines = document.splitlines()
    if "## The task" in lines:
        rest = lines[lines.index("## The task") + 1:]
        body = []
        for line in rest:
            if line.startswith("## "):
                break
            body.append(line)
        text = " ".join(line.strip() for line in body if line.strip())
        if text:
            return text
    return document.strip().splitlines()[0] if document.strip() else "(empty task)"


def run(style: str, seconds: float) -> None:
    worker = Worker(style, seconds)
    worker.tui.say(paint(f"demo {style} · {worker.tui.name}", "magenta", bold=True))
    worker.tui.say(paint(f"a scripted stand-in for an agent CLI (pid {os.getpid()})", dim=True))
    worker.tui.run(worker.line)
