"""``choragos web [--json] [--rotate]``: the web view's address with its access token.

The link signs a browser in once (``/?token=``; the page then drops the
token from its address).  A QR code of it is drawn in the terminal for a
phone.  The address is the one the running session really listens on;
without a session, the one ``[web] listen`` names.  ``--rotate`` makes a new
token: every browser signed in with the old one must open the new link.
"""

from __future__ import annotations

from argparse import ArgumentParser
from pathlib import Path

from choragos.cli import _client
from choragos.web import access as webaccess

# typing is needed for annotations only; the CLI verbs skip its import cost.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import Namespace


def run(argv: list[str], verb: str = "web") -> int:
    """Entry point for ``choragos web``."""
    return _client.guard(verb, lambda: _web(argv, verb), json=_client.wants_json(argv))


def _web(argv: list[str], verb: str) -> int:
    args = arguments(verb).parse_args(argv)
    workdir, running = _session_dir(args, args.rotate)
    addr = webaccess.read_addr(workdir) if running else ""
    if not addr:
        addr = _configured(workdir)
    try:
        token = webaccess.rotate(workdir) if args.rotate else webaccess.ensure_token(workdir)
    except OSError as exc:
        raise _client.Failure(_client.EXIT_REFUSED, f"cannot keep the access token under "
                                                    f"{workdir}/.choragos/state: "
                                                    f"{exc.strerror or exc}") from None
    if args.rotate and running and addr:
        _tell_server(addr, token)
    url = f"{webaccess.page_url(addr)}/?token={token}"
    if args.json:
        return _client.print_json({"url": url, "token": token, "addr": addr,
                                   "running": running, "rotated": args.rotate})
    print(url)
    if not args.no_qr:
        print(_qr(url))
    if not running:
        print("(no session serves it right now: start one with `choragos serve`)")
    if args.rotate:
        print("a new token: browsers signed in with the old one must open this link")
    return _client.EXIT_OK


def arguments(verb: str) -> ArgumentParser:
    """The parser of ``choragos VERB`` (its help, completion and man page come from it)."""
    made = _client.parser(verb, "Print the web view's address with its access token, and a "
                                "QR code of it for a phone.")
    made.add_argument("--rotate", action="store_true",
                      help="make a new token; the old one stops working at once")
    made.add_argument("--no-qr", action="store_true", help="print the address only")
    made.add_argument("--json", action="store_true", help="print url and token as JSON")
    return made


def _session_dir(args: Namespace, rotate: bool) -> tuple[Path, bool]:
    """The running session's directory (it says where it runs), else this one's.
    A rotation is the operator's: the session names the role (by process
    ancestry, as for a gate's approval) this verb runs inside, if any, and
    a new token from there would lock the operator out of the page."""
    sock, cwd = _client.socket_for(args.sock)
    if sock.exists():
        try:
            ack = _client.send(str(sock), {"cmd": "ping"})
        except _client.Failure:
            ack = {}
        if isinstance(ack.get("dir"), str):
            caller = _client.send(str(sock), {"cmd": "whoami"}).get("role") if rotate else None
            if caller:
                from choragos.control.authority import operator_only

                raise _client.Failure(_client.EXIT_REFUSED,
                                      operator_only("web --rotate", caller)
                                      + "; the token was not changed")
            return Path(ack["dir"]), True
    return (cwd or Path.cwd()), False


def _configured(workdir: Path) -> str:
    from choragos.config.model import ConfigError, load_config

    try:
        listen = load_config(cwd=workdir).web.listen
    except ConfigError as exc:
        raise _client.Failure(_client.EXIT_USAGE, str(exc).splitlines()[0]) from None
    if not listen:
        raise _client.Failure(_client.EXIT_REFUSED, 'the web view is off: set [web] listen = '
                                                    '"127.0.0.1:8787" in .choragos.toml and '
                                                    'start the session')
    if listen.endswith(":0"):
        raise _client.Failure(_client.EXIT_REFUSED, "[web] listen takes any free port and no "
                                                    "session is running to say which; start it")
    return listen


def _tell_server(addr: str, token: str) -> None:
    """One request with the new token, so the running server reads it now and
    ends the event streams of pages signed in with the old one at once.  If it
    cannot be reached, those streams still end before they carry any more news."""
    import http.client

    from choragos.config.model import split_host_port

    host, port = split_host_port(addr)
    host = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
    try:
        conn = http.client.HTTPConnection(host, port, timeout=5)
        conn.request("GET", "/favicon.ico", headers={"Authorization": f"Bearer {token}"})
        conn.getresponse().read()
        conn.close()
    except (OSError, ValueError, http.client.HTTPException):
        pass


def _qr(url: str) -> str:
    """The URL as a QR code of half-block characters (two modules a character row)."""
    import io

    import segno

    out = io.StringIO()
    segno.make(url, error="m").terminal(out=out, compact=True)
    return out.getvalue().rstrip("\n")
