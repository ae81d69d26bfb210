"""Re-reading a YAML text that differs from one read just before inside one scalar value.

An editor sends the whole buffer after every keystroke, and most keystrokes in a pipeline
change one scalar: a digit of ``max_output_tokens: 512``, a letter of a prompt key or of a
quoted template. ``reread`` keeps the last few texts the one-pass reader
(``budgetlens.yamldoc.simple``) read, with their values and spans. A new text that differs
from one of them only inside one scalar *value* (never a key) that stays one scalar of the
same style is answered without reading it: the value tree is copied along that scalar's path
(everything else is shared with the earlier answer) with the new value set, and every offset
from the scalar's end on moves by the change in length (``ShiftedSpans`` moves them when a
span is asked for). Anything else is read in full by the caller.

Why that is the full reading's answer, exactly. The scalar qualifies when, in both the old
and the new text, its characters (start to end of its span) are

- plain: a word character, or one of ``-.+`` followed by one, then word characters,
  ``.+/=()$-`` and inner runs of spaces (no indicator a plain scalar could stop or start at:
  no ``:``, ``#``, ``,``, brackets, quotes, ``&``, ``*``, ``!``, ``|``, ``>``, ``%``, ``@``,
  no line break, no tab, nothing non-printable); or
- single- or double-quoted on one line, without the quote inside and (double) without a
  backslash, of printable characters: the value is the text between the quotes;

at most ``MAX_SCALAR`` characters long, and the text right after it (unchanged) is blanks
then a comment, a line end, the end of the text, or a flow ``,``, ``]`` or ``}``. The text
before the scalar is the same, so the scanner reaches its start in the same state; the
scalar then scans as one token of the same style ending at the same place relative to what
follows (which stops both the old and the new one; nothing after it can make it a key:
it is not followed by ``:``, and it stays under the 1,024 characters of a simple key), so
every later token is the same, moved by the change in length. The span starts where the
token starts (an anchor or a tag would start the span with ``&`` or ``!``, which is refused),
so no alias repeats it. The new value is resolved and made as the one-pass reader makes it
(``simple.plain_value``); a value it would not take (``<<``, ``=``, a number too long) is
read in full. Only documents the one-pass reader read are kept, and nothing it checks (keys,
anchors, depth, aliases) changes. tests/core/yamldoc/test_incremental.py compares the two
readings on thousands of random edits.
"""

from __future__ import annotations

import bisect
import re
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from itertools import compress, count
from operator import ne
from typing import Any

from budgetlens.yamldoc.compose import SCALAR
from budgetlens.yamldoc.simple import RawSpan, YamlPath, plain_value

#: Whether ``reread`` answers at all (a switch for tests and benchmarks).
ENABLED = True
#: Readings kept (the last ones, any file): an editor re-reads the buffer it just read.
CAPACITY = 4
#: At most this many characters of text kept in all (older readings are dropped first; a
#: longer text is not kept).
MAX_KEPT_CHARS = 500_000
#: Longest scalar re-read in place (well under the 1,024 characters of a simple key).
MAX_SCALAR = 1000
#: Edited scalars whose offsets move before the spans are rebuilt once in full.
MAX_CUTS = 32

_WORD = r"[\w.+/=()$-]"
#: The characters YAML does not allow in a quoted scalar: all but its printable set (\t,
#: \x20-\x7e, \xa0-\u2027, \u202a-\ud7ff, \ue000-\ufefe, \uff00-\ufffd, astral). Written
#: as what is left out: the class of the allowed ranges took 3 ms to compile per pattern, in
#: every process that reads YAML.
_UNPRINTABLE = "\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff"
_SHAPES: dict[str | None, re.Pattern[str]] = {
    None: re.compile(rf"[-.+]?\w(?:{_WORD}| +(?={_WORD}))*\Z"),
    "'": re.compile(f"'(?:(?!')[^{_UNPRINTABLE}])*'\\Z"),
    '"': re.compile(f'"(?:(?![\\\\"])[^{_UNPRINTABLE}])*"\\Z'),
}
_BREAK = re.compile("[\r\n\x85\u2028\u2029]")
#: What may follow a scalar re-read in place.
_AFTER = re.compile(r"[ \t]+#|[ \t]*(?:[,\]}\r\n\x85\u2028\u2029]|\Z)")


class ShiftedSpans(Mapping[YamlPath, RawSpan]):
    """The spans of a full reading with every offset moved by the edits since: an offset at
    or after ``cuts[i]`` (the end of an edited scalar, in the full reading's offsets) and
    before the next cut moves by ``sums[i]``."""

    __slots__ = ("_base", "_cuts", "_first", "_sums")

    def __init__(self, base: dict[YamlPath, RawSpan], cuts: tuple[int, ...],
                 sums: tuple[int, ...]) -> None:
        self._base = base
        self._cuts = cuts
        self._sums = sums
        self._first = cuts[0]

    def _at(self, offset: int) -> int:
        if offset < self._first:
            return offset
        return offset + self._sums[bisect.bisect_right(self._cuts, offset) - 1]

    def __getitem__(self, path: YamlPath) -> RawSpan:
        span = self._base[path]
        start, end, kind, flow, key_start, key_end, style = span
        first = self._first
        if end < first and (key_end is None or key_end < first):
            return span  # before every edit (an alias's key comes after its span)
        at = self._at
        return (at(start), at(end), kind, flow, None if key_start is None else at(key_start),
                None if key_end is None else at(key_end), style)

    def __contains__(self, path: object) -> bool:
        return path in self._base

    def __iter__(self) -> Iterator[YamlPath]:
        return iter(self._base)

    def __len__(self) -> int:
        return len(self._base)


class _Base:
    """The spans of one full reading and, made when first needed, its scalar values sorted
    by start: starts, and (start, end, path, style) for each."""

    __slots__ = ("_entries", "_starts", "raw")

    def __init__(self, raw: dict[YamlPath, RawSpan]) -> None:
        self.raw = raw
        self._starts: list[int] | None = None
        self._entries: list[tuple[int, int, YamlPath, str | None]] = []

    def scalars(self) -> tuple[list[int], list[tuple[int, int, YamlPath, str | None]]]:
        if self._starts is None:
            by_start: dict[int, tuple[int, int, YamlPath, str | None] | None] = {}
            for path, (start, end, kind, _, _, _, style) in self.raw.items():
                if kind == SCALAR and path and end > start:
                    # an alias shares its anchor's span: neither is re-read in place
                    by_start[start] = None if start in by_start else (start, end, path, style)
            self._entries = sorted(e for e in by_start.values() if e is not None)
            self._starts = [e[0] for e in self._entries]
        return self._starts, self._entries


class _Read:
    """One reading kept: the text, the loader class it was read with, the value, and the
    spans as the full reading ``base`` moved by the edits since (``cuts``, ``deltas``)."""

    __slots__ = ("base", "cuts", "deltas", "loader", "spans", "sums", "text", "value")

    def __init__(self, text: str, loader: type, value: Any, base: _Base,
                 cuts: tuple[int, ...] = (), deltas: tuple[int, ...] = ()) -> None:
        self.text = text
        self.loader = loader
        self.value = value
        self.base = base
        self.cuts = cuts
        self.deltas = deltas
        sums: list[int] = []
        total = 0
        for delta in deltas:
            total += delta
            sums.append(total)
        self.sums = tuple(sums)
        self.spans: Mapping[YamlPath, RawSpan] = (
            ShiftedSpans(base.raw, cuts, self.sums) if cuts else base.raw)

    def moved(self, offset: int) -> int:
        """``offset`` of the full reading in this text."""
        cuts = self.cuts
        if not cuts or offset < cuts[0]:
            return offset
        return offset + self.sums[bisect.bisect_right(cuts, offset) - 1]


_READS: OrderedDict[str, _Read] = OrderedDict()
_kept_chars = 0  # the characters of the texts in _READS
_LOCK = threading.Lock()
#: How often ``reread`` answered from a reading kept of the same text ("same") or of one
#: edited inside a scalar ("edit"), and how often it did not ("none"); for tests and
#: benchmarks.
counts = {"same": 0, "edit": 0, "none": 0}
#: After this many answers in a row that found nothing (many files read once, as a check or
#: an index does), only the last ``QUIET_TRIES`` readings are tried as the text edited.
QUIET_AFTER = 16
QUIET_TRIES = 2
_misses = [0]  # the answers in a row that found nothing


def clear() -> None:
    """Forget every reading kept."""
    global _kept_chars
    with _LOCK:
        _READS.clear()
        _kept_chars = 0


def remember(text: str, loader: type, value: Any, spans: dict[YamlPath, RawSpan]) -> None:
    """Keep the full one-pass reading of ``text`` (with a loader of class ``loader``)."""
    if ENABLED and spans and len(text) <= MAX_KEPT_CHARS:
        _keep(_Read(text, loader, value, _Base(spans)))


def _keep(read: _Read) -> None:
    global _kept_chars
    with _LOCK:
        if read.text not in _READS:
            _kept_chars += len(read.text)
        _READS[read.text] = read
        _READS.move_to_end(read.text)
        while len(_READS) > CAPACITY or _kept_chars > MAX_KEPT_CHARS:
            _kept_chars -= len(_READS.popitem(last=False)[0])


def reread(text: str, loader: type) -> tuple[Any, Mapping[YamlPath, RawSpan]] | None:
    """The value and spans of ``text`` from a reading kept (the same text, or one edited
    inside a scalar value: see the module), or ``None`` when it must be read in full."""
    if not ENABLED:
        return None
    with _LOCK:
        same = _READS.get(text)
        if same is not None and same.loader is loader:
            _READS.move_to_end(text)
            counts["same"] += 1
            _misses[0] = 0
            return same.value, same.spans
        kept = [r for r in reversed(_READS.values()) if r.loader is loader]
    if _misses[0] > QUIET_AFTER:
        del kept[QUIET_TRIES:]  # reading many files (a check, an index): try the last ones
    for old in kept:
        read = _edited(old, text)
        if read is not None:
            if len(read.cuts) > MAX_CUTS:
                read = _Read(read.text, loader, read.value,
                             _Base({path: read.spans[path] for path in read.base.raw}))
            _keep(read)
            counts["edit"] += 1
            _misses[0] = 0
            return read.value, read.spans
    counts["none"] += 1
    _misses[0] += 1
    return None


def _edited(old: _Read, text: str) -> _Read | None:
    """``text`` read from ``old`` when they differ inside one scalar value that stays one
    (see the module), else ``None``."""
    old_text = old.text
    delta = len(text) - len(old_text)
    if not -MAX_SCALAR <= delta <= MAX_SCALAR:
        return None
    first = _common_prefix(old_text, text)
    # the changes must lie on the line of the first one: the rest of the text is the same
    line_break = _BREAK.search(old_text, first)
    line_end = line_break.start() if line_break is not None else len(old_text)
    if line_end + delta < first or not text.endswith(old_text[line_end:]):
        return None
    last = line_end - _common_suffix(old_text[first:line_end], text[first:line_end + delta],
                                     min(line_end, line_end + delta) - first)
    found = _scalar_at(old, first, last)
    if found is None:
        return None
    start, end, base_end, path, style = found
    shape = _SHAPES.get(style)
    new_end = end + delta
    if shape is None or end - start > MAX_SCALAR or new_end - start > MAX_SCALAR \
            or not shape.match(old_text, start, end) or not shape.match(text, start, new_end) \
            or not _AFTER.match(text, new_end):
        return None
    raw = text[start:new_end]
    if style is None:
        taken, value = plain_value(old.loader, raw)
        if not taken:
            return None
    else:
        value = raw[1:-1]
    cuts, deltas = _with_cut(old.cuts, old.deltas, base_end, delta)
    return _Read(text, old.loader, _replaced(old.value, path, value), old.base, cuts, deltas)


def _scalar_at(old: _Read, first: int, last: int
               ) -> tuple[int, int, int, YamlPath, str | None] | None:
    """The scalar value of ``old`` whose span (in ``old.text``) holds ``[first, last)``:
    its start and end there, its end in the full reading, its path and style."""
    starts, entries = old.base.scalars()
    i = bisect.bisect_right(starts, first, key=old.moved) - 1
    if i < 0:
        return None
    base_start, base_end, path, style = entries[i]
    start, end = old.moved(base_start), old.moved(base_end)
    if not (start <= first and last <= end):
        return None
    return start, end, base_end, path, style


def _with_cut(cuts: tuple[int, ...], deltas: tuple[int, ...], at: int,
              delta: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The cuts and their deltas with ``delta`` more from ``at`` on (a cut whose delta comes
    to 0 is dropped)."""
    if delta == 0:
        return cuts, deltas
    i = bisect.bisect_left(cuts, at)
    if i < len(cuts) and cuts[i] == at:
        total = deltas[i] + delta
        if total == 0:
            return cuts[:i] + cuts[i + 1:], deltas[:i] + deltas[i + 1:]
        return cuts, (*deltas[:i], total, *deltas[i + 1:])
    return (*cuts[:i], at, *cuts[i:]), (*deltas[:i], delta, *deltas[i:])


def _replaced(node: Any, path: YamlPath, value: Any) -> Any:
    """A copy of ``node`` with ``value`` at ``path``: the collections along the path are
    copied, everything else is shared."""
    if not path:
        return value
    copy: Any = dict(node) if type(node) is dict else list(node)
    head = path[0]
    copy[head] = _replaced(node[head], path[1:], value)
    return copy


def _common_prefix(a: str, b: str) -> int:
    """The length of the longest common prefix of ``a`` and ``b``: windows doubling in size
    compared at once, then halving into the one that differs, then its characters."""
    n = min(len(a), len(b))
    lo, step = 0, 64
    while True:  # a[:lo] == b[:lo]
        end = min(n, lo + step)
        if not a.startswith(b[lo:end], lo):
            break
        if end == n:
            return n
        lo, step = end, step * 2
    hi = end  # the first difference is in [lo, hi)
    while hi - lo > 64:
        mid = (lo + hi) // 2
        if a.startswith(b[lo:mid], lo):
            lo = mid
        else:
            hi = mid
    return next(compress(count(lo), map(ne, a[lo:hi], b[lo:hi])), hi)


def _common_suffix(a: str, b: str, limit: int) -> int:
    """The length (at most ``limit``) of the longest common suffix of ``a`` and ``b``."""
    la, lb = len(a), len(b)
    lo, hi = 0, limit
    while hi - lo > 64:  # a[la - lo:] == b[lb - lo:]; the answer is at most hi
        mid = (lo + hi + 1) // 2
        if a.startswith(b[lb - mid:lb - lo], la - mid):
            lo = mid
        else:
            hi = mid - 1
    tail_a, tail_b = a[la - hi:la - lo], b[lb - hi:lb - lo]
    return lo + next(compress(count(), map(ne, reversed(tail_a), reversed(tail_b))), hi - lo)


__all__ = ["CAPACITY", "ENABLED", "MAX_SCALAR", "ShiftedSpans", "clear", "remember", "reread"]
