"""Reading inputs named on the command line (``-`` is standard input)."""

from __future__ import annotations

import sys
from pathlib import Path

from budgetlens_lsp.cli.main import UsageError

MAX_INPUT_BYTES = 256 * 1024 * 1024


def read_text_arg(name: str) -> str:
    """The UTF-8 text of the file ``name`` (or standard input for ``-``); UsageError if not."""
    try:
        if name == "-":
            data = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
        else:
            path = Path(name)
            if path.is_dir():
                raise UsageError(f"{name}: is a directory, expected a file")
            with path.open("rb") as fh:
                data = fh.read(MAX_INPUT_BYTES + 1)
    except FileNotFoundError:
        raise UsageError(f"{name}: no such file") from None
    except OSError as exc:
        raise UsageError(f"{name}: cannot read ({exc.strerror or exc})") from None
    if len(data) > MAX_INPUT_BYTES:
        raise UsageError(f"{name}: larger than {MAX_INPUT_BYTES // (1024 * 1024)} MiB")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{name}: not UTF-8 text (byte {exc.start})") from None
