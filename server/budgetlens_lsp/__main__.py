"""``python -m budgetlens_lsp serve [--stdio | --tcp [HOST:]PORT ...]``: the language server
(what the VS Code extension runs). The command-line tools are the ``budgetlens`` command."""

from __future__ import annotations

import argparse

from budgetlens_lsp import __version__
from budgetlens_lsp.serve import DESCRIPTION, HELP, AddressError, add_arguments, run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m budgetlens_lsp",
                                     description="The budgetlens language server.")
    parser.add_argument("--version", action="version", version=f"budgetlens {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    serve = sub.add_parser("serve", help=HELP, description=DESCRIPTION)
    add_arguments(serve)
    args = parser.parse_args(argv)
    try:
        run(args)
    except AddressError as exc:
        serve.error(str(exc))
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
