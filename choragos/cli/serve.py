"""``choragos serve``: run a session in this directory.

``--headless`` runs it in the foreground without a deck (servers, tests,
CI), logging to stderr and ``.choragos/logs/server.log``, until SIGTERM,
SIGINT or ``choragos shutdown``.
"""

from __future__ import annotations

import argparse
import faulthandler
import logging
import os
import signal
import sys
from pathlib import Path

from choragos.config import ConfigError, load_config
from choragos.paths import socket_path


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="choragos serve",
                                     description="Run a choragos session in this directory.")
    parser.add_argument("--config", type=Path, help="config file (default ./.choragos.toml)")
    parser.add_argument("--headless", action="store_true",
                        help="run in the foreground with no deck")
    parser.add_argument("--dir", type=Path, default=None,
                        help="the project directory (default: the current directory)")
    return parser.parse_args(argv)


def setup_logging(workdir: Path) -> Path:
    log_dir = workdir / ".choragos" / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    path = log_dir / "server.log"
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    root = logging.getLogger()
    root.setLevel(logging.INFO)
    for handler in (logging.StreamHandler(sys.stderr), logging.FileHandler(path)):
        handler.setFormatter(fmt)
        root.addHandler(handler)
    logging.getLogger("pykka").setLevel(logging.WARNING)
    return path


def install_signals(stop) -> None:
    def on_signal(signum, frame) -> None:
        logging.getLogger("choragos").info("signal %d: stopping the session", signum)
        stop()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGHUP, on_signal)


def run(argv: list[str], verb: str = "serve") -> int:
    args = parse_args(argv)
    workdir = (args.dir or Path.cwd()).resolve()
    try:
        config = load_config(args.config, workdir)
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 2
    if not args.headless:
        print("choragos: the interactive deck is not in this version yet; run "
              "`choragos serve --headless` to start the session without it.", file=sys.stderr)
        return 2
    for warning in config.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    log_path = setup_logging(workdir)
    with open(log_path, "a") as dump:
        # SIGUSR1 writes every thread's stack to the server log (stuck-actor triage).
        faulthandler.register(signal.SIGUSR1, file=dump, all_threads=True)
        return _serve(config, workdir)


def _serve(config, workdir: Path) -> int:
    from actors.session import Session, SessionOptions
    from choragos.ctlserver import ServerStartError

    log = logging.getLogger("choragos")
    options = SessionOptions(workdir=workdir, socket=socket_path(workdir), mode="headless")
    session = Session(config, options)
    install_signals(session.stopped.set)
    try:
        session.start()
    except ServerStartError as exc:
        print(f"choragos: {exc}", file=sys.stderr)
        return 1
    log.info("session running in %s (socket %s, pid %d)", workdir, options.socket, os.getpid())
    try:
        session.wait()
    finally:
        session.stop()
    log.info("session stopped")
    return 0
