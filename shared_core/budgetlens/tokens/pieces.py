"""The call into a native tokenizer, made safe for every legal text.

tiktoken splits a text with a regex before it merges bytes (byte-pair encoding, BPE). In
``cl100k_base`` and ``o200k_base`` a run of whitespace followed by a non-space or by the end
of the text is matched by ``\\s+(?!\\S)``; on a run of about a million characters the regex
engine's backtracking stack overflows and tiktoken panics (``pyo3_runtime.PanicException``,
a ``BaseException``). ``encode_ordinary`` here cuts such runs out of the text and merges them
on their own, so the ids (and counts) are those tiktoken would give, and it turns any other
failure of the native code into a ``TokenizerError``. The Qwen 2 and Mistral Tekken families
(tiktoken over their own vocabularies) split with the same whitespace branches and use it
too.

Why the ids do not change. Let ``R = text[s:e]`` be a maximal run of whitespace without
``\\r``/``\\n`` (every character of ``R`` is in ``\\s``; ``text[s-1]`` is a newline or not
``\\s``), followed by the end of the text or by a character that is not ``\\s``:

1. No piece crosses ``s``: a piece that takes whitespace after a non-space is a
   punctuation piece taking ``[\\r\\n]*`` (o200k: ``[\\r\\n/]*``), and ``text[s]`` is neither;
   a ``\\s*[\\r\\n]+`` piece ends at its last newline, which is before ``s``.
2. At ``s``, every branch before ``\\s+(?!\\S)`` needs a non-space or a newline within two
   characters (``len(R) >= 2``), so that branch matches: all of ``R`` at the end of the
   text, else ``R`` without its last character (the look-ahead fails only before the
   non-space). That piece is merged alone here (tiktoken's ``_encode_single_piece``).
3. The regex has no look-behind or anchor, so the pieces from ``e - 1`` (or ``e``) on are
   those of that tail alone; and the pieces before ``s`` are those of ``text[:s]`` alone,
   since the only branch that reads past ``s`` differently at the end of a text is the
   look-ahead, which succeeds on ``text[s]`` (whitespace) as at the end.

``tests/core/test_token_pieces.py`` compares both ways on many generated texts.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

from budgetlens.tokens.errors import TokenizerError

#: Unicode White_Space (what ``\\s`` matches in tiktoken's regex engine) without ``\\r``/``\\n``
WHITESPACE_NOT_NEWLINE = ("\t\x0b\x0c \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005"
                          "\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")
#: Runs at least this long are merged on their own (far below the ~900,000 characters where
#: tiktoken fails; long enough that an ordinary text never takes this path).
LONG_RUN = 4096
_WS = re.escape(WHITESPACE_NOT_NEWLINE)


def _long_runs(min_len: int) -> re.Pattern[str]:
    # The look-behind starts a match only at a run's first character: each run is read once.
    return re.compile(f"(?<![{_WS}])[{_WS}]{{{min_len},}}")


_LONG = _long_runs(LONG_RUN)
_WS_SET = frozenset(WHITESPACE_NOT_NEWLINE)
T = TypeVar("T")


def guarded(name: str, call: Callable[[str], T], text: str) -> T:
    """``call(text)``, with a failure of native code (tiktoken's ``PanicException``, an
    error of ``tokenizers``) raised as a ``TokenizerError``; Ctrl-C and exits pass."""
    try:
        return call(text)
    except (KeyboardInterrupt, SystemExit, GeneratorExit):
        raise
    except TokenizerError:
        raise
    except BaseException as exc:  # pyo3's PanicException is a BaseException
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        raise TokenizerError(
            f"the text cannot be counted with {name}: the tokenizer failed on it"
            f" ({type(exc).__name__}{': ' + first if first else ''})") from None


def _may_hold_run(text: str, length: int) -> bool:
    """False when ``text`` certainly holds no run of ``length`` whitespace characters: such
    a run covers a whole block of ``length // 2`` starting at a multiple of it, so only
    those blocks are looked at (a 1.5 MB prose text: well under a millisecond, where the
    scan of ``cuts`` takes about 130 ms)."""
    half = max(1, length // 2)
    for p in range(0, len(text) - half + 1, half):
        if text[p] in _WS_SET and text[p:p + half].isspace():
            return True
    return False


def cuts(text: str, pattern: re.Pattern[str] = _LONG) -> list[tuple[int, int]]:
    """The ``(start, end)`` of each long run piece of ``text`` (point 2 of the module
    docstring), in order."""
    found: list[tuple[int, int]] = []
    for m in pattern.finditer(text):
        s, e = m.span()
        if e == len(text):
            found.append((s, e))
        elif text[e] not in "\r\n":  # before a newline the run is a \s*[\r\n]+ piece
            found.append((s, e - 1))
    return found


def encode_ordinary(encoding: object, text: str, name: str, *,
                    pattern: re.Pattern[str] | None = None) -> list[int]:
    """``encoding.encode_ordinary(text)`` (a tiktoken ``Encoding`` whose split pattern ends
    in ``\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`` and takes no whitespace after a non-space
    except newlines: ``cl100k_base``, ``o200k_base``, Qwen 2's and Mistral Tekken's), with
    long whitespace runs merged on their own (see the module docstring); raises
    ``TokenizerError`` instead of a native failure. ``pattern``: the runs to cut (default
    those of :data:`LONG_RUN` characters or more)."""
    enc: Callable[[str], list[int]] = encoding.encode_ordinary  # type: ignore[attr-defined]
    if pattern is None:
        if len(text) < LONG_RUN or not _may_hold_run(text, LONG_RUN):
            return guarded(name, enc, text)
        pattern = _LONG
    pieces = cuts(text, pattern)
    if not pieces:
        return guarded(name, enc, text)
    single: Callable[[bytes], list[int]] = encoding._encode_single_piece  # type: ignore[attr-defined]
    ids: list[int] = []
    at = 0
    for s, e in pieces:
        if s > at:
            ids += guarded(name, enc, text[at:s])
        ids += guarded(name, lambda t: single(t.encode("utf-8")), text[s:e])
        at = e
    if at < len(text):
        ids += guarded(name, enc, text[at:])
    return ids


__all__ = ["LONG_RUN", "WHITESPACE_NOT_NEWLINE", "cuts", "encode_ordinary", "guarded"]
