"""Push messages when a person is needed (``[notify]``), with a link back to the web view.

The hooks that say a person is needed (a gate, a question, a budget, a role
gone for good, the crew finished or stuck, a provider's limit, a task past
its time) are heard as :class:`Alert`\\ s.  The
:class:`Coalescer` decides when a message goes out: the first at once, then
at most one per ``every`` seconds, each carrying everything that came
meanwhile, so a burst of gates is one buzz, not twenty.  It is a pure policy
(inject ``now``); the notifier actor carries its answers out.

Two shapes: ``ntfy`` (the text is the body; ``Title``, ``Click`` and
``Tags`` headers, as ntfy and its look-alikes read them) and ``webhook`` (a
JSON body).  The link names the item on the page (``#gate-T3``); the access
token goes into it only with ``token_in_link = true``: by default a message
that passes through someone else's service carries no key to the crew.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import quote

from choragos.inert import inert

if TYPE_CHECKING:
    import urllib.request

# A crew left alone overnight is the case: a stuck crew, a provider's limit and
# an overdue task need a person as much as a gate does.
NOTIFIED = ("on_gate", "on_input", "on_budget", "on_exit", "on_done", "on_idle", "on_limit",
            "on_timeout")
_TITLES = {"on_gate": "gate", "on_input": "question", "on_budget": "budget",
           "on_exit": "role stopped", "on_done": "crew finished", "on_idle": "crew stuck",
           "on_limit": "provider limit", "on_timeout": "task overdue"}
# The title of an ``on_exit`` about a part of the session (the deck), not a role.
PART_TITLE = "session part stopped"
SEND_TIMEOUT = 10.0
RETRY_FIRST = 30.0   # seconds before a message that did not go is tried again (at least)
RETRY_MOST = 900.0   # ... doubling at each failure in a row, up to this
MAX_HELD = 200       # alerts held for a service that is down; later ones are counted only
MAX_ITEMS = 20  # lines in one message; the rest are counted
MAX_TEXT = 120  # characters of a task's text in a line


@dataclass(frozen=True)
class Alert:
    """A hook that says a person is needed, as the notifier hears it."""

    hook: str
    role: str
    task_id: str = ""
    text: str = ""
    # What stopped when it is a part of the session (the deck), not a role:
    # ``role`` then holds its name too, as the hook's ``$CHORAGOS_ROLE`` does.
    part: str = ""

    @property
    def title(self) -> str:
        return PART_TITLE if self.part else _TITLES.get(self.hook, self.hook)

    def anchor(self) -> str:
        """The page item it is about ("": the page itself)."""
        if self.part:
            return ""
        if self.hook == "on_gate" and self.task_id:
            return f"gate-{self.task_id}"
        if self.hook == "on_input":
            return f"question-{self.role}"
        if self.hook in ("on_done", "on_idle"):
            return "board-h"
        return f"role-{self.role}"

    def line(self) -> str:
        # Shown, never obeyed: a push client may be a terminal (ntfy subscribe).
        text = inert(self.text.strip().splitlines()[0][:MAX_TEXT]) if self.text.strip() else ""
        head = f"{self.title}: {self.part or self.role}"
        head += f" {self.task_id}" if self.task_id else ""
        return f"{head} — {text}" if text else head


def part_of(extra: Mapping[str, str]) -> str:
    """The part of the session an ``on_exit`` hook's environment names, or ""
    for a role (``CHORAGOS_EXITED`` and ``CHORAGOS_PART``, see the hooks)."""
    return extra.get("CHORAGOS_PART", "") if extra.get("CHORAGOS_EXITED") == "part" else ""


@dataclass
class Coalescer:
    """When to send: at most one message per ``every`` seconds."""

    every: float
    held: list[Alert] = field(default_factory=list)
    last_sent: float | None = None
    not_before: float = 0.0  # a message that did not go is tried again from then
    failures: int = 0        # sends that failed in a row
    dropped: int = 0         # alerts past MAX_HELD while the service was down

    def add(self, alert: Alert, now: float) -> float:
        """Hold ``alert``; returns the time the held alerts are due."""
        if alert not in self.held:
            if len(self.held) < MAX_HELD:
                self.held.append(alert)
            else:
                self.dropped += 1
        return self.due_at(now)

    def due_at(self, now: float) -> float:
        due = now if self.last_sent is None else max(now, self.last_sent + self.every)
        return max(due, self.not_before)

    def failed(self, batch: list[Alert], now: float) -> float:
        """``batch`` did not go: held again, ahead of what came since, and
        tried again later, each failure in a row waiting twice as long;
        returns the wait."""
        wait = min(RETRY_MOST, max(self.every, RETRY_FIRST) * 2 ** self.failures)
        self.failures += 1
        self.held = batch + [alert for alert in self.held if alert not in batch]
        self.dropped += max(0, len(self.held) - MAX_HELD)
        del self.held[MAX_HELD:]
        self.not_before = now + wait
        return wait

    def sent(self) -> None:
        self.failures = self.dropped = 0

    def take(self, now: float) -> list[Alert]:
        """The alerts due now (all held ones), or none before their time."""
        if not self.held or self.due_at(now) > now:
            return []
        batch, self.held = self.held, []
        self.last_sent = now
        return batch


@dataclass(frozen=True)
class Message:
    """One push message: a title, a line per alert, a link to the first one's item."""

    title: str
    body: str
    link: str
    items: tuple[Alert, ...]


def compose(batch: list[Alert], base: str, token: str | None, dropped: int = 0) -> Message:
    """One message for ``batch``: a title, a line per alert, a link to the
    first one's item (``dropped``: alerts not held, counted among the rest)."""
    shown = batch[:MAX_ITEMS]
    lines = [alert.line() for alert in shown]
    if len(batch) + dropped > len(shown):
        lines.append(f"… and {len(batch) + dropped - len(shown)} more")
    title = ("choragos: " + batch[0].title if len(batch) == 1
             else f"choragos: {len(batch)} things need you")
    query = f"?token={quote(token)}" if token else ""
    anchor = batch[0].anchor()
    link = f"{base.rstrip('/')}/{query}{'#' + anchor if anchor else ''}" if base else ""
    return Message(title, "\n".join(lines), link, tuple(batch))


def request(url: str, kind: str, message: Message) -> urllib.request.Request:
    """The HTTP request that delivers ``message`` to ``url`` in the ``kind`` shape."""
    # Imported here: urllib's HTTP client brings ssl and email (7 MB of a
    # session's memory), and most sessions notify nobody.
    import urllib.request

    if kind == "webhook":
        body = {"title": message.title, "message": message.body, "link": message.link,
                "items": [{"hook": a.hook, "role": a.role, "part": a.part,
                           "task_id": a.task_id, "text": inert(a.text[:MAX_TEXT])}
                          for a in message.items]}
        return urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                      headers={"Content-Type": "application/json"})
    headers = {"Title": _header(message.title), "Tags": "bell",
               "Content-Type": "text/plain; charset=utf-8"}
    if message.link:
        headers["Click"] = message.link
    return urllib.request.Request(url, data=message.body.encode(), method="POST",
                                  headers=headers)


def send(url: str, kind: str, message: Message, timeout: float = SEND_TIMEOUT) -> None:
    """Deliver ``message``; raises OSError (urllib's errors included) when it did not go."""
    import urllib.request

    opener = urllib.request.build_opener(_no_redirect())
    with opener.open(request(url, kind, message), timeout=timeout) as answer:
        answer.read(1024)


def _no_redirect() -> type:
    import urllib.error
    import urllib.request

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        """urllib follows a redirected POST as a GET without the message and
        calls it sent: a redirect is an error here, naming where it leads."""

        def redirect_request(self, req, fp, code, msg, headers, newurl):
            raise urllib.error.HTTPError(
                req.full_url, code, f"{msg}: the service redirects to {newurl}; set "
                "[notify] url to that address", headers, fp)

    return NoRedirect


def _header(text: str) -> str:
    # HTTP headers are Latin-1: ntfy reads RFC 2047 for anything else.
    try:
        text.encode("latin-1")
    except UnicodeEncodeError:
        import base64

        return "=?UTF-8?B?" + base64.b64encode(text.encode()).decode() + "?="
    return text
