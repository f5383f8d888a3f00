"""``choragos gateway``: run the built-in gateway in the foreground.

Standalone it serves any number of sessions (each pointing ``[sphragis]
addr`` at it); with ``--state FILE`` its counters outlive it.  A session
with ``[gateway] builtin = true`` runs this same verb as its child with
``--session --state .choragos/state/gateway-counts.jsonl``: the child reads
one JSON line on stdin, the session's key (the roles' keys derive from it:
see :mod:`choragos.gateway.roles`) and its last token totals; it starts from
the counts file raised to those totals, prints ``listening <addr>`` on stdout once it accepts
connections, and exits when its stdin closes (the session ended, however
it ended).
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from dataclasses import dataclass

from choragos.cli import _client

_ABOUT = ("Run the built-in gateway: a streaming reverse proxy for the Anthropic, OpenAI "
          "and Gemini APIs that counts tokens per role and serves /metrics and /healthz.")


def run(argv: list[str], verb: str = "gateway") -> int:
    return _client.guard(verb, lambda: _gateway(argv, verb))


def arguments(verb: str):
    from choragos.cli._argparser import named
    from choragos.config import schema as cs
    from choragos.config.model import Upstreams, parse_addr, upstream_url

    def checked(convert, what: str):
        def check(text: str) -> object:
            try:
                return convert(text)
            except ValueError as exc:
                raise _client.Failure(_client.EXIT_USAGE, f"{what}: {exc}") from None
        return check

    # Not _client.parser: this verb talks to no session, so it has no --sock.
    made = _client.bare_parser(verb, _ABOUT)
    made.add_argument("--addr", default="127.0.0.1:8787", type=checked(parse_addr, "--addr"),
                      help="host:port to listen on (default 127.0.0.1:8787)")
    defaults = Upstreams()
    for api, url in defaults.by_api().items():
        made.add_argument(f"--{api}", metavar="URL", default=url,
                          type=checked(upstream_url, f"--{api}"),
                          help=f"upstream for the {api} API (default {url})")
    made.add_argument("--timeout", default="10m", type=checked(cs.optional_duration, "--timeout"),
                      help='how long an upstream may stay silent (default 10m; "" for no limit)')
    made.add_argument("--state", metavar="FILE", default=None, type=named,
                      help="keep the counters in FILE: start from it, add to it after "
                      "each counted response")
    made.add_argument("--session", action="store_true", help="run as a session's child "
                      "(seed from stdin, exit when stdin closes)")
    return made


def _gateway(argv: list[str], verb: str) -> int:
    args = arguments(verb).parse_args(argv)
    from choragos.config.model import split_host_port
    from choragos.gateway.budgetgate import BudgetGate
    from choragos.gateway.proxy import ProxyServer
    from choragos.gateway.roles import Roles
    from choragos.gateway.watch import AnswerWatch, stdout_emitter

    session = _read_session() if args.session else None
    tally = _tally(args.state, session)
    # A session reads the news on stdout; a standalone gateway only logs it.
    watch = AnswerWatch(stdout_emitter(_record) if args.session
                        else lambda news: _record(f"seen: {json.dumps(news, sort_keys=True)}"))
    gate = BudgetGate(lambda: tally.counts()["tokens"])
    upstreams = {api: getattr(args, api) for api in ("anthropic", "openai", "gemini")}
    try:
        server = ProxyServer(split_host_port(args.addr), upstreams, tally, args.timeout,
                             record=_record, roles=Roles(session.key if session else None),
                             watch=watch, gate=gate)
    except OSError as exc:
        raise _client.Failure(1, f"cannot listen on {args.addr}: {exc.strerror or exc}") \
            from None
    _stop_on(server, args.session, gate)
    print(f"listening {args.addr}", flush=True)
    _record(f"listening on http://{args.addr}; " + ", ".join(
        f"{api} -> {url}" for api, url in upstreams.items()))
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
    return 0


def _tally(state: str | None, session: _Session | None):
    """The counters to start from: the counts file, then the session's totals.

    A standalone gateway refuses a counts file it cannot read (and leaves
    it alone); a session's gateway says so in its log and starts from the
    session's totals instead, since its session must go on.
    """
    from pathlib import Path

    from choragos.gateway.counts import CountsError, CountsFile, load
    from choragos.gateway.metrics import Tally

    if state is None:
        tally = Tally()
    else:
        path = Path(state).absolute()
        if path.is_dir():  # (read as a file, a traceback)
            raise _client.Failure(_client.EXIT_USAGE, f"--state {_client.inert(state)} is a "
                                  "folder; name a file in it, such as gateway-counts.jsonl")
        if not session and not path.parent.is_dir():
            # A mistyped folder is not made: the counts would go where nobody looks.
            raise _client.Failure(_client.EXIT_USAGE, f"--state {_client.inert(state)}: there "
                                  f"is no folder {_client.inert(path.parent)}; create it or "
                                  "name a file in one that exists")
        tally = Tally(CountsFile(path, _record))
        try:
            counts = load(path)
        except CountsError as exc:
            if not session:
                raise _client.Failure(1, f"--state {state}: {exc}; move it away or name "
                                      "another file") from None
            _record(f"counts file {path} unreadable ({exc}); starting from the session's "
                    "last totals")
            counts = None
        if counts is not None:
            tally.restore(counts)
    if session:
        tally.seed(session.totals)
    tally.persist(whole=True)  # the journal compacted, and known writable, at start
    return tally


@dataclass(frozen=True)
class _Session:
    """What a session's gateway reads on its stdin at start: the key, the last totals."""

    key: bytes    # the session's key: each role's key derives from it
    totals: dict  # the session's last token totals, a floor under the counts


def _read_session() -> _Session:
    """The session's line on stdin; without a key no request could be charged to a role."""
    try:
        given = json.loads(sys.stdin.readline() or "{}")
        key = bytes.fromhex(given["key"])
    except (ValueError, KeyError, TypeError):
        key = b""
    if len(key) < 16:
        raise _client.Failure(1, "--session: the first line on stdin must be the session's "
                              'JSON {"key": <hex>, "totals": {...}}')
    totals = given.get("totals")
    return _Session(key, totals if isinstance(totals, dict) else {})


def _stop_on(server, session: bool, gate) -> None:
    """SIGTERM/SIGINT stop the server; a session's child also stops when stdin closes.

    Meanwhile a session's child reads its stdin for the session's budget
    policy, one JSON line each time it changes."""
    def stop(*_: object) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    if session:
        def watch() -> None:
            from choragos.gateway.watch import read_news
            for line in sys.stdin:  # the same reader as the seed's: nothing it read ahead is lost
                news = read_news(line.encode())
                if news is not None and gate.update(news):
                    _record(f"budgets: {json.dumps(news['budgets'], sort_keys=True)}")
            stop()
        threading.Thread(target=watch, name="stdin-watch", daemon=True).start()


def _record(line: str) -> None:
    import time

    stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
    # A path comes from the wire: never let it put escape sequences on a terminal.
    print(f"{stamp} gateway: {_client.inert(line)}", file=sys.stderr, flush=True)
