"""A web server whose loop died says so at once, before its thread is gone:
the actor the supervisor starts next serves anew instead of trusting it."""

from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace

from choragos.web.news import NewsHub
from choragos.web.server import WebServer


def test_a_dead_loop_is_not_serving_while_its_thread_winds_down(tmp_path: Path) -> None:
    server = WebServer(SimpleNamespace(workdir=tmp_path), NewsHub())
    seen: dict = {}
    told = threading.Event()

    def died(error: str) -> None:  # on the dying thread, which is still alive
        seen["serving"], seen["error"] = server.serving, error
        told.set()

    server.on_died = died
    server.start("127.0.0.1:0")
    assert server.serving
    server.inject_fault()
    assert told.wait(10)
    assert seen == {"serving": False, "error": "RuntimeError: a fault was injected into the "
                                               "web server"}
    server.close()
