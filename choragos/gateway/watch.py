"""What the built-in gateway tells its session about the answers it relays.

The gateway runs in its own process; a session's gateway writes one JSON
object per line on its stdout for the session to read:

- ``{"limit": {"role", "kind", "source", "until", "detail"}}``: an upstream
  answered a role with a limit (see :mod:`choragos.gateway.limits`);
- ``{"lifted": ROLE}``: the first answer that was not a limit after one;
- ``{"blocked": {"role", "why"}}``: a request refused by a spent budget
  (see :mod:`choragos.gateway.budgetgate`), or an answer cut there;
- ``{"unblocked": ROLE}``: the first request let through after refusals.

A standalone gateway has no session: the same news goes to its log only.
"""

from __future__ import annotations

import json
import threading
import time
import zlib
from collections.abc import Callable, Mapping

from choragos.gateway.limits import BODY_KEEP, Limit, read_answer


class AnswerWatch:
    """Reads each relayed answer for a provider's limit; says so once per change."""

    def __init__(self, emit: Callable[[dict], None],
                 clock: Callable[[], float] = time.time) -> None:
        self.emit = emit
        self.clock = clock
        self._limited: set[str] = set()
        self._lock = threading.Lock()

    @staticmethod
    def keeps_body(status: int) -> bool:
        """An error answer is kept (its start) to read the retry delay in it."""
        return status >= 400

    def answered(self, role: str, api: str, status: int, headers: Mapping[str, str],
                 body: bytes) -> Limit | None:
        lower = {k.lower(): v for k, v in headers.items()}
        limit = read_answer(api, status, lower,
                            _plain(body, lower.get("content-encoding", "")), self.clock())
        if limit is not None:
            with self._lock:
                self._limited.add(role)
            self.emit({"limit": {"role": role, "kind": limit.kind, "source": limit.source,
                                 "until": limit.until, "detail": limit.detail}})
            return limit
        if 200 <= status < 300:
            with self._lock:
                lifted = role in self._limited
                self._limited.discard(role)
            if lifted:
                self.emit({"lifted": role})
        return None


def _plain(body: bytes, encoding: str) -> bytes:
    """The error answer's start, unpacked when it came gzipped (as much as unpacks)."""
    if encoding.strip().lower() not in ("gzip", "x-gzip", "deflate"):
        return body
    unpack = zlib.decompressobj(zlib.MAX_WBITS | 32 if "gzip" in encoding else zlib.MAX_WBITS)
    try:
        return unpack.decompress(body, BODY_KEEP)
    except zlib.error:
        return b""


def stdout_emitter(record: Callable[[str], None]) -> Callable[[dict], None]:
    """Lines on stdout for the session (and each in the gateway's log)."""
    lock = threading.Lock()

    def emit(news: dict) -> None:
        line = json.dumps(news, sort_keys=True)
        record(f"session told: {line}")
        with lock:
            print(line, flush=True)
    return emit


def read_news(line: bytes) -> dict | None:
    """One line from the gateway, or None for anything that is not news."""
    try:
        news = json.loads(line)
    except ValueError:
        return None
    return news if isinstance(news, dict) else None


def limit_of(news: dict) -> tuple[str, Limit] | None:
    """The role and limit of a ``limit`` line, checked (it came from another process)."""
    body = news.get("limit")
    if not isinstance(body, dict) or not isinstance(body.get("role"), str):
        return None
    until = body.get("until")
    until = float(until) if isinstance(until, int | float) else None
    return body["role"], Limit(str(body.get("kind", "rate limit")),
                               str(body.get("source", "")), until,
                               str(body.get("detail", ""))[:200])
