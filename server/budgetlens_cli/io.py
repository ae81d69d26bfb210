"""Reading inputs named on the command line (``-`` is standard input)."""

from __future__ import annotations

import codecs
import os
import stat
import sys

from budgetlens_cli.main import UsageError

MAX_INPUT_BYTES = 256 * 1024 * 1024
#: At most this many problems of an invalid input file are listed.
MAX_LISTED_ERRORS = 20


def read_bytes_arg(name: str, limit: int | None = None) -> bytes:
    """The bytes of the file ``name`` (standard input for ``-``), without a UTF-8 BOM;
    UsageError when it is missing, a directory, not a regular file (a FIFO, a device, a
    socket: reading one could block forever or never end), unreadable or larger than
    ``limit`` bytes (default :data:`MAX_INPUT_BYTES`)."""
    limit = MAX_INPUT_BYTES if limit is None else limit
    try:
        data = sys.stdin.buffer.read(limit + 1) if name == "-" else \
            _read_regular_file(name, limit)
    except FileNotFoundError:
        raise UsageError(f"{name}: no such file") from None
    except OSError as exc:
        raise UsageError(f"{name}: cannot read ({exc.strerror or exc})") from None
    if len(data) > limit:
        raise UsageError(f"{name}: larger than {limit // (1024 * 1024)} MiB")
    return data[len(codecs.BOM_UTF8):] if data.startswith(codecs.BOM_UTF8) else data


def _check_regular(name: str, mode: int) -> None:
    if stat.S_ISDIR(mode):
        raise UsageError(f"{name}: is a directory, expected a file")
    if not stat.S_ISREG(mode):
        raise UsageError(f"{name}: not a regular file")


def _read_regular_file(name: str, limit: int) -> bytes:
    """Read a regular file; anything else is refused before a byte is read. The file is
    opened without blocking (a FIFO without a writer would block ``open`` itself) and
    checked again on the open descriptor, so a path swapped in between is caught too."""
    _check_regular(name, os.stat(name).st_mode)
    fd = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    with os.fdopen(fd, "rb") as fh:
        _check_regular(name, os.fstat(fd).st_mode)
        return fh.read(limit + 1)


def read_text_arg(name: str, limit: int | None = None) -> str:
    """The UTF-8 text of the file ``name`` (or standard input for ``-``) of at most ``limit``
    bytes; UsageError if not."""
    data = read_bytes_arg(name, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{name}: not UTF-8 text (byte {exc.start})") from None


def read_cut_text(name: str) -> tuple[str, int]:
    """Like ``read_text_arg`` for a possibly cut-off text: a text cut in the middle of a UTF-8
    character (a model's reply cut by bytes) is accepted, the incomplete character at the very
    end dropped. Returns (text, number of bytes dropped); invalid UTF-8 elsewhere is refused.
    """
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        text = decoder.decode(read_bytes_arg(name), final=False)
    except UnicodeDecodeError as exc:
        raise UsageError(f"{name}: not UTF-8 text (byte {exc.start})") from None
    pending, _ = decoder.getstate()
    return text, len(pending)


def invalid(name: str, what: str, lines: list[str]) -> UsageError:
    """The error of an input file that is read but invalid: its problems, one a line."""
    shown = lines[:MAX_LISTED_ERRORS]
    more = len(lines) - len(shown)
    tail = f"\n  ... and {more} more" if more > 0 else ""
    return UsageError(f"{name}: invalid {what}:\n  " + "\n  ".join(shown) + tail)
