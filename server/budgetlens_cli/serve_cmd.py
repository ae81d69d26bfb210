"""``budgetlens serve [--stdio | --tcp [HOST:]PORT [--host HOST]]``: run the language server.

A thin wrapper over :mod:`budgetlens_lsp.serve` (the same options, the same start-up:
``parse_address``, ``is_loopback`` and the logging set-up live there); address problems
become this CLI's usage errors (exit status 2).
"""

from __future__ import annotations

import argparse
from typing import Any

from budgetlens_cli.main import EXIT_OK, UsageError
from budgetlens_lsp import serve

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser("serve", help=serve.HELP,
                                                description=serve.DESCRIPTION)
    serve.add_arguments(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        serve.run(args)
    except serve.AddressError as exc:
        raise UsageError(str(exc)) from None
    return EXIT_OK
