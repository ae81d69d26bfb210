"""``budgetlens serve [--stdio | --tcp [HOST:]PORT [--host HOST]]``: run the language server.

Over TCP the server listens on the loopback address (127.0.0.1) unless told otherwise. The
LSP has no authentication: whoever connects to the port drives the server, and the server
reads (and its commands return) what its user can read inside the workspace folders the
client names. A non-loopback address is allowed when asked for, with a warning.
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import sys
from typing import Any

from budgetlens_cli.main import EXIT_OK, UsageError

LOG_LEVELS = ("debug", "info", "warning", "error")
DEFAULT_HOST = "127.0.0.1"


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "serve", help="run the language server (stdio by default)",
        description="Run the budgetlens language server. It speaks LSP on standard input/output"
                    " by default, or listens on a TCP port with --tcp. Over TCP anyone who can"
                    " connect to the port can drive the server and read, through it, files"
                    " its user can read inside the workspace folders; it listens on"
                    f" {DEFAULT_HOST} (this machine only) unless --host or HOST: says"
                    " otherwise.")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--stdio", action="store_true", help="use standard input/output (default)")
    mode.add_argument("--tcp", metavar="[HOST:]PORT",
                      help=f"listen on this TCP port (on {DEFAULT_HOST} unless HOST or --host"
                           " is given)")
    p.add_argument("--host", metavar="HOST",
                   help=f"the address --tcp listens on (default {DEFAULT_HOST}, loopback)")
    p.add_argument("--log-file", metavar="FILE",
                   help="write the server log to FILE (default: standard error)")
    p.add_argument("--log-level", choices=LOG_LEVELS, default="warning",
                   help="log level (default warning)")
    p.set_defaults(run=run)


def parse_address(value: str, host: str | None = None) -> tuple[str, int]:
    """``--tcp`` (``PORT`` or ``HOST:PORT``) and ``--host`` as ``(host, port)``; the host
    defaults to the loopback address."""
    given, sep, port = value.rpartition(":")
    if sep and not given:
        raise UsageError(f"--tcp {value!r}: expected PORT or HOST:PORT, e.g. 2087 or"
                         " 127.0.0.1:2087")
    try:
        number = int(port)
    except ValueError:
        raise UsageError(f"--tcp {value!r}: expected PORT or HOST:PORT, e.g. 2087 or"
                         " 127.0.0.1:2087 (the port must be a number)") from None
    if not 0 <= number <= 65535:
        raise UsageError(f"--tcp {value!r}: the port must be between 0 and 65535")
    given = given.strip("[]")
    if host is not None and given and given != host.strip("[]"):
        raise UsageError(f"--tcp {value!r} and --host {host!r} name different addresses")
    chosen = given or (host.strip("[]") if host is not None else DEFAULT_HOST)
    if not chosen:
        raise UsageError("--host: expected an address, e.g. 127.0.0.1")
    return chosen, number


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def run(args: argparse.Namespace) -> int:
    if args.host is not None and not args.tcp:
        raise UsageError("--host is an option of --tcp (stdio has no address)")
    address = parse_address(args.tcp, args.host) if args.tcp else None
    handler: logging.Handler = (logging.FileHandler(args.log_file, encoding="utf-8")
                                if args.log_file else logging.StreamHandler(sys.stderr))
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(getattr(logging, args.log_level.upper()))

    from budgetlens_lsp.server import create_server

    server = create_server()
    if address is not None:
        if not is_loopback(address[0]):
            print(f"budgetlens serve: listening on {address[0]}:{address[1]}, which is not a"
                  " loopback address: anyone who can reach it can drive the server and read"
                  " the workspace through it", file=sys.stderr)
        server.start_tcp(*address)
    else:
        server.start_io()
    return EXIT_OK
