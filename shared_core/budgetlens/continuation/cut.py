"""Finding where a JSON text was cut off, and closing it.

One forward scan over the text finds the JSON start (skipping a code fence or a sentence of
prose), the stack of containers still open at the end, the children each open container has
completed so far, and what was being written when the text stopped (the cut kind).

Speed: the text is read once. Complete sibling values are skipped at C speed by the standard
library's JSON scanner (``json.scanner``), one call per sibling, on windows of the text: a
sibling that does not end inside its window is the open child on the path to the cut (or a
very large one), and the scan descends into it instead of reading the rest of the text to
fail at its end. Long arrays are skipped in bulk: one call of the C scanner on a run of
items, ending at a separator found by ``str.rfind``. Only the containers on the path to the
cut and the last token are tokenized with compiled regular expressions; nothing here
recurses, so any nesting depth works.

Offsets are code-point indices into the text (Python ``str`` indices).
"""

from __future__ import annotations

import json
import json.decoder
import json.scanner
import re
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from itertools import accumulate, chain, islice, repeat
from operator import itemgetter, mul, sub
from typing import Any, NamedTuple

from budgetlens.source import Position


class CutKind(str, Enum):
    """What was being written when the text stopped."""

    STRING = "string"                # inside a string value
    STRING_ESCAPE = "string_escape"  # inside a string value, in an escape or a surrogate pair
    KEY = "key"                      # inside an object key
    AFTER_KEY = "after_key"          # after a complete key, before its colon
    AFTER_COLON = "after_colon"      # after a colon, before the value
    AFTER_COMMA = "after_comma"      # after a comma (object or array)
    NUMBER = "number"                # inside (or right at the end of) a number
    LITERAL = "literal"              # inside true / false / null
    AFTER_OPEN = "after_open"        # right after an opening brace or bracket
    AFTER_VALUE = "after_value"      # after a complete value, before a comma or a closer


KIND_PHRASES: dict[CutKind, str] = {
    CutKind.STRING: "inside a string",
    CutKind.STRING_ESCAPE: "inside an escape sequence of a string",
    CutKind.KEY: "inside a key",
    CutKind.AFTER_KEY: "after a key, before its colon",
    CutKind.AFTER_COLON: "after a colon, before the value",
    CutKind.AFTER_COMMA: "after a comma",
    CutKind.NUMBER: "inside a number",
    CutKind.LITERAL: "inside a literal (true, false or null)",
    CutKind.AFTER_OPEN: "right after an opening brace or bracket",
    CutKind.AFTER_VALUE: "after a complete value",
}

#: A partial literal at a cut is completed from its first letter (its value is determined).
LITERALS = {"t": "true", "f": "false", "n": "null"}



class ValueKind(str, Enum):
    """What a complete child of a container is (``Child.kind``)."""

    OBJECT = "object"
    ARRAY = "array"
    STRING = "string"
    NUMBER = "number"
    LITERAL = "literal"     # true, false or null
    RUN = "run"             # a run of scalar array items skipped in bulk (see RUN_MIN)


OBJECT, ARRAY, STRING, NUMBER, LITERAL = (ValueKind.OBJECT, ValueKind.ARRAY, ValueKind.STRING,
                                          ValueKind.NUMBER, ValueKind.LITERAL)

# Parser states of an open container.
_OPEN = 0    # right after '{' or '['
_KEY = 1     # object, after ',': a key must follow
_COLON = 2   # object, after a key: ':' must follow
_VALUE = 3   # a value must follow (object after ':', array after ',')
_AFTER = 4   # after a value: ',' or the closer must follow

_WS = re.compile(r"[ \t\n\r]*")
# A string literal in text the C scanner has read (valid JSON: no raw control character, and
# every backslash starts an escape). Python's regular expressions scan a one-character class
# like ``[^"]`` several times faster than a two-character one like ``[^"\\]``, so the first
# way scans runs of ``[^"]`` and decides at each quote by the characters before it: after
# exactly one backslash (itself after another character) the quote is escaped, after none it
# ends the string. A quote after two or more backslashes fails the first way, and the second
# (an escape at a time, exact) reads the string. Where the first way matches, both match the
# same literal (tests/core/continuation/test_string_pattern.py); so the second is tried only
# where the first does not match (past the opening quote, a negative lookahead of the first
# way's rest, atomic in Python's engine): a pattern that repeats JSON_STRING and fails late
# would otherwise retry both ways of every literal before it, 2**n tries for n literals.
_FAST_REST = r'[^"]*(?:(?<=[^\\]\\)"[^"]*)*(?<!\\)"'
_EXACT_REST = r'[^"\\]*(?:\\.[^"\\]*)*"'
JSON_STRING = r'(?:"' + _FAST_REST + r'|"(?!' + _FAST_REST + r")" + _EXACT_REST + r")"
_DANGLING_ESCAPE = re.compile(r"\\(?:u[0-9a-fA-F]{0,3})?\Z")
_STRING_BODY = re.compile(
    r'"[^"\\\x00-\x1f]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*)*')
_HIGH_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abAB][0-9a-fA-F]{2}\Z")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_NUMBER_PREFIX = re.compile(
    r"-?(?:(?:0|[1-9][0-9]*)(?:\.[0-9]*|(?:\.[0-9]+)?[eE][+-]?[0-9]*)?)?\Z")
_ARRAY_SEP = re.compile(r"[ \t\n\r]*,[ \t\n\r]*")
_SEPARATOR = re.compile(r"[ \t\n\r]*,?[ \t\n\r]*")
_OBJECT_SEP = re.compile(
    r'[ \t\n\r]*,[ \t\n\r]*("[^"\\\x00-\x1f]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})'
    r'[^"\\\x00-\x1f]*)*")[ \t\n\r]*:[ \t\n\r]*')
_VALUE_END = frozenset(" \t\n\r,]}")

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
_KEPT_RUNS = 8             # the decoded items of this many last RUNs per array are kept
_KEPT_VALUES = 256         # the decoded values of this many last container children are kept


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


# Levels on which complete siblings are skipped with the C scanner (deeper levels are
# tokenized: a very deep text would otherwise pay a window per level).
_GREEDY_LEVELS = 32
_GREEDY = 1 << 62
# The C scanner reads container siblings on windows of the text: _WINDOW_STREAM characters
# (or four times the largest sibling seen on the level), shared by consecutive siblings; a
# sibling that does not end inside the window is tried again on one of the largest size (a
# thirty-second of the text, or twice the largest sibling the level has had, read or descended
# into, when that is more: ``cap`` in ``_read_windowed``), and one that still does not end is
# taken as the open child on the path to the cut: the scan descends into it. What failed
# windows read in all is bounded by the text's length (then containers are descended into
# without a try; half of it left a cut after a few large items nothing for the levels below
# the first).
_WINDOW_MIN = 1024
_WINDOW_STREAM = 1 << 14


def reject_constant(name: str) -> Any:
    """``parse_constant`` for strict JSON: ``NaN``, ``Infinity`` and ``-Infinity`` are not JSON."""
    raise ValueError(f"{name} is not JSON")


_scanstring: Callable[[str, int, bool], tuple[str, int]] = (  # the C string scanner
    json.decoder.scanstring)  # type: ignore[attr-defined]
_scan_once: Callable[[str, int], tuple[Any, int]] = json.scanner.make_scanner(
    json.JSONDecoder(parse_constant=reject_constant))  # type: ignore[arg-type]

_KIND_OF_TYPE: dict[type, ValueKind] = {
    dict: OBJECT, list: ARRAY, str: STRING, int: NUMBER, float: NUMBER,
    bool: LITERAL, type(None): LITERAL,
}


class Child(NamedTuple):
    """A complete value inside an open container: its span, kind and size."""

    start: int
    end: int
    kind: ValueKind
    size: int = 0               # keys of an object, items of an array
    key_start: int = -1         # the key's span (with quotes) for object members
    key_end: int = -1


def _child(fields: tuple[int, int, ValueKind, int, int, int]) -> Child:
    """A Child without the Python-level ``__new__`` (the hot loop makes one per sibling)."""
    return tuple.__new__(Child, fields)


@dataclass(slots=True, eq=False)
class Frame:
    """A container that is still open at the cut."""

    is_object: bool
    start: int                          # offset of '{' or '['
    children: list[Child] = field(default_factory=list)
    state: int = _OPEN
    key_start: int = -1                 # key of the member in progress
    key_end: int = -1
    skip: int = 0                       # > 0: complete children are skipped with the C scanner
    extra: int = 0                      # items stood for by RUN children beyond one each
    largest: int = 0                    # the largest container child skipped so far
    descend_at: int = -1                # the child there is tokenized (its window failed)
    failed_string: str | None = None    # why the string at descend_at did not end
    bulk: bool = True                   # bulk skipping may still be tried (arrays)
    singles: int = 0                    # children skipped one by one since the last bulk try
    need: int = 0                       # room a shared window needs for the next sibling
    run_items: dict[int, list[Any]] | None = None  # the decoded items of the last RUNs
    values: dict[int, Any] | None = None  # the decoded values of the last container children

    def keep_items(self, start: int, items: list[Any]) -> None:
        """Keep the decoded items of the RUN child at ``start`` (of the last two RUNs only:
        the rendering reaches those first)."""
        if self.run_items is None:
            self.run_items = {}
        self.run_items[start] = items
        if len(self.run_items) > _KEPT_RUNS:
            del self.run_items[next(iter(self.run_items))]

    def keep_value(self, start: int, value: Any) -> None:
        """Keep the decoded value of the container child at ``start`` (of the last
        ``_KEPT_VALUES`` only: the rendering reaches those first)."""
        if self.values is None:
            self.values = {}
        self.values[start] = value
        if len(self.values) > _KEPT_VALUES:
            del self.values[next(iter(self.values))]

    @property
    def items(self) -> int:
        """How many complete children the container has so far."""
        return len(self.children) + self.extra

    @property
    def last_value_end(self) -> int:
        """Where the text is kept up to when what follows the last child is dropped."""
        return self.children[-1].end if self.children else self.start + 1


@dataclass(frozen=True, slots=True)
class ScanError:
    offset: int
    message: str


@dataclass(slots=True, eq=False)
class Scan:
    """The outcome of one scan, from ``start`` (where the JSON begins) to ``stop``."""

    text: str
    start: int
    stop: int                            # where the JSON ends: the cut, an error, or its end
    frames: list[Frame]
    complete: bool = False               # a whole top-level value was read
    root: Child | None = None            # that value
    kind: CutKind | None = None          # set when the text was cut
    token_start: int = -1                # start of the partial token at the cut, if any
    error: ScanError | None = None
    value_started: bool = False          # a top-level value has begun
    cut_chars: int = -1                  # decoded characters of the cut string, when known
    closed_text: str | None = None       # the text, a quote and the closers, when made already


_FOUND_LINES = 16  # line breaks looked for one by one before the rest are counted


def position_at(text: str, offset: int) -> Position:
    """The 0-based line and code-point character of ``offset`` (``LineIndex`` semantics)."""
    offset = max(0, min(offset, len(text)))
    return Position(count_lines(text, offset), offset - (text.rfind("\n", 0, offset) + 1))


def count_lines(text: str, end: int) -> int:
    """``text.count("\\n", 0, end)``: the first line breaks are found one by one (``str.find``
    skips a long line at ``memchr`` speed, where ``str.count`` compares every character), the
    rest, when there are many (short lines), counted."""
    at = text.find("\n", 0, end)
    lines = 0
    while at >= 0:
        lines += 1
        if lines == _FOUND_LINES:
            return lines + text.count("\n", at + 1, end)
        at = text.find("\n", at + 1, end)
    return lines


def try_complete(text: str, start: int) -> Child | None:
    """The top-level value at ``start`` when it parses whole at C speed, else None."""
    try:
        value, end = _scan_once(text, start)
    except (StopIteration, ValueError, RecursionError):
        return None
    kind = _KIND_OF_TYPE.get(type(value), NUMBER)
    count = len(value) if kind in (OBJECT, ARRAY) else 0
    return Child(start, end, kind, count)


def _describe_bad_string(text: str, pos: int) -> tuple[int, str]:
    m = _STRING_BODY.match(text, pos)
    at = m.end() if m else pos + 1
    if at >= len(text):
        return at, "unterminated string"
    ch = text[at]
    if ch == "\\":
        return at, "invalid escape sequence in a string"
    if ch < " ":
        return at, f"control character U+{ord(ch):04X} in a string (escape it)"
    return at, "invalid string"


class _Windows:
    """The window the C scanner reads container siblings on (shared by consecutive siblings,
    so the text is copied about once), and what failed windows may still read; and what one
    scan knows about the string that may run to the end of the text (see ``_read_string``)."""

    __slots__ = (
        "base",
        "budget",
        "chunk",
        "closed",
        "closed_tried",
        "cut_chars",
        "frames",
        "largest",
        "last_quote",
    )

    def __init__(self, n: int) -> None:
        self.budget = n + 4 * _WINDOW_MIN
        self.largest = max(_WINDOW_MIN, n // 32)
        self.base = 0
        self.chunk = ""
        self.last_quote = -2          # where the last '"' of the text is (-2: not looked up)
        self.closed_tried = False     # a string was read on a closed copy (once per scan)
        self.cut_chars = -1           # decoded characters of the cut string, when read whole
        self.closed: str | None = None  # the text closed after that string, when copied whole
        self.frames: list[Frame] = []   # the scan's open containers

    def move(self, text: str, pos: int, width: int) -> None:
        self.base = pos
        self.chunk = text[pos:pos + width]


def _read_sibling(text: str, pos: int, frame: Frame, windows: _Windows,
                  n: int) -> tuple[Any, int] | None:
    """The complete value at ``pos`` and its end, read by the C scanner; None when it does not
    end inside the largest window (the open child) or is not valid there."""
    c = text[pos]
    if c == '"':
        read = _read_string(text, pos, windows)
        if type(read) is str:  # the cut string (or an invalid one): read once
            frame.failed_string = read
            return None
        return read  # type: ignore[return-value]  # (value, end)
    if c not in "{[":
        value, end = _scan_once(text, pos)
        if type(value) in (int, float) and (end >= n or text[end] not in _VALUE_END):
            return None  # a number that may go on: tokenize it
        return value, end
    if n - pos <= _WINDOW_MIN:
        # on a copy of the tail: the open child fails there, and the scanner's error counts
        # the lines before it in the string it was given
        value, end = _scan_once(text[pos:], 0)
        return value, pos + end
    return _read_windowed(text, pos, frame, windows, n)


def _read_windowed(text: str, pos: int, frame: Frame, w: _Windows,
                   n: int) -> tuple[Any, int] | None:
    """``_read_sibling`` for a container: on the shared window, then on the largest one."""
    # the largest window: the text's (``w.largest``), or twice the largest sibling the level
    # has had when that is more (a level of large items reads the next ones on windows that
    # hold them)
    twice = 2 * frame.largest
    cap = twice if twice > w.largest else w.largest
    stream = max(4 * frame.largest, _WINDOW_STREAM)
    if stream > cap:
        stream = cap
    end = w.base + len(w.chunk)
    # a new window where the shared one does not hold this sibling, is larger than this
    # level's (a level above made it: a sibling's failure there would read it all), or has
    # no room for one twice as large as the container read before on this level (a large
    # item after a large item would fail there, read up to the window's end; the one
    # before, not the largest: after one large item, small ones share a window again)
    if not w.base <= pos < end or end - pos > cap or (end < n and end - pos < frame.need):
        w.move(text, pos, stream)
    while w.budget > 0:
        try:
            value, end = _scan_once(w.chunk, pos - w.base)
        except RecursionError:
            return None
        except (StopIteration, ValueError):
            size = len(w.chunk)
            if w.base + size >= n:
                # it does not end before the text does: the open child (or an invalid one).
                # Not charged to the budget: a level reads its open child so once, and only
                # when a window reaches the end from it: in the text's last thirty-second (a
                # thirty-second at most, on each of at most _GREEDY_LEVELS levels), or with a
                # sibling half as large as what is left (``cap``), so that each such level
                # holds at most two thirds of what the one above it holds (three times the
                # text at most): four times the text in all
                return None
            w.budget -= w.base + size - pos
            if w.base == pos and size >= cap:
                return None  # it does not end inside the largest window: the open child
            w.move(text, pos, cap if w.base == pos else stream)
            continue
        size = end - (pos - w.base)
        if size > frame.largest:
            frame.largest = size
        return value, w.base + end
    return None


# long-function: one loop over the complete siblings of an open container, the C scanner
# inlined for speed (a call per helper would cost more than the scanner call itself).
def _skip_siblings(text: str, pos: int, frame: Frame, windows: _Windows,  # noqa: C901
                   n: int) -> int:
    """Skip complete children of ``frame`` from ``pos``; returns where the scan goes on."""
    children = frame.children
    is_object = frame.is_object
    while True:
        if (not is_object and frame.bulk and frame.singles >= _BULK_AFTER
                and n - pos > 2 * _BULK_TAIL):
            frame.singles = 0
            bulk = _bulk_run(text, pos, children[-1], n)
            if bulk is None:
                frame.bulk = False
            else:
                children.append(bulk[0])
                frame.keep_items(bulk[0].start, bulk[2])
                frame.extra += bulk[0].size - 1
                pos = bulk[1]
        try:
            read = _read_sibling(text, pos, frame, windows, n)
        except (StopIteration, ValueError, RecursionError):
            read = None
        if read is None:
            if text[pos] != '"':
                frame.failed_string = None
            frame.descend_at = pos
            return pos
        value, end = read
        kind = _KIND_OF_TYPE.get(type(value), NUMBER)
        if kind is OBJECT or kind is ARRAY:
            children.append(_child((pos, end, kind, len(value), frame.key_start if is_object
                                    else -1, frame.key_end if is_object else -1)))
            frame.keep_value(pos, value)
            frame.need = 2 * (end - pos)
        else:
            children.append(_child((pos, end, kind, 0, frame.key_start if is_object else -1,
                                    frame.key_end if is_object else -1)))
        frame.state = _AFTER
        frame.singles += 1
        if is_object:
            m = _OBJECT_SEP.match(text, end)
            if m is None:
                return end
            frame.key_start, frame.key_end = m.span(1)
        else:
            m = _ARRAY_SEP.match(text, end)
            if m is None:
                return end
        frame.state = _VALUE
        pos = m.end()
        if pos >= n:
            return pos


# long-function: the JSON scanner is one state machine over the text (states _OPEN.._AFTER,
# a frame stack, C-speed sibling skipping inlined for speed); split up, its hot loop would pay a
# call per token and its states would be spread over functions that share every local.
def scan(text: str, start: int = 0) -> Scan:  # noqa: C901
    """Scan the JSON value beginning at ``start``; never raises, never recurses."""
    n = len(text)
    frames: list[Frame] = []
    result = Scan(text=text, start=start, stop=n, frames=frames)
    ws = _WS.match
    pos = start

    windows = _Windows(n - start)
    windows.frames = frames

    def new_frame(is_object: bool, at: int) -> Frame:
        return Frame(is_object, at, skip=_GREEDY if len(frames) < _GREEDY_LEVELS else 0)

    def add_child(child: Child) -> None:
        if frames:
            frame = frames[-1]
            if frame.is_object:
                child = child._replace(key_start=frame.key_start, key_end=frame.key_end)
            frame.children.append(child)
            frame.state = _AFTER
        else:
            result.complete = True
            result.root = child

    def fail(at: int, message: str, stop: int | None = None) -> None:
        result.error = ScanError(at, message)
        result.stop = at if stop is None else stop

    while True:
        pos = ws(text, pos).end()  # type: ignore[union-attr]  # always matches
        if result.complete:
            result.stop = result.root.end if result.root else pos
            return result
        if pos >= n:
            break
        c = text[pos]
        frame = frames[-1] if frames else None
        state = frame.state if frame is not None else _VALUE
        if frame is not None and state == _OPEN:
            if c == ("}" if frame.is_object else "]"):
                state = _AFTER  # closing an empty container is handled below
            elif frame.is_object:
                state = _KEY
            else:
                state = _VALUE
                frame.state = _VALUE
        if frame is not None and frame.skip > 0 and state == _VALUE and pos != frame.descend_at:
            pos = _skip_siblings(text, pos, frame, windows, n)
            continue
        if state == _VALUE:
            result.value_started = True
            if c == "{" or c == "[":
                frames.append(new_frame(c == "{", pos))
                pos += 1
                continue
            if c == '"':
                failed = frame.failed_string if frame is not None and pos == frame.descend_at \
                    else None
                end, why = (-1, failed) if failed is not None else _string_end(
                    text, pos, windows)
                if end > 0:
                    add_child(Child(pos, end, STRING))
                    pos = end
                    continue
                result.cut_chars, result.closed_text = windows.cut_chars, windows.closed
                return _cut_string(result, pos, CutKind.STRING, why)
            if c == "-" or "0" <= c <= "9":
                m = _NUMBER.match(text, pos)
                end = m.end() if m is not None else pos
                if m is not None and end < n and text[end] in _VALUE_END:
                    add_child(Child(pos, end, NUMBER))
                    pos = end
                    continue
                if m is not None and end == n:
                    if not frames:
                        add_child(Child(pos, end, NUMBER))
                        pos = end
                        continue
                    return _cut_at(result, pos, CutKind.NUMBER)
                if _NUMBER_PREFIX.match(text, pos):
                    return _cut_at(result, pos, CutKind.NUMBER)
                fail(pos, "invalid number")
                return result
            if c in LITERALS:
                word = LITERALS[c]
                if text.startswith(word, pos):
                    end = pos + len(word)
                    if end == n or text[end] in _VALUE_END:
                        add_child(Child(pos, end, LITERAL))
                        pos = end
                        continue
                elif word.startswith(text[pos:pos + len(word)]) and n - pos < len(word):
                    return _cut_at(result, pos, CutKind.LITERAL)
                fail(pos, f"invalid literal (expected {word})")
                return result
            fail(pos, f"expected a value, found {c!r}")
            return result
        assert frame is not None
        if state == _KEY:
            if c == '"':
                end, why = _string_end(text, pos, windows)
                if end > 0:
                    frame.key_start, frame.key_end = pos, end
                    frame.state = _COLON
                    pos = end
                    continue
                return _cut_string(result, pos, CutKind.KEY, why)
            fail(pos, f"expected a key (a string in double quotes), found {c!r}")
            return result
        if state == _COLON:
            if c == ":":
                frame.state = _VALUE
                pos += 1
                continue
            fail(pos, f"expected ':' after a key, found {c!r}")
            return result
        # state == _AFTER
        closer = "}" if frame.is_object else "]"
        if c == closer:
            frames.pop()
            if frames and pos + 1 - frame.start > frames[-1].largest:  # (``cap``, _read_windowed)
                frames[-1].largest = pos + 1 - frame.start
            add_child(Child(frame.start, pos + 1, OBJECT if frame.is_object else ARRAY,
                            _distinct_keys(text, frame) if frame.is_object else frame.items))
            pos += 1
            continue
        if c == "," and frame.state == _AFTER:
            frame.state = _KEY if frame.is_object else _VALUE
            pos += 1
            continue
        expected = "',' or '}'" if frame.is_object else "',' or ']'"
        fail(pos, f"expected {expected}, found {c!r}")
        return result
    # The text ended between tokens.
    if not frames:
        if not result.value_started:
            fail(pos, "no JSON value")
        return result
    result.kind = state_kind(frames)
    return result


def _distinct_keys(text: str, frame: Frame) -> int:
    """The size of an object read member by member: its distinct keys, as the C scanner (and
    ``json.loads``) counts them for a value it reads whole."""
    keys = {text[c.key_start:c.key_end] for c in frame.children}
    if len(keys) == len(frame.children) and "\\" not in "".join(keys):
        return len(keys)
    return len({_key(text, c.key_start, c.key_end) for c in frame.children})


def state_kind(frames: list[Frame]) -> CutKind | None:
    """The cut kind when the text stops between tokens (or at an error) in this state."""
    if not frames:
        return None
    frame = frames[-1]
    if frame.state == _VALUE and not frame.is_object and not frame.children:
        return CutKind.AFTER_OPEN
    return {
        _OPEN: CutKind.AFTER_OPEN,
        _KEY: CutKind.AFTER_COMMA,
        _COLON: CutKind.AFTER_KEY,
        _VALUE: CutKind.AFTER_COLON if frame.is_object else CutKind.AFTER_COMMA,
        _AFTER: CutKind.AFTER_VALUE,
    }[frame.state]


def _cut_at(result: Scan, token_start: int, kind: CutKind) -> Scan:
    """The text was cut inside the token at ``token_start``; a cut inside a string is refined:
    an escape or a surrogate pair in progress."""
    result.token_start = token_start
    result.kind = kind
    if kind is CutKind.STRING and partial_string_end(result.text, token_start)[1]:
        result.kind = CutKind.STRING_ESCAPE
    result.stop = len(result.text)
    return result


def _cut_string(result: Scan, pos: int, kind: CutKind, why: str) -> Scan:
    """A string (value or key) at ``pos`` that does not end: cut inside it, or an error.

    ``why`` is the C string scanner's message: "Unterminated string" means every character
    up to the end of the text was valid (a dangling backslash included), so the string is not
    read again."""
    if why.startswith("Unterminated string") or valid_partial_string(result.text, pos):
        return _cut_at(result, pos, kind)
    at, message = _describe_bad_string(result.text, pos)
    result.error = ScanError(at, message)
    result.stop = pos
    return result


def _string_end(text: str, pos: int, w: _Windows) -> tuple[int, str]:
    """End of the complete string token starting at ``pos`` (C speed), or -1 and why not."""
    read = _read_string(text, pos, w)
    if type(read) is str:
        return -1, read
    return int(read[1]), ""


_UNTERMINATED = "Unterminated string"


def _read_string(text: str, pos: int, w: _Windows) -> tuple[str, int] | str:
    """The complete string at ``pos`` (its value and end, C speed), or why it does not end:
    the C string scanner's message ("Unterminated string ..." when every character up to the
    end of the text is valid).

    A string whose first quote after ``pos`` is missing or escaped may be the cut string,
    running to the end of the text: it is read on a closed copy (see ``_read_closed``)."""
    q = text.find('"', pos + 1)
    if q < 0 or text[q - 1] == "\\":
        read = _read_closed(text, pos, w)
        if read is not None:
            return read
    try:
        return _scanstring(text, pos + 1, True)
    except json.JSONDecodeError as exc:
        return exc.msg


def _read_closed(text: str, pos: int, w: _Windows) -> tuple[str, int] | str | None:
    """Read the string at ``pos`` on a copy of the text closed with a quote, when it may run
    to the end of the text (every quote after it escaped) and the text does not end in an
    escape or a surrogate: it is then read once, its decoded length is kept for the type hint
    (``w.cut_chars``), and no error is raised (the scanner's error on the text itself counts
    the lines before the string: a pass over the text). None: read it on the text (at most
    one string per scan is read this way; an invalid one is read again for its message)."""
    n = len(text)
    if w.closed_tried:
        return None
    if w.last_quote == -2:
        w.last_quote = text.rfind('"')
    last = w.last_quote
    if last > pos and text[last - 1] != "\\":
        return None  # an unescaped quote follows: the string ends before the text does
    if partial_string_end(text, pos) != (n, False):
        return None
    w.closed_tried = True
    # one copy: of the whole text closed as ``close`` closes a cut string (it is reused as
    # the closed JSON), or of the string alone when that is shorter
    offset = 0 if pos < n - pos else pos
    closed = "".join((text, '"', closers(w.frames))) if offset == 0 \
        else "".join((text[pos:], '"'))
    try:
        value, end = _scanstring(closed, pos - offset + 1, True)
    except json.JSONDecodeError:
        return None
    if end == n - offset + 1:
        w.cut_chars = len(value)
        w.closed = closed if offset == 0 else None
        return _UNTERMINATED
    return value, end + offset


def _dangling_escape_start(text: str, token_start: int) -> int:
    """Start of an incomplete escape (``\\``, ``\\u12``) at the very end, or len(text)."""
    n = len(text)
    i = text.rfind("\\", max(token_start + 1, n - 5))
    if i != -1 and _is_escape_at(text, i, token_start) and _DANGLING_ESCAPE.match(text, i):
        return i
    return n


def valid_partial_string(text: str, token_start: int) -> bool:
    """Whether ``text[token_start:]`` is the beginning of a valid JSON string (C speed)."""
    body_end = _dangling_escape_start(text, token_start)
    closed = text[token_start:body_end]
    closed += '"'
    try:
        end = _scanstring(closed, 1, True)[1]
    except ValueError:
        return False
    return bool(end == len(closed))


def partial_string_end(text: str, token_start: int) -> tuple[int, bool]:
    """Where a cut string's content is kept up to, and whether an escape was cut.

    Dropped: a dangling escape, a high surrogate escape whose low half is missing (with the
    dangling part of that half), or a raw lone high surrogate at the end (a UTF-16 cut).
    """
    end = _dangling_escape_start(text, token_start)
    in_escape = end < len(text)
    if _dangling_high_surrogate(text, end, token_start):
        return end - 6, True
    if not in_escape and end > token_start + 1 and "\ud800" <= text[end - 1] <= "\udbff":
        end -= 1
    return end, in_escape


def _dangling_high_surrogate(text: str, end: int, token_start: int) -> bool:
    """Whether a ``\\uD800``-``\\uDBFF`` escape ends at ``end`` (its low half is missing)."""
    at = end - 6
    return (at > token_start and _HIGH_SURROGATE_ESCAPE.match(text, at, end) is not None
            and _is_escape_at(text, at, token_start))


def _is_escape_at(text: str, at: int, token_start: int) -> bool:
    """Whether the backslash at ``at`` starts an escape (is preceded by an even number)."""
    if at <= token_start or text[at] != "\\":
        return False
    i = at - 1
    while i > token_start and text[i] == "\\":
        i -= 1
    return (at - 1 - i) % 2 == 0


def string_keep_end(text: str, token_start: int) -> int:
    """Where a cut string's content is kept up to (see ``partial_string_end``)."""
    return partial_string_end(text, token_start)[0]


def closers(frames: list[Frame]) -> str:
    return "".join("}" if f.is_object else "]" for f in reversed(frames))


def close(result: Scan) -> str:
    """The closed JSON text for a scan (a cut or an error): see docs/json-continuation.md."""
    text, frames = result.text, result.frames
    if result.complete and result.root is not None:
        return text[result.root.start:result.root.end]
    kind = result.kind if result.error is None else None
    if not frames:
        return _close_top_level(result, kind)
    inner = frames[-1]
    suffix = ""
    if kind in (CutKind.STRING, CutKind.STRING_ESCAPE):
        keep, suffix = string_keep_end(text, result.token_start), '"'
    elif kind is CutKind.NUMBER and _NUMBER.fullmatch(text, result.token_start):
        keep = len(text)
    elif kind is CutKind.LITERAL:
        # its first letter already decides it: 'tr' can only be true
        word = LITERALS[text[result.token_start]]
        keep, suffix = len(text), word[len(text) - result.token_start:]
    elif kind is CutKind.AFTER_OPEN:
        keep = inner.start + 1
    else:
        # a dangling key, colon or comma, a dropped number, an error: back to the
        # end of the last complete child (or the opening bracket).
        keep = inner.last_value_end
    if result.start == 0 and keep == len(text):
        if suffix == '"' and result.closed_text is not None:
            return result.closed_text  # made when the cut string was read
        return "".join((text, suffix, closers(frames)))  # one copy of a long text
    # one copy of its exact size: the slice grows in place (it is the only reference); a
    # string built with room to spare (``str.format``, ``%``: a quarter more, shrunk at the
    # end) asks for more memory than the largest copy freed before, and gets fresh pages
    closed = text[result.start:keep]
    closed += suffix + closers(frames)
    return closed


def _close_top_level(result: Scan, kind: CutKind | None) -> str:
    """``close`` for a top-level scalar cut (no container open), or "" after an error."""
    text = result.text
    if result.error is not None:
        return ""
    if kind in (CutKind.STRING, CutKind.STRING_ESCAPE):
        return text[result.token_start:string_keep_end(text, result.token_start)] + '"'
    if kind is CutKind.NUMBER and _NUMBER.fullmatch(text, result.token_start):
        return text[result.token_start:]
    if kind is CutKind.LITERAL:
        return LITERALS[text[result.token_start]]
    return "null"


def cut_path(result: Scan) -> tuple[str | int, ...]:
    """Keys and indices from the root to the cut element (see docs/json-continuation.md)."""
    text = result.text
    path: list[str | int] = []
    frames = result.frames
    for i, frame in enumerate(frames):
        innermost = i == len(frames) - 1
        if not innermost:
            path.append(_key(text, frame.key_start, frame.key_end) if frame.is_object
                        else frame.items)
            continue
        kind = result.kind
        if kind is CutKind.AFTER_VALUE and frame.children:
            last = frame.children[-1]
            path.append(_key(text, last.key_start, last.key_end) if frame.is_object
                        else frame.items - 1)
        elif kind in (CutKind.STRING, CutKind.STRING_ESCAPE, CutKind.NUMBER, CutKind.LITERAL,
                      CutKind.AFTER_KEY, CutKind.AFTER_COLON) and result.error is None:
            path.append(_key(text, frame.key_start, frame.key_end) if frame.is_object
                        else frame.items)
    return tuple(path)


def _key(text: str, start: int, end: int) -> str:
    try:
        key = json.loads(text[start:end])
    except ValueError:
        return text[start + 1:end - 1]
    return key if isinstance(key, str) else str(key)


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def path_text(path: tuple[str | int, ...]) -> str:
    """``document.sections[1].content``; ``$`` for the top level."""
    if not path:
        return "$"
    parts: list[str] = []
    for item in path:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        elif _IDENTIFIER.match(item):
            parts.append(f".{item}" if parts else item)
        else:
            parts.append(f"[{json.dumps(item, ensure_ascii=False)}]")
    return "".join(parts)
