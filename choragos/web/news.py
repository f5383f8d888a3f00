"""The session's typed news as server-sent events, for the web view.

The core publishes each :mod:`choragos.session.news` item on its own thread; the
:class:`NewsHub` turns it into one SSE frame (encoded once, whatever the
number of pages open) and hands it to every open stream's queue on that
stream's event loop.  The core never waits on a browser: a stream whose
queue is full (a page that stopped reading) is cut, and the page's
EventSource reconnects and reloads the whole picture.

The hub outlives the web server: the session subscribes it to the core once,
and a server restarted by its supervisor registers its streams on the same hub.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from functools import singledispatch
from typing import Any

from choragos.session import news

QUEUE_LIMIT = 2000  # frames a page may fall behind before its stream is cut
QUEUE_BYTES = 4 << 20  # and characters: a few big frames weigh as much as many small ones
CUT = ""  # the frame that tells a stream to end


def frame(kind: str, data: Any) -> str:
    """One SSE frame: its ``event:`` name and the JSON ``data:`` line."""
    return f"event: {kind}\ndata: {json.dumps(data, default=str, separators=(',', ':'))}\n\n"


@singledispatch
def as_event(item: Any) -> tuple[str, Any]:
    """The SSE event name and payload of one news item."""
    raise TypeError(f"no web event for {type(item).__name__}")


@as_event.register(news.RoleChanged)
def _role(item: news.RoleChanged) -> tuple[str, Any]:
    return "role", item.view.as_dict()


@as_event.register(news.TaskChanged)
def _task(item: news.TaskChanged) -> tuple[str, Any]:
    return "task", item.task.as_dict()


@as_event.register(news.GateOpened)
def _gate_opened(item: news.GateOpened) -> tuple[str, Any]:
    return "gate-opened", item.gate.as_dict()


@as_event.register(news.GateClosed)
def _gate_closed(item: news.GateClosed) -> tuple[str, Any]:
    return "gate-closed", {"id": item.task_id}


@as_event.register(news.EventLogged)
def _event(item: news.EventLogged) -> tuple[str, Any]:
    return "event", item.as_dict()


@as_event.register(news.Bell)
def _bell(item: news.Bell) -> tuple[str, Any]:
    return "bell", {"role": item.role, "hook": item.hook}


@as_event.register(news.GatewayChanged)
def _gateway(item: news.GatewayChanged) -> tuple[str, Any]:
    return "gateway", {"state": item.state}


@as_event.register(news.TokensChanged)
def _tokens(item: news.TokensChanged) -> tuple[str, Any]:
    return "tokens", {role: usage.as_dict() for role, usage in item.usages.items()}


@as_event.register(news.MarksChanged)
def _marks(item: news.MarksChanged) -> tuple[str, Any]:
    return "marks", {role: list(marks) for role, marks in item.marks.items()}


class Stream:
    """One open ``/api/events``: a queue on its server's event loop.

    ``cut`` ends the connection itself: a page that stopped reading leaves its
    writer stuck in a write that never finishes, so a frame at the end of the
    queue would never be read; the queue stops growing once it is cut."""

    def __init__(self, loop: Any, queue: Any, cut: Callable[[], None] = lambda: None) -> None:
        self.loop = loop
        self.queue = queue
        self.pending = 0  # characters queued and not yet taken by the writer
        self.ended = False
        self._cut = cut

    def offer(self, text: str) -> bool:
        """Hand ``text`` over on the stream's loop; False once that loop is gone."""
        try:
            self.loop.call_soon_threadsafe(self._put, text)
        except RuntimeError:  # the loop is closed: its server died or stopped
            return False
        return True

    def taken(self, text: str) -> None:
        """The writer took ``text`` off the queue (on the loop)."""
        self.pending -= len(text)

    def end(self) -> None:
        """Cut the stream (on the loop): its page reconnects and reloads."""
        if not self.ended:
            self.ended = True
            self.queue.put_nowait(CUT)
            self._cut()

    def _put(self, text: str) -> None:
        if self.ended:
            return
        if self.queue.qsize() >= QUEUE_LIMIT or self.pending + len(text) > QUEUE_BYTES:
            self.end()
            return
        self.pending += len(text)
        self.queue.put_nowait(text)


class NewsHub:
    """Fan the core's news out to the open event streams."""

    def __init__(self) -> None:
        self._streams: set[Stream] = set()
        self._guard = threading.Lock()

    def publish(self, item: Any) -> None:
        """From the core's thread: never blocks, never raises into the core."""
        with self._guard:
            streams = list(self._streams)
        if not streams:
            return
        try:
            text = frame(*as_event(item))
        except (TypeError, ValueError):
            return
        gone = [stream for stream in streams if not stream.offer(text)]
        if gone:
            with self._guard:
                self._streams.difference_update(gone)

    def add(self, stream: Stream) -> None:
        with self._guard:
            self._streams.add(stream)

    def remove(self, stream: Stream) -> None:
        with self._guard:
            self._streams.discard(stream)

    def count(self) -> int:
        """How many streams are open."""
        with self._guard:
            return len(self._streams)
