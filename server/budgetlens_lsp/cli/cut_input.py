"""Reading a possibly cut-off text named on the command line (``-`` is standard input).

Like ``io.read_text_arg``, except that a text cut in the middle of a UTF-8 character (a
model's reply cut by bytes) is accepted: the incomplete character at the very end is dropped
and reported. Invalid UTF-8 anywhere else is still refused.
"""

from __future__ import annotations

import codecs
import sys
from pathlib import Path

from budgetlens_lsp.cli.io import MAX_INPUT_BYTES
from budgetlens_lsp.cli.main import UsageError


def read_cut_text(name: str) -> tuple[str, int]:
    """(text, number of bytes of an incomplete last character dropped); UsageError if bad."""
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
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8):]
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        text = decoder.decode(data, final=False)
    except UnicodeDecodeError as exc:
        raise UsageError(f"{name}: not UTF-8 text (byte {exc.start})") from None
    pending, _ = decoder.getstate()
    return text, len(pending)
