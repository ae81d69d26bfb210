"""``budgetlens mcp [--root DIR]``: the MCP server for coding agents, over stdio.

Its tools (``budgetlens_cli.mcp_server``) read files inside the root only (the current
folder, or ``--root``) and never write. The server needs the official MCP Python SDK, the
``mcp`` extra (``pip install 'budgetlens[mcp]'``); without it the command says so in one line
and exits with status 2. See docs/mcp.md.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from budgetlens_cli.main import UsageError

#: The one line printed when the SDK is not installed.
MISSING_EXTRA = ("budgetlens mcp needs the MCP Python SDK: install the extra with"
                 " pip install 'budgetlens[mcp]'")


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "mcp", help="run the MCP server for coding agents (stdio; needs budgetlens[mcp])",
        description="Serve budgetlens's tools (check, explain_diagnostic, hierarchy_context,"
                    " clamp_plan, fit_request) to an MCP client over stdio. Tools read files"
                    " inside the root only and never write.")
    p.add_argument("--root", metavar="DIR", default=".",
                   help="the folder every path argument must be inside (default: the"
                        " current folder)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    root = os.path.realpath(args.root)
    if not os.path.isdir(root):
        raise UsageError(f"--root {args.root}: not a folder")
    try:
        import mcp.server.mcpserver  # noqa: F401  (the extra's presence)
    except ImportError:
        raise UsageError(MISSING_EXTRA) from None
    from budgetlens_cli import mcp_server  # lazy: only this command needs the SDK

    mcp_server.serve(root)
    return 0
