"""``merge_with_overlap``: stitch a continuation fragment onto the cut text it continues.

A continuation repeats the end of the text it continues (the overlap) and then goes on. The
merge finds the longest suffix of the base that the fragment starts with (at least
``min_overlap`` characters, default ``MIN_OVERLAP`` = 1) and appends the rest of the fragment.

Tolerated in the fragment: leading whitespace and a Markdown code fence around it (tried
when the fragment as given does not overlap); trailing whitespace of the base is tried
without it in the same way. A fragment that starts the whole document again from the top
(its first ``RESTART_PREFIX`` characters, blanks aside, equal the base's, further than any
overlap reaches) is a restart: the merged text is the fragment alone, ``restarted`` is true.
With neither, the merged text is ``base + fragment`` exactly as given (``has_overlap`` false).
The overlap search is linear in the length of the inputs (see ``longest_overlap``).

>>> merge_with_overlap('{"a": [1, 2', '[1, 2, 3]}').merged
'{"a": [1, 2, 3]}'
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import chain, islice

MIN_OVERLAP = 1
RESTART_PREFIX = 16
_FENCE_OPEN = re.compile(r"[ \t\r\n]*```[^\n]*\n")
_SEPARATOR = None  # between the pattern and the base's tail: equal to no character


@dataclass(frozen=True)
class MergeResult:
    """The merged text and how it was found."""

    merged: str
    has_overlap: bool
    overlap_length: int
    restarted: bool = False
    fragment_trimmed: int = field(default=0, metadata={"json": False})
    """Characters dropped from the fragment's start (blanks, fence); not in the JSON form."""


def longest_overlap(base: str, fragment: str, min_overlap: int = MIN_OVERLAP) -> int:
    """Length of the longest suffix of ``base`` that ``fragment`` starts with (>= min), or 0.

    Linear time: one Knuth-Morris-Pratt pass of the fragment's first ``limit`` characters
    over the last ``limit`` characters of the base (``limit`` = the shorter length), at most
    ``4 * limit`` character comparisons, nothing copied per candidate position.
    """
    return overlap_with_work(base, fragment, min_overlap)[0]


def overlap_with_work(base: str, fragment: str,
                      min_overlap: int = MIN_OVERLAP) -> tuple[int, int]:
    """``longest_overlap`` and the number of character comparisons it made (for tests).

    One Knuth-Morris-Pratt prefix-function pass over the pattern (the fragment's first
    ``limit`` characters), a separator that matches nothing, then the base's last ``limit``
    characters: the prefix length matched at the very end is the overlap.
    """
    limit = min(len(base), len(fragment))
    if limit < max(min_overlap, 1):
        return 0, 0
    pattern = fragment[:limit]
    # border[i]: length of the longest proper prefix of pattern[:i + 1] that is also its suffix
    border = [0] * limit
    work = 0
    k = 0  # the longest prefix of the pattern ending at the current character
    tail = base[len(base) - limit:]
    for i, c in enumerate(chain(islice(pattern, 1, None), (_SEPARATOR,), tail), 1):
        while k:
            work += 1
            if pattern[k] == c:
                break
            k = border[k - 1]
        else:
            work += 1
            if pattern[0] != c:
                continue
        k += 1
        if i < limit:
            border[i] = k
    return (k if k >= max(min_overlap, 1) else 0), work


def _body_span(fragment: str) -> tuple[int, int]:
    """The fragment without a surrounding code fence and leading blanks, as a span."""
    start, end = 0, len(fragment)
    m = _FENCE_OPEN.match(fragment)
    if m is not None:
        start = m.end()
        end = _fence_close(fragment, start)
    while start < end and fragment[start] in " \t\r\n":
        start += 1
    return start, end


def _fence_close(fragment: str, start: int) -> int:
    """Where a closing fence (a newline, blanks, three backticks, trailing blanks) begins at
    or after ``start``, or ``len(fragment)`` without one: what a search for
    ``\\n?[ \\t]*```[ \\t\\r\\n]*\\Z`` gives, found from the end in linear time (that
    regex searched from the front is quadratic on a long run of blanks)."""
    close = len(fragment.rstrip(" \t\r\n")) - 3
    if close < start or not fragment.startswith("```", close):
        return len(fragment)
    while close > start and fragment[close - 1] in " \t":
        close -= 1
    if close > start and fragment[close - 1] == "\n":
        close -= 1
    return close


def _common_prefix(a: str, b: str, limit: int) -> int:
    n = min(len(a), len(b), limit)
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def merge_with_overlap(base: str, fragment: str, *,
                       min_overlap: int = MIN_OVERLAP) -> MergeResult:
    """Append ``fragment`` to ``base`` without repeating their overlap (see module docs).

    When no overlap is found, ``merged`` is ``base + fragment`` exactly as given (nothing
    trimmed) and ``has_overlap`` is false: do not trust it.
    """
    trimmed, body_end = _body_span(fragment)
    cleaned = fragment[trimmed:body_end]
    attempts = ((base, fragment, 0), (base, cleaned, trimmed),
                (base.rstrip(), cleaned, trimmed))
    best: tuple[str, str, int, int] | None = None
    for b, f, cut in attempts:
        if not f:
            continue
        length = longest_overlap(b, f, min_overlap)
        if length:
            best = (b, f, length, cut)
            break
    # A restart: the fragment begins like the document itself, further than the overlap.
    stripped_base = base.lstrip()
    if cleaned and stripped_base:
        need = min(RESTART_PREFIX, len(stripped_base))
        same = _common_prefix(stripped_base, cleaned, max(need, RESTART_PREFIX) + 1)
        overlap = best[2] if best else 0
        whole_base = best is not None and overlap >= len(best[0])
        if same >= need and same > overlap and not whole_base:
            return MergeResult(merged=cleaned, has_overlap=False, overlap_length=0,
                               restarted=True, fragment_trimmed=trimmed)
    if best is None:
        return MergeResult(merged=base + fragment, has_overlap=False, overlap_length=0)
    b, f, length, cut = best
    return MergeResult(merged=b + f[length:], has_overlap=True, overlap_length=length,
                       fragment_trimmed=cut)
