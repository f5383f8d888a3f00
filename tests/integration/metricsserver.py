"""A scripted gateway ``/metrics`` endpoint: tests set the token counters as they go."""

from __future__ import annotations

from tests.loopback import FakeHandler, Loopback

HEAD = ("# HELP sphragis_tokens_total Tokens seen by the gateway.\n"
        "# TYPE sphragis_tokens_total counter\n")


class ScriptedGateway:
    """``/metrics`` on a fixed port that a test can rewrite, take down and bring back."""

    def __init__(self, body: bytes = HEAD.encode()) -> None:
        self.body = body
        self.counts: dict[tuple[str, str, str], int] = {}
        self.http: Loopback | None = None
        self.port = 0
        self.up()

    def set(self, role: str, model: str, **directions: int) -> None:
        """Set ``role``'s cumulative counters for ``model`` (input=…, output=…)."""
        for direction, value in directions.items():
            self.counts[(role, model, direction)] = value
        lines = [f'sphragis_tokens_total{{agent="{r}",model="{m}",direction="{d}"}} {v}\n'
                 for (r, m, d), v in sorted(self.counts.items())]
        self.body = (HEAD + "".join(lines)).encode()

    def up(self) -> None:
        gateway = self

        class Handler(FakeHandler):
            def do_GET(self) -> None:
                code, body = (200, gateway.body) if self.path == "/metrics" else (404, b"")
                self.send_response(code)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.http = Loopback(Handler, self.port)
        self.port = self.http.port

    def down(self) -> None:
        if self.http is not None:
            self.http.close()
            self.http = None
