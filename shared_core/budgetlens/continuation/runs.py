"""Runs: many items of a long array, skipped in bulk by the scan and read back on demand.

The scan (``cut``) keeps many items of an array as one RUN child. ``_bulk_run`` finds where
the run ends by a separator looked for far ahead with ``str.rfind``, and checks its items with
one call of the C scanner. A RUN stands for at least ``RUN_MIN_ITEMS`` items.

The rendering (``render``) reads a RUN back only as far as its budget reaches:

- ``scalar_tail``, ``record_tail`` and ``compact_record_tail``: the last items that fit,
  for runs of scalars, of flat records, and of records written as ``json.dumps`` writes them;
- ``split_run`` and ``split_known``: a RUN cut into a shorter RUN and single children;
- ``expand_run``: every single child a RUN stands for.

``scalar_floor`` bounds the cost of a decoded item from below, so items that cannot fit are
turned down without reading them.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable
from itertools import accumulate, chain, islice, repeat
from operator import itemgetter, mul, sub
from typing import Any, NamedTuple

from budgetlens.continuation import syntax
from budgetlens.continuation.syntax import (
    ARRAY,
    JSON_STRING,
    LITERAL,
    NUMBER,
    OBJECT,
    STRING,
    Child,
    ValueKind,
    _child,
    _scan_once,
)

# Bound by assignment, not by ``from ... import``: CPython 3.11 compiles ``name.method()`` on a
# name a ``from`` import binds as an attribute load that makes a bound method on every call,
# and on any other global as LOAD_METHOD, which makes none. Runs are read per item.
_ARRAY_SEP, _KIND_OF_TYPE, _WS = syntax._ARRAY_SEP, syntax._KIND_OF_TYPE, syntax._WS
_SEPARATOR = re.compile(r"[ \t\n\r]*,?[ \t\n\r]*")

# A long array is skipped in bulk: a run of its items is checked by one call of the C scanner
# (see ``_bulk_run``) and kept as one RUN child; the renderer splits a run only if its budget
# reaches it (``split_run``).
RUN = ValueKind.RUN
RUN_MIN_ITEMS = 4          # a RUN stands for at least this many items
_BULK_AFTER = 1            # single items scanned before a bulk skip is tried
_BULK_TAIL = 512           # the last characters of the text are never skipped in bulk
_BULK_CHUNK = 1 << 14      # the most characters one bulk skip covers (small: a copy this size
                           # reuses freed memory, a larger one costs fresh pages)
_BULK_TRIES = 2            # separators tried per bulk skip before giving up on the array


def _probe_items(text: str, start: int, end: int) -> list[Any] | None:
    """The complete array items ``text[start:end]`` holds, decoded (one C scanner call), or
    None when it is not a comma-separated list of complete values. A cut inside a string
    leaves an odd number of quotes and one inside a nested container leaves its brackets
    unbalanced, so a wrong separator never passes."""
    probe = "["
    probe += text[start:end]
    probe += "]"
    try:
        value, stop = _scan_once(probe, 0)
    except (StopIteration, ValueError, RecursionError):
        return None
    if stop != len(probe) or type(value) is not list:
        return None
    return value


def _strip_end(text: str, start: int, end: int) -> int:
    """``end`` moved back over whitespace (not before ``start``)."""
    while end > start and text[end - 1] in " \t\n\r":
        end -= 1
    return end


def _bulk_run(text: str, pos: int, prev: Child,
              n: int) -> tuple[Child, int, list[Any]] | None:
    """Skip many items of an array at once: the separator seen before ``pos`` (with the
    closing and opening characters around it, when the items are strings or containers) is
    looked for far ahead with ``str.rfind``, and the items up to it are checked by one C
    scanner call. Returns the RUN child, where the next item starts and the decoded items,
    or None."""
    sep = text[prev.end:pos]
    lead = text[prev.end - 1] if prev.kind in (OBJECT, ARRAY, STRING) else ""
    trail = text[pos] if text[pos] in '{["' else ""
    pattern = lead + sep + trail
    stop = min(n - _BULK_TAIL, pos + _BULK_CHUNK)
    for _ in range(_BULK_TRIES):
        at = text.rfind(pattern, pos, stop)
        if at <= pos:
            return None
        item_end = _strip_end(text, pos, at + len(lead))
        items = _probe_items(text, pos, item_end)
        if items is not None and len(items) >= RUN_MIN_ITEMS:
            return (_child((pos, item_end, RUN, len(items), -1, -1)),
                    at + len(lead) + len(sep), items)
        stop = at + len(pattern) - 1
    return None


def scalar_floor(value: Any, cap: int) -> int:
    """A lower bound of the budget cost of a decoded JSON value (the characters of its scalar
    literals as written): a string is written with at least its decoded characters and two
    quotes, an integer with at least its sign and digits (``_int_floor``), any other number
    with at least three characters (a fraction or an exponent: a digit, ``.`` or ``e`` and a
    digit), ``true``/``false``/``null`` as is (a duplicate key's dropped value only lowers
    it). Stops once above ``cap`` (after a string or a container's items: some number above
    ``cap``, which one depends on the order read)."""
    t = type(value)
    if t is not dict and t is not list:
        return _scalar_floor_of(value)
    total = 0
    stack = [value]
    pop, push = stack.pop, stack.append
    while stack:
        v = pop()
        for item in (v.values() if type(v) is dict else v):
            t = type(item)
            if t is str:
                total += len(item) + 2
                if total > cap:
                    return total
            elif t is dict or t is list:
                push(item)
            elif item is None or t is bool:
                total += 5 - (item is not False)  # null, true: 4; false: 5
            elif t is int:  # _int_floor, inlined
                total += ((item.bit_length() or 1) - 1) * 30102 // 100000 + 1 + (item < 0)
            else:
                total += 3
        if total > cap:
            return total
    return total


def _scalar_floor_of(value: Any) -> int:
    """``scalar_floor`` of a scalar."""
    if type(value) is str:
        return len(value) + 2
    if value is None or value is True:
        return 4
    if value is False:
        return 5
    return _int_floor(value) if type(value) is int else 3


def _int_floor(value: int) -> int:
    """The fewest characters an integer decoded by the C scanner was written with: its sign
    and its digits (a JSON integer has no leading zeros, and one written with a fraction or an
    exponent decodes to a float), at least ``(bits - 1) * log10(2) + 1`` of them (30102 /
    100000 is under log10(2): never more than the true count)."""
    if not value:
        return 1
    return (value.bit_length() - 1) * 30102 // 100000 + 1 + (value < 0)


_SCALAR_ITEM = re.compile(
    r'(' + JSON_STRING + r'|[^ \t\n\r,:\[\]{}"]+)([ \t\n\r]*,[ \t\n\r]*|[ \t\n\r]*\Z)')
_SCALAR_KIND = {'"': STRING, "t": LITERAL, "f": LITERAL, "n": LITERAL}
_LITERAL_OF, _VALUE_OF = itemgetter(0), itemgetter(1)
_PLUS_QUOTES = (2).__add__


def _expand_scalars(text: str, start: int, end: int) -> list[Child] | None:
    """``expand_run`` for a run of scalars (numbers, strings, literals), from one regular
    expression pass (the run was checked by the C scanner when it was read); None when an
    item is a container."""
    if text.find("{", start, end) >= 0 or text.find("[", start, end) >= 0:
        # (a bracket inside a string is read the long way)
        return None
    out: list[Child] = []
    append = out.append
    at = start
    kind_of = _SCALAR_KIND.get
    for literal, sep in _SCALAR_ITEM.findall(text, start, end):
        stop = at + len(literal)
        append(_child((at, stop, kind_of(literal[0], NUMBER), 0, -1, -1)))
        at = stop + len(sep)
    if at != end or not out:
        return None
    return out


def _scalar_items(text: str,
                  run: Child) -> tuple[list[int], list[int], Callable[[int], list[str]]] | None:
    """The lengths of the literals of a RUN of scalar items, the length of the separator after
    each (0 after the last) and a function giving the last k literals, or None when an item
    is a container. Strings without escapes are split on their quotes (C speed); other scalars
    are read by one regular-expression pass. Per item, only C-level maps."""
    start, end = run.start, run.end
    if text.find("{", start, end) >= 0 or text.find("[", start, end) >= 0:
        return None  # (a bracket inside a string is read the long way)
    literals: Callable[[int], list[str]]
    if text.find("\\", start, end) < 0 and text.count('"', start, end) == 2 * run.size:
        parts = text[start:end].split('"')  # '', item, separator, item, ..., item, ''
        raw = parts[1::2]
        lengths = list(map(_PLUS_QUOTES, map(len, raw)))
        seps = list(map(len, parts[2::2]))
        seps[-1] = 0

        def literals(k: int) -> list[str]:  # (no JSON text holds U+0000)
            return ('"' + '"\x00"'.join(raw[len(raw) - k:]) + '"').split("\x00")
    else:
        pairs = _SCALAR_ITEM.findall(text, start, end)
        found = list(map(_LITERAL_OF, pairs))
        lengths = list(map(len, found))
        seps = list(map(len, map(_VALUE_OF, pairs)))

        def literals(k: int) -> list[str]:
            return found[len(found) - k:]
    if len(lengths) != run.size or sum(lengths) + sum(seps) != end - start:
        return None
    return lengths, seps, literals


class SourceLiterals(NamedTuple):
    """The literals of the last items of a RUN of strings without escapes, as written: the
    text from ``start`` to ``end``, with ``sep`` between every two (no string holds a quote,
    so a quote, ``sep`` and a quote occur only between two items: no string equals ``sep``)."""

    start: int
    end: int
    sep: str

    def joined(self, text: str, between: str) -> str:
        """The literals joined with ``between`` (one copy, one replacement at most)."""
        span = text[self.start:self.end]
        if between == self.sep:
            return span
        return span.replace('"' + self.sep + '"', '"' + between + '"')


def scalar_tail(text: str, run: Child, budget: int, items: list[Any] | None = None) -> tuple[
        int, int, int, int, list[str] | SourceLiterals] | None:
    """For a RUN of scalar items: its last items whose costs (their lengths) add up to at most
    ``budget``, as (where they start, how many, their cost, where the items before them end,
    their literals: a list, or where they are in the text); None when an item is a container
    or no last item fits.

    Strings without escapes are measured from their decoded values when the scan kept them
    (``items``: the RUN's first) and one separator stands between every two
    (``_kept_strings_tail``); else they, and numbers and literals without strings, are read
    from the end of the run only as far as the budget may reach (``last_scalars``: about as
    many items as fit, then more if they all fit); other runs are read whole
    (``_scalar_items``)."""
    start, end, n = run.start, run.end, run.size
    if text.find("{", start, end) >= 0 or text.find("[", start, end) >= 0:
        return None  # (a bracket inside a string is read the long way)
    quotes = text.count('"', start, end) if text.find("\\", start, end) < 0 else -1
    if quotes == 2 * n and items is not None and len(items) >= n:
        kept = _kept_strings_tail(text, run, items, budget)
        if kept is not _NOT_UNIFORM:
            return kept  # type: ignore[return-value]
    elif quotes != 2 * n and quotes != 0:
        return _scalar_tail_whole(text, run, budget)
    # items that fit cost at most ``budget``: first as many as the run's average item (its
    # length over its size, separators included) gives, then as many more as the average
    # literal read so far gives, until one does not fit or the run is read whole
    m = min(n, budget * n // max(end - start, 1) + 8)
    while True:
        lengths, item_start, literals = last_scalars(text, run, m, quotes == 0)
        cost = list(accumulate(reversed(lengths)))
        k = bisect_right(cost, budget)
        if k < m or m == n:
            break
        m = min(n, m + (budget - cost[-1]) * m * 5 // (4 * max(cost[-1], 1)) + 8)
    if k == 0:
        return None
    at = item_start(k)
    head_end = start if k == n else _strip_end(text, start, text.rfind(",", start, at))
    return at, k, cost[k - 1], head_end, literals(k)


_NOT_UNIFORM = object()


def _kept_strings_tail(text: str, run: Child, items: list[Any], budget: int) -> tuple[
        int, int, int, int, SourceLiterals] | object | None:
    """``scalar_tail`` for a RUN of strings without escapes (each decoded value is its literal
    less the quotes) whose decoded items the scan kept (``items``, the RUN's first): their
    lengths from the values, their places from one separator between every two (no string
    holds a quote, so a quote, the separator and a quote occur only between two items or as
    a string equal to the separator). ``_NOT_UNIFORM`` when the separators differ or a string
    equals the separator."""
    start, end, n = run.start, run.end, run.size
    if n < 2:  # no separator to read (the scan makes runs of RUN_MIN_ITEMS and more)
        return _NOT_UNIFORM
    first_end = text.index('"', start + 1) + 1
    sep = text[first_end:text.index('"', first_end)]
    if len(items) > n:
        items = items[:n]
    # a quote, the separator and a quote: between two items, or a string equal to the
    # separator (then read the long way)
    if text.count('"' + sep + '"', start, end) != n - 1 or sep in items:
        return _NOT_UNIFORM
    m = min(n, budget * n // max(end - start, 1) + 8)  # about as many as fit, as in scalar_tail
    while True:
        cost = list(accumulate(map(_PLUS_QUOTES, map(len, islice(reversed(items), m)))))
        k = bisect_right(cost, budget)
        if k < m or m == n:
            break
        m = n
    if k == 0:
        return None
    at = end - cost[k - 1] - (k - 1) * len(sep)
    head_end = at - len(sep) if k < n else start
    # their literals are the text from ``at`` (not split: the rendering joins them again)
    return at, k, cost[k - 1], head_end, SourceLiterals(at, end, sep)


def last_scalars(text: str, run: Child, m: int, plain: bool) -> tuple[
        list[int], Callable[[int], int], Callable[[int], list[str]]]:
    """The last ``m`` items of a RUN of strings without escapes (``plain`` False: split on
    their quotes) or of numbers and literals (``plain``: split on commas, no string in the
    run): the lengths of their literals, where the k-th from the end starts and the last k
    literals. Only those items are split off (``str.rsplit``), however long the run."""
    end, n = run.end, run.size
    span = text[run.start:end]
    if plain:
        parts = span.split(",") if m >= n else span.rsplit(",", m)[1:]
        found = list(map(str.strip, parts))  # (a valid run holds no other space)
        lengths = list(map(len, found))

        def item_start(k: int) -> int:
            j = len(parts) - k
            part = parts[j]
            return end - sum(map(len, parts[j:])) - (k - 1) + len(part) - len(part.lstrip())

        def plain_literals(k: int) -> list[str]:
            return found[len(found) - k:]

        return lengths, item_start, plain_literals
    # '', item, separator, item, ..., item, '' (or the head before the last m items first)
    pieces = span.split('"') if m >= n else span.rsplit('"', 2 * m)
    raw = pieces[1::2]
    lengths = list(map(_PLUS_QUOTES, map(len, raw)))
    seps = list(map(len, pieces[2::2]))
    seps[-1] = 0

    def string_start(k: int) -> int:
        return end - sum(lengths[len(lengths) - k:]) - sum(seps[len(seps) - k:])

    def string_literals(k: int) -> list[str]:  # (no JSON text holds U+0000)
        return ('"' + '"\x00"'.join(raw[len(raw) - k:]) + '"').split("\x00")

    return lengths, string_start, string_literals


def _scalar_tail_whole(text: str, run: Child,
                       budget: int) -> tuple[int, int, int, int, list[str]] | None:
    """``scalar_tail`` for a run read whole (strings with escapes, or strings among numbers)."""
    items = _scalar_items(text, run)
    if items is None:
        return None
    lengths, seps, literals = items
    n = len(lengths)
    cost = list(accumulate(reversed(lengths)))
    k = bisect_right(cost, budget)
    if k == 0:
        return None
    start = run.end - cost[k - 1] - sum(seps[n - k:])
    head_end = start - seps[n - k - 1] if k < n else run.start
    return start, k, cost[k - 1], head_end, literals(k)


_FLAT_RECORD_ITEM = re.compile(
    r'(\{[^{}\[\]"]*(?:' + JSON_STRING + r'[^{}\[\]"]*)*\})'
    r'([ \t\n\r]*,[ \t\n\r]*|[ \t\n\r]*\Z)')
_RECORD_MEMBER = re.compile(
    r'(' + JSON_STRING + r')[ \t\n\r]*:[ \t\n\r]*'
    r'(' + JSON_STRING + r'|[^ \t\n\r,:\[\]{}"]+)')


def record_tail(text: str, run: Child,
                budget: int) -> tuple[int, int, int, int, list[list[tuple[str, str]]]] | None:
    """``scalar_tail`` for a RUN of objects that hold scalars only (records): their members
    (key, value literals) are read by regular expressions, the run once and each record of
    the tail once; None when an item is not such an object or no last item fits."""
    if text[run.start] != "{" or text.find("[", run.start, run.end) >= 0:
        return None
    pairs = _FLAT_RECORD_ITEM.findall(text, run.start, run.end)
    if len(pairs) != run.size or sum(map(len, chain.from_iterable(pairs))) \
            != run.end - run.start:
        return None
    records: list[list[tuple[str, str]]] = []
    total = span = 0
    for record, sep in reversed(pairs):
        members = _RECORD_MEMBER.findall(record)
        cost = sum(map(len, map(_VALUE_OF, members)))
        if total + cost > budget:
            break
        total += cost
        span += len(record) + len(sep)
        records.append(members)
    k = len(records)
    if k == 0:
        return None
    records.reverse()
    start = run.end - span
    head_end = start - len(pairs[-k - 1][1]) if k < len(pairs) else run.start
    return start, k, total, head_end, records


# (the run is checked to hold no backslash first: a one-character class is scanned several
# times faster than ``[^"\\]``, see JSON_STRING)
_PLAIN_MEMBER = r'"[^"]*": (?:"[^"]*"|[^ ,:\[\]{}"]+)'
_PLAIN_RECORD = r"\{" + _PLAIN_MEMBER + r"(?:, " + _PLAIN_MEMBER + r")*\}"
# records written as json.dumps writes them on one line: ", " and ": ", no other whitespace,
# no escapes, no nested container, no empty record
_COMPACT_RECORDS = re.compile(_PLAIN_RECORD + r"(?:, " + _PLAIN_RECORD + r")*")


def compact_record_tail(text: str, run: Child, items: list[Any],
                        budget: int) -> tuple[int, int, int, int] | None:
    """``record_tail`` from lengths, for a RUN of records written as ``json.dumps`` writes
    them on one line (``_COMPACT_RECORDS``) whose decoded items the scan kept (``items``, the
    RUN's first): (where the tail starts, how many, their cost, where the items before them
    end), or None when the RUN is not such a run, a string holds ``", "`` (the records are
    then printed from their members), a key is given twice or no last record fits.

    No string holding ``", "``, records are separated by ``"}, {"`` alone; a record's cost is
    its length less its keys (their decoded length: they hold no escape) and 6 characters per
    member (quotes, ": ", ", ", and the braces counted as one comma too many)."""
    start, end, n = run.start, run.end, run.size
    if len(items) < n or text.find("\\", start, end) >= 0 \
            or _COMPACT_RECORDS.fullmatch(text, start, end) is None:
        return None
    if len(items) > n:
        items = items[:n]
    sizes = list(map(len, items))
    members = sum(sizes)
    # every member is written once ('": ' ends a key only) and no string holds ", "
    if text.count('": ', start, end) != members or text.count(", ", start, end) != members - 1:
        return None
    lengths = list(map(len, text[start:end].split("}, {")))  # each record less its braces,
    lengths[0] -= 1                                           # but the ends
    lengths[-1] -= 1
    # cost = length + 2 - keys - 6 * members
    costs = list(map(sub, lengths, map(sub, map(len, map("".join, items)),
                                       map(sub, repeat(2), map(mul, sizes, repeat(6))))))
    cumulative = list(accumulate(reversed(costs)))
    k = bisect_right(cumulative, budget)
    if k == 0:
        return None
    tail_start = end - (sum(lengths[n - k:]) + 2 * k + 2 * (k - 1))
    head_end = tail_start - 2 if k < n else start
    return tail_start, k, cumulative[k - 1], head_end


def scalar_literals(text: str, start: int, end: int) -> list[str]:
    """The literals of the scalar items in ``text[start:end]`` (a part of a scalar RUN)."""
    return [literal for literal, _ in _SCALAR_ITEM.findall(text, start, end)]


def expand_run(text: str, run: Child, values: dict[int, Any] | None = None) -> list[Child]:
    """The single children a RUN child stands for. With ``values``: the decoded value of each
    container item, by its start (the rendering bounds their cost from it)."""
    scalars = _expand_scalars(text, run.start, run.end)
    if scalars is not None:
        return scalars
    out: list[Child] = []
    at = run.start
    while at < run.end:
        value, end = _scan_once(text, at)
        kind = _KIND_OF_TYPE.get(type(value), NUMBER)
        if kind is OBJECT or kind is ARRAY:
            out.append(_child((at, end, kind, len(value), -1, -1)))
            if values is not None:
                values[at] = value
        else:
            out.append(_child((at, end, kind, 0, -1, -1)))
        at = _SEPARATOR.match(text, end).end()  # type: ignore[union-attr]  # always matches
    return out


def _expand_checked(text: str, start: int, end: int,
                    values: dict[int, Any] | None = None) -> list[Child] | None:
    """The array items that exactly fill ``text[start:end]``, comma-separated, or None. After
    a comma inside a string an odd number of quotes is left, and after one inside a nested
    container a closer comes unopened: either way the items cannot fill the span."""
    out: list[Child] = []
    at = start
    try:
        while True:
            value, stop = _scan_once(text, at)
            kind = _KIND_OF_TYPE.get(type(value), NUMBER)
            if kind is OBJECT or kind is ARRAY:
                out.append(_child((at, stop, kind, len(value), -1, -1)))
                if values is not None:
                    values[at] = value
            else:
                out.append(_child((at, stop, kind, 0, -1, -1)))
            if stop >= end:
                return out if stop == end else None
            m = _ARRAY_SEP.match(text, stop, end)
            if m is None:
                return None
            at = m.end()
    except (StopIteration, ValueError, RecursionError):
        return None


def split_run(text: str, run: Child, chars: int,
              values: dict[int, Any] | None = None) -> list[Child]:
    """The children a RUN stands for: all single, or, for a long run, a RUN of its first items
    followed by the single children of (about) its last ``chars`` characters. The split point
    is a separator like the one after the run (with the characters around it), found by
    ``str.rfind`` and checked by reading the items after it. ``values``: see
    ``expand_run``."""
    if run.end - run.start > chars + chars // 2 and run.size >= 2 * RUN_MIN_ITEMS:
        m = _ARRAY_SEP.match(text, run.end)
        after = m.end() if m is not None else run.end
        lead = text[run.end - 1] if text[run.end - 1] in '}]"' else ""
        trail = text[after] if m is not None and after < len(text) and text[after] in '{["' \
            else ""
        pattern = lead + text[run.end:after] + trail if m is not None else ","
        at = text.rfind(pattern, run.start, run.end - chars + len(pattern))
        for _ in range(_BULK_TRIES + 2):
            if at <= run.start:
                break
            first = _WS.match(text, text.index(",", at + len(lead)) + 1).end()  # type: ignore[union-attr]
            tail = _expand_checked(text, first, run.end, values)
            if tail is not None and run.size - len(tail) >= RUN_MIN_ITEMS:
                head_end = _strip_end(text, run.start, at + len(lead))
                return [Child(run.start, head_end, RUN, run.size - len(tail)), *tail]
            at = text.rfind(pattern, run.start, at + len(pattern) - 1)
    return expand_run(text, run, values)


def split_known(text: str, run: Child, count: int,
                values: dict[int, Any]) -> list[Child] | None:
    """The RUN ``run`` split into the items before its last ``count`` + 1 (a RUN, or single
    children), its item before the last ``count`` (a single child, its decoded value put in
    ``values``) and its last ``count`` items (one RUN, unread: the rendering knows they cannot
    fit); None when that split is not found. Separators like the one after the run are
    looked for with ``str.rfind``; the last items are checked by one C scanner call, and the
    single item by another that must end right at their separator."""
    n = run.size
    m = _ARRAY_SEP.match(text, run.end)
    if count < RUN_MIN_ITEMS or count >= n or m is None or m.end() >= len(text):
        return None
    sep = text[run.end:m.end()]
    lead = text[run.end - 1] if text[run.end - 1] in '}]"' else ""
    trail = text[m.end()] if text[m.end()] in '{["' else ""
    pattern = lead + sep + trail
    found: list[int] = []
    end = run.end
    for _ in range(count + 1 if count + 1 < n else count):
        at = text.rfind(pattern, run.start, end)
        if at < 0:
            return None
        found.append(at)
        end = at + len(pattern) - 1
    tail_start = found[count - 1] + len(lead) + len(sep)
    single_start = found[count] + len(lead) + len(sep) if count + 1 < n else run.start
    tail = _probe_items(text, tail_start, run.end)
    if tail is None or len(tail) != count:
        return None
    try:
        value, single_end = _scan_once(text, single_start)
    except (StopIteration, ValueError, RecursionError):
        return None
    if single_end != found[count - 1] + len(lead):
        return None
    kind = _KIND_OF_TYPE.get(type(value), NUMBER)
    container = kind is OBJECT or kind is ARRAY
    if container:
        values[single_start] = value
    parts = [_child((single_start, single_end, kind, len(value) if container else 0, -1, -1)),
             _child((tail_start, run.end, RUN, count, -1, -1))]
    if single_start > run.start:
        head = _child((run.start, _strip_end(text, run.start, found[count] + len(lead)), RUN,
                       n - count - 1, -1, -1))
        parts[:0] = [head] if head.size >= RUN_MIN_ITEMS else expand_run(text, head, values)
    return parts

