"""Finding where a JSON text was cut off, and closing it.

One forward scan over the text finds the JSON start (skipping a code fence or a sentence of
prose), the stack of containers still open at the end, the children each open container has
completed so far, and what was being written when the text stopped (the cut kind).

Speed: the text is read once. Complete sibling values are skipped at C speed by the standard
library's JSON scanner (``json.scanner``), one call per sibling, on windows of the text: a
sibling that does not end inside its window is the open child on the path to the cut (or a
very large one), and the scan descends into it instead of reading the rest of the text to
fail at its end. Long arrays are skipped in bulk: one call of the C scanner on a run of
items, ending at a separator found by ``str.rfind`` (``runs``). Only the containers on the
path to the cut and the last token are tokenized with compiled regular expressions; nothing
here recurses, so any nesting depth works.

The tokens, kinds and C scanners live in ``syntax``; the runs skipped in bulk in ``runs``.
Offsets are code-point indices into the text (Python ``str`` indices).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from budgetlens.continuation import syntax
from budgetlens.continuation.runs import _BULK_AFTER, _BULK_TAIL, _bulk_run
from budgetlens.continuation.syntax import (
    ARRAY,
    LITERAL,
    LITERALS,
    NUMBER,
    OBJECT,
    STRING,
    Child,
    CutKind,
    _child,
    _describe_bad_string,
    _scan_once,
    _scanstring,
    partial_string_end,
    string_keep_end,
    valid_partial_string,
)
from budgetlens.source import Position

# Bound by assignment, not by ``from ... import``: CPython 3.11 compiles ``name.method()`` on a
# name a ``from`` import binds as an attribute load that makes a bound method on every call,
# and on any other global as LOAD_METHOD, which makes none. The scan calls these per sibling.
_ARRAY_SEP, _KIND_OF_TYPE, _WS = syntax._ARRAY_SEP, syntax._KIND_OF_TYPE, syntax._WS

# Tokens only the scan reads.
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_NUMBER_PREFIX = re.compile(
    r"-?(?:(?:0|[1-9][0-9]*)(?:\.[0-9]*|(?:\.[0-9]+)?[eE][+-]?[0-9]*)?)?\Z")
_OBJECT_SEP = re.compile(
    r'[ \t\n\r]*,[ \t\n\r]*("[^"\\\x00-\x1f]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})'
    r'[^"\\\x00-\x1f]*)*")[ \t\n\r]*:[ \t\n\r]*')
_VALUE_END = frozenset(" \t\n\r,]}")

# Parser states of an open container.
_OPEN = 0    # right after '{' or '['
_KEY = 1     # object, after ',': a key must follow
_COLON = 2   # object, after a key: ':' must follow
_VALUE = 3   # a value must follow (object after ':', array after ',')
_AFTER = 4   # after a value: ',' or the closer must follow

# What an open container keeps for the rendering (``Frame.keep_items``, ``Frame.keep_value``).
_KEPT_RUNS = 8             # the decoded items of this many last RUNs per array are kept
_KEPT_VALUES = 256         # the decoded values of this many last container children are kept

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
