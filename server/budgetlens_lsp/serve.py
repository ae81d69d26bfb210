"""Starting the language server: ``serve [--stdio | --tcp [HOST:]PORT [--host HOST]]``.

Used by ``python -m budgetlens_lsp serve`` (what the VS Code extension runs) and by the
CLI's ``budgetlens serve``; both register the same options with :func:`add_arguments` and
call :func:`run`.

Over TCP the server listens on the loopback address (127.0.0.1) unless told otherwise. The
LSP has no authentication: whoever connects to the port drives the server, and the server
reads (and its commands return) what its user can read inside the workspace folders the
client names. A non-loopback address is allowed when asked for, with a warning.
"""

from __future__ import annotations

import argparse
import gc
import ipaddress
import logging
import sys

LOG_LEVELS = ("debug", "info", "warning", "error")
DEFAULT_HOST = "127.0.0.1"
DESCRIPTION = (
    "Run the budgetlens language server. It speaks LSP on standard input/output by default,"
    " or listens on a TCP port with --tcp. Over TCP anyone who can connect to the port can"
    " drive the server and read, through it, files its user can read inside the workspace"
    f" folders; it listens on {DEFAULT_HOST} (this machine only) unless --host or HOST: says"
    " otherwise.")
HELP = "run the language server (stdio by default)"


class AddressError(ValueError):
    """Bad ``--tcp``/``--host`` options, or no standard input or output to serve over
    (a usage error: exit status 2)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``serve``."""
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--stdio", action="store_true", help="use standard input/output (default)")
    mode.add_argument("--tcp", metavar="[HOST:]PORT",
                      help=f"listen on this TCP port (on {DEFAULT_HOST} unless HOST or --host"
                           " is given)")
    parser.add_argument("--host", metavar="HOST",
                        help=f"the address --tcp listens on (default {DEFAULT_HOST}, loopback)")
    parser.add_argument("--log-file", metavar="FILE",
                        help="write the server log to FILE (default: standard error)")
    parser.add_argument("--log-level", choices=LOG_LEVELS, default="warning",
                        help="log level (default warning)")


def parse_address(value: str, host: str | None = None) -> tuple[str, int]:
    """``--tcp`` (``PORT`` or ``HOST:PORT``) and ``--host`` as ``(host, port)``; the host
    defaults to the loopback address. :class:`AddressError` for a bad one."""
    given, sep, port = value.rpartition(":")
    if sep and not given:
        raise AddressError(f"--tcp {value!r}: expected PORT or HOST:PORT, e.g. 2087 or"
                           " 127.0.0.1:2087")
    try:
        number = int(port)
    except ValueError:
        raise AddressError(f"--tcp {value!r}: expected PORT or HOST:PORT, e.g. 2087 or"
                           " 127.0.0.1:2087 (the port must be a number)") from None
    if not 0 <= number <= 65535:
        raise AddressError(f"--tcp {value!r}: the port must be between 0 and 65535")
    given = given.strip("[]")
    if host is not None and given and given != host.strip("[]"):
        raise AddressError(f"--tcp {value!r} and --host {host!r} name different addresses")
    chosen = given or (host.strip("[]") if host is not None else DEFAULT_HOST)
    if not chosen:
        raise AddressError("--host: expected an address, e.g. 127.0.0.1")
    return chosen, number


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def address_of(args: argparse.Namespace) -> tuple[str, int] | None:
    """The TCP address the options ask for; None for stdio."""
    if args.host is not None and not args.tcp:
        raise AddressError("--host is an option of --tcp (stdio has no address)")
    return parse_address(args.tcp, args.host) if args.tcp else None


def configure_logging(log_file: str | None, level: str) -> None:
    handler: logging.Handler = (logging.FileHandler(log_file, encoding="utf-8")
                                if log_file else logging.StreamHandler(sys.stderr))
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(getattr(logging, level.upper()))


def run(args: argparse.Namespace) -> None:
    """Serve until the client disconnects; :class:`AddressError` for bad options (before
    anything starts)."""
    address = address_of(args)
    if address is None and (sys.stdin is None or sys.stdout is None):  # `serve <&-` / `>&-`
        raise AddressError("standard input or output is closed: nothing to serve over"
                           " (--tcp PORT serves over TCP)")
    configure_logging(args.log_file, args.log_level)
    # No cyclic garbage collection while the server loads: the imports allocate hundreds of
    # thousands of objects (classes, functions, pydantic and lsprotocol tables) that live as
    # long as the process, and a full collection over them finds nothing to free. They are
    # then frozen (moved out of the collector's sight, see session.configure_gc).
    gc.disable()
    try:
        # imported here, after the options are checked: a usage error answers at once,
        # without loading pygls and the core (start-up speed; no cycle)
        from budgetlens_lsp.server import create_server
        from budgetlens_lsp.session import configure_gc  # as above: start-up speed, no cycle

        server = create_server()
        configure_gc(server.ctx.session)  # the one place the server tunes the collector
        gc.freeze()
    finally:
        gc.enable()
    if address is None:
        server.start_io()
        return
    if not is_loopback(address[0]):
        print(f"budgetlens serve: listening on {address[0]}:{address[1]}, which is not a"
              " loopback address: anyone who can reach it can drive the server and read"
              " the workspace through it", file=sys.stderr)
    server.start_tcp(*address)
