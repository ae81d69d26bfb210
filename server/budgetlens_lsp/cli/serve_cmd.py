"""``budgetlens serve [--stdio | --tcp HOST:PORT]``: run the language server."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

from budgetlens_lsp.cli.main import EXIT_OK, UsageError

LOG_LEVELS = ("debug", "info", "warning", "error")


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "serve", help="run the language server (stdio by default)",
        description="Run the budgetlens language server. It speaks LSP on standard input/output"
                    " by default, or listens on a TCP address with --tcp.")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--stdio", action="store_true", help="use standard input/output (default)")
    mode.add_argument("--tcp", metavar="HOST:PORT", help="listen on this TCP address")
    p.add_argument("--log-file", metavar="FILE",
                   help="write the server log to FILE (default: standard error)")
    p.add_argument("--log-level", choices=LOG_LEVELS, default="warning",
                   help="log level (default warning)")
    p.set_defaults(run=run)


def parse_address(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not host:
        raise UsageError(f"--tcp {value!r}: expected HOST:PORT, e.g. 127.0.0.1:2087")
    try:
        number = int(port)
    except ValueError:
        raise UsageError(f"--tcp {value!r}: the port must be a number") from None
    if not 0 <= number <= 65535:
        raise UsageError(f"--tcp {value!r}: the port must be between 0 and 65535")
    return host.strip("[]"), number


def run(args: argparse.Namespace) -> int:
    address = parse_address(args.tcp) if args.tcp else None
    handler: logging.Handler = (logging.FileHandler(args.log_file, encoding="utf-8")
                                if args.log_file else logging.StreamHandler(sys.stderr))
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(getattr(logging, args.log_level.upper()))

    from budgetlens_lsp.server import create_server

    server = create_server()
    if address is not None:
        server.start_tcp(*address)
    else:
        server.start_io()
    return EXIT_OK
