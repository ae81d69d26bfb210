"""JSON syntax shared by the scan (``cut``), the runs (``runs``) and the rendering.

What was being written when a text stopped: ``CutKind``. What a complete value is:
``ValueKind`` and ``Child`` (its span, kind and size). The patterns both the scan and the runs
use, and ``JSON_STRING``, the string literal pattern the rendering's patterns share.

The standard library's C scanners, bound once: ``_scan_once`` reads a whole value,
``_scanstring`` a string. Strict JSON: ``reject_constant`` refuses ``NaN`` and ``Infinity``.

A string cut in the middle: where its content is kept up to (``partial_string_end``) and
whether what was written so far is valid (``valid_partial_string``).

Names with a leading underscore are shared inside this package only. Offsets are code-point
indices into the text (Python ``str`` indices).
"""

from __future__ import annotations

import json
import json.decoder
import json.scanner
import re
from collections.abc import Callable
from enum import Enum
from typing import Any, NamedTuple


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
_ARRAY_SEP = re.compile(r"[ \t\n\r]*,[ \t\n\r]*")


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

