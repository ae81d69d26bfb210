"""Finding where a JSON text was cut off, and closing it.

One forward scan over the text finds the JSON start (skipping a code fence or a sentence of
prose), the stack of containers still open at the end, the children each open container has
completed so far, and what was being written when the text stopped (the cut kind).

Speed: complete sibling values are skipped at C speed by the standard library's JSON scanner
(``json.scanner``), one call per sibling; only the containers on the path to the cut and the
last token are tokenized with compiled regular expressions. The number of children to skip on
each open container comes from pydantic_core's partial parser (Rust). When that parser
refuses the text (invalid JSON, nesting deeper than it allows), siblings are still tried with
the C scanner on the first levels and the rest is tokenized; nothing here recurses, so
any nesting depth works.

Offsets are code-point indices into the text (Python ``str`` indices).
"""

from __future__ import annotations

import json
import json.decoder
import json.scanner
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, NamedTuple

import pydantic_core

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

# A long array is skipped in bulk: the position of the separator after its first items is
# found by counting commas (C speed), and those items are checked by one call of the C scanner
# on them alone; the last RUN_KEEP items stay single children. The renderer splits a run only
# if its budget reaches it.
RUN = ValueKind.RUN
RUN_MIN = 512
RUN_KEEP = 256


def _nth_comma(text: str, pos: int, count: int) -> int:
    """Offset of the ``count``-th ',' at or after ``pos``, or -1 (C-speed counting)."""
    n = len(text)
    start, need, chunk = pos, count, 4096
    while True:
        stop = min(n, start + chunk)
        found = text.count(",", start, stop)
        if found >= need:
            break
        if stop >= n:
            return -1
        need -= found
        start, chunk = stop, chunk * 2
    lo, hi = start, stop - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if text.count(",", start, mid + 1) >= need:
            hi = mid
        else:
            lo = mid + 1
    return lo


def _skip_items(text: str, pos: int, count: int) -> int:
    """End of the separator after ``count`` complete array items starting at ``pos``, or -1.

    Succeeds only when every comma up to there separates items (none inside a string or a
    nested container) and the items are valid JSON: the C scanner must read exactly ``count``
    of them.
    """
    comma = _nth_comma(text, pos, count)
    if comma < 0:
        return -1
    probe = "["
    probe += text[pos:comma]
    probe += "]"
    try:
        value, end = _scan_once(probe, 0)
    except (StopIteration, ValueError, RecursionError):
        return -1
    if end != len(probe) or type(value) is not list or len(value) != count:
        return -1
    return comma + 1


_SCALAR = (r'(?:"[^"\\\x00-\x1f]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*)*"'
           r"|-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null)")


def _skip_scalars(text: str, pos: int, count: int) -> int:
    """Like ``_skip_items`` for ``count`` scalar items whose strings may hold commas: one
    regular-expression match (validating each item), or -1."""
    run = re.compile(r"(?:" + _SCALAR + r"[ \t\n\r]*,[ \t\n\r]*){" + str(count) + "}")
    m = run.match(text, pos)
    return -1 if m is None else m.end()


def expand_run(text: str, run: Child) -> list[Child]:
    """The single children a RUN child stands for."""
    out: list[Child] = []
    at = run.start
    while at < run.end:
        value, end = _scan_once(text, at)
        kind = _KIND_OF_TYPE.get(type(value), NUMBER)
        out.append(Child(at, end, kind, len(value) if kind in (OBJECT, ARRAY) else 0))
        at = _SEPARATOR.match(text, end).end()  # type: ignore[union-attr]  # always matches
    return out


# Levels on which complete siblings are tried with the C scanner when pydantic_core gave no
# hint (each failed try re-reads that subtree once, so this bounds the extra work).
_GREEDY_LEVELS = 32
_GREEDY = 1 << 62


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
    skip: int = 0                       # complete children still to skip with the C scanner
    extra: int = 0                      # items stood for by RUN children beyond one each

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


def position_at(text: str, offset: int) -> Position:
    """The 0-based line and code-point character of ``offset`` (``LineIndex`` semantics)."""
    offset = max(0, min(offset, len(text)))
    line = text.count("\n", 0, offset)
    return Position(line, offset - (text.rfind("\n", 0, offset) + 1))


def partial_hints(text: str, start: int) -> list[int] | None:
    """How many children each container on the last-child chain holds, per pydantic_core.

    ``[3, 2]`` means: the top-level container has 3 children (at least 2 are complete), its
    last child has 2. None when pydantic_core refuses the text.
    """
    try:
        node = pydantic_core.from_json(text[start:] if start else text, allow_partial=True)
    except (ValueError, TypeError):  # TypeError: lone surrogates cannot be encoded
        return None
    hints: list[int] = []
    while True:
        if type(node) is dict and node:
            hints.append(len(node))
            node = next(reversed(node.values()))
        elif type(node) is list and node:
            hints.append(len(node))
            node = node[-1]
        else:
            return hints


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


# long-function: the JSON scanner is one state machine over the text (states _OPEN.._AFTER,
# a frame stack, C-speed sibling skipping inlined for speed); split up, its hot loop would pay a
# call per token and its states would be spread over functions that share every local.
def scan(text: str, start: int = 0, hints: list[int] | None = None) -> Scan:
    """Scan the JSON value beginning at ``start``; never raises, never recurses."""
    n = len(text)
    frames: list[Frame] = []
    result = Scan(text=text, start=start, stop=n, frames=frames)
    scan_once = _scan_once
    ws = _WS.match
    pos = start

    def new_frame(is_object: bool, at: int) -> Frame:
        depth = len(frames)
        if hints is not None:
            skip = hints[depth] - 1 if depth < len(hints) else 0
        else:
            skip = _GREEDY if depth < _GREEDY_LEVELS else 0
        return Frame(is_object, at, skip=max(skip, 0))

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
        if frame is not None and frame.skip > 0 and state == _VALUE:
            # Skip complete siblings at C speed.
            children = frame.children
            try:
                if frame.is_object:
                    while True:
                        value, end = scan_once(text, pos)
                        kind = _KIND_OF_TYPE.get(type(value), NUMBER)
                        if kind == NUMBER and (end >= n or text[end] not in _VALUE_END):
                            raise StopIteration  # a number that may go on: tokenize it
                        children.append(_child((
                            pos, end, kind, len(value) if kind in (OBJECT, ARRAY) else 0,
                            frame.key_start, frame.key_end)))
                        frame.skip -= 1
                        frame.state = _AFTER
                        pos = end
                        m = _OBJECT_SEP.match(text, end)
                        if m is None or frame.skip <= 0:
                            break
                        frame.key_start, frame.key_end = m.span(1)
                        frame.state = _VALUE
                        pos = m.end()
                else:
                    if RUN_MIN <= frame.skip < _GREEDY and c not in "{[":
                        # a counted hint (not greedy), and items that are not containers
                        count = frame.skip - RUN_KEEP
                        end = _skip_items(text, pos, count)
                        if end < 0:
                            end = _skip_scalars(text, pos, count)
                        if end > 0:
                            children.append(_child((pos, end, RUN, count, -1, -1)))
                            frame.extra += count - 1
                            frame.skip -= count
                            pos = ws(text, end).end()  # type: ignore[union-attr]
                    while True:
                        value, end = scan_once(text, pos)
                        kind = _KIND_OF_TYPE.get(type(value), NUMBER)
                        if kind == NUMBER and (end >= n or text[end] not in _VALUE_END):
                            raise StopIteration  # a number that may go on: tokenize it
                        children.append(_child((
                            pos, end, kind, len(value) if kind in (OBJECT, ARRAY) else 0,
                            -1, -1)))
                        frame.skip -= 1
                        frame.state = _AFTER
                        pos = end
                        m = _ARRAY_SEP.match(text, end)
                        if m is None or frame.skip <= 0:
                            break
                        frame.state = _VALUE
                        pos = m.end()
            except (StopIteration, ValueError, RecursionError):
                frame.skip = 0
            continue
        if state == _VALUE:
            result.value_started = True
            if c == "{" or c == "[":
                frames.append(new_frame(c == "{", pos))
                pos += 1
                continue
            if c == '"':
                end = _string_end(text, pos)
                if end > 0:
                    add_child(Child(pos, end, STRING))
                    pos = end
                    continue
                return _cut_string(result, pos, CutKind.STRING)
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
                end = _string_end(text, pos)
                if end > 0:
                    frame.key_start, frame.key_end = pos, end
                    frame.state = _COLON
                    pos = end
                    continue
                return _cut_string(result, pos, CutKind.KEY)
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
            add_child(Child(frame.start, pos + 1, OBJECT if frame.is_object else ARRAY,
                            frame.items))
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


def _cut_string(result: Scan, pos: int, kind: CutKind) -> Scan:
    """A string (value or key) at ``pos`` that does not end: cut inside it, or an error."""
    if valid_partial_string(result.text, pos):
        return _cut_at(result, pos, kind)
    at, message = _describe_bad_string(result.text, pos)
    result.error = ScanError(at, message)
    result.stop = pos
    return result


def _string_end(text: str, pos: int) -> int:
    """End of the complete string token starting at ``pos`` (C speed), or -1."""
    try:
        return int(_scanstring(text, pos + 1, True)[1])
    except ValueError:
        return -1


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
        return text + suffix + closers(frames) if suffix else text + closers(frames)
    return "".join((text[result.start:keep], suffix, closers(frames)))


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
