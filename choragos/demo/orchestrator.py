"""The demo orchestrator: plans a tiny release and hands it out for real.

The plan: the coder adds a ``--version`` flag; then the reviewer and the
tester look at it in parallel; then the release role (behind an approval
gate) writes the changelog.  Every hand-off is a real ``choragos delegate``
and every result comes back as the report line choragos types in.  If the
operator rejects the release, it re-plans: the coder drafts release notes
instead.  Type ``again`` at its prompt to run the plan once more.
"""

from __future__ import annotations

import time

from choragos.demo.common import FAILED_LINE, REJECTED_LINE, REPORT_LINE, choragos, role
from choragos.demo.tui import PromptTUI, paint
from choragos.plural import counted

STEPS = [
    [("coder", "Add a --version flag to app.py that prints the version")],
    [("reviewer", "Review the --version change in app.py"),
     ("tester", "Run app.py --version and check the output")],
    [("release", "Write CHANGELOG.md for v0.2.0 (the --version flag)")],
]
FALLBACK = ("coder", "Draft release notes for v0.2.0 in NOTES.md; the release was rejected")


class Orchestrator:
    def __init__(self) -> None:
        self.tui = PromptTUI(role())
        self.step = -1
        self.waiting: set[str] = set()
        self.briefed = False

    def line(self, text: str) -> None:
        say = self.tui.say
        if not self.briefed and "choragos team" in text:
            self.briefed = True
            say(paint("Read my brief: I lead a team of four. Here is the plan:", bold=True))
            for number, step in enumerate(STEPS, 1):
                say(f"  {number}. " + "  +  ".join(f"{who}: {what}" for who, what in step))
            self.tui.busy("planning", 2)
            self.next_step()
            return
        if match := REPORT_LINE.search(text):
            task, who, summary = match.group(1), match.group(2), match.group(3)
            say(f"{paint('◆', 'green')} {task} from {paint(who, bold=True)}: {summary}")
            if match.group(4):
                say(paint(f"  (report in {match.group(4)})", dim=True))
            self.waiting.discard(task)
            if not self.waiting:
                self.next_step()
            return
        if match := REJECTED_LINE.search(text):
            say(f"{paint('✗', 'red')} the operator rejected {match.group(1)} to "
                f"{match.group(2)}; re-planning")
            self.waiting.discard(match.group(1))
            self.step = len(STEPS)  # the plan ends with the fallback
            self.delegate([FALLBACK])
            return
        if match := FAILED_LINE.search(text):
            say(f"{paint('!', 'red')} {match.group(1)} failed; leaving it to the operator")
            self.waiting.discard(match.group(1))
            if not self.waiting:
                self.next_step()
            return
        if text.strip() == "again":
            self.step = -1
            self.next_step()
            return
        if text.strip():
            say(paint("I follow the demo script. Type 'again' to run the plan once more.",
                      dim=True))

    def next_step(self) -> None:
        self.step += 1
        if self.step >= len(STEPS):
            self.tui.say(paint("All done: the team finished the plan. "
                               "Type 'again' to run it once more.", "green", bold=True))
            return
        self.delegate(STEPS[self.step])

    def delegate(self, step: list[tuple[str, str]]) -> None:
        for who, what in step:
            self.tui.say(paint(f"$ choragos delegate --to {who} --task '{what}'", dim=True))
            code, output = choragos("delegate", "--to", who, "--task", what)
            self.tui.say(output if code == 0 else paint(output, "red"))
            if code == 0 and output.split()[1:2]:
                self.waiting.add(output.split()[1])
            time.sleep(0.3)
        self.tui.say(paint(f"waiting for {counted(len(self.waiting), 'report')}", dim=True))


def run() -> None:
    orchestrator = Orchestrator()
    tui = orchestrator.tui
    tui.say(paint(f"demo orchestrator · {tui.name}", "cyan", bold=True))
    tui.say(paint("a scripted stand-in for an agent CLI; it really runs choragos delegate",
                  dim=True))
    tui.run(orchestrator.line)
