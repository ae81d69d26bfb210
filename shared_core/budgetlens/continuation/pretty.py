"""Printing a complete value one member or item per line, as the hierarchy context shows it.

``pretty_lines`` prints a value's source with each scalar or member on its own line, the
literals verbatim, indented by ``INDENT`` per level (``MAX_INDENT_LEVELS`` at most). Iterative:
any nesting depth.

Two shortcuts skip the token-by-token pass. A source already laid out one group per line is
re-indented line by line (``_relaid_lines``). An object or array of scalars only is printed
from its parts (``flat_parts``, ``flat_lines``), which also give its cost (``flat_cost``).

``verbatim_cost`` is the cost of a container whose source is exactly what ``pretty_lines``
prints: from its length and its decoded value, without reading it again. The rendering
(``render``) then prints that source as it is.
"""

from __future__ import annotations

import re
from typing import Any

from budgetlens.continuation.syntax import JSON_STRING

MAX_INDENT_LEVELS = 32    # deeper levels are indented like level 32
INDENT = "  "

_STR = JSON_STRING
# One token of a valid JSON text per match, as one string (``findall``: no match objects): a
# string (a key with the whitespace and colon after it: each string is read once), a bracket
# or comma, another scalar.
_PRETTY_TOKEN = re.compile(
    r"[ \t\n\r]*(" + _STR + r"(?:[ \t\n\r]*:)?|[\[\]{},]|[^ \t\n\r,:\[\]{}\"]+)")


_PADS = [INDENT * level for level in range(MAX_INDENT_LEVELS + 1)]


def _indent(depth: int) -> str:
    return _PADS[depth] if depth <= MAX_INDENT_LEVELS else _PADS[MAX_INDENT_LEVELS]


_GROUP = (r"(?:" + _STR + r": )?(?:" + _STR + r"|[^ \t\n\r,:\[\]{}\"]+|\{\}|\[\]|[\[\]{}]),?")
# A value already laid out one member or item per line (as json.dumps(indent=...) writes it):
# every line is indentation and one group (a key and ": ", a scalar, an opener, a closer or an
# empty container, a comma); an opener whose closer follows on the next line is not such a
# layout ("{}" is written on one line).
_LINE_LAYOUT = re.compile(_GROUP + r"(?:\n *" + _GROUP + r")*")
_SPLIT_EMPTY = re.compile(r"[\[{]\n *[\]}]")


def _relaid_lines(text: str, start: int, end: int, depth: int) -> list[str] | None:
    """``pretty_lines`` for a value whose source already has its layout: its lines with the
    indentation recomputed, one step per line instead of per token; None for another layout."""
    if _LINE_LAYOUT.fullmatch(text, start, end) is None \
            or _SPLIT_EMPTY.search(text, start, end) is not None:
        return None
    lines = text[start:end].split("\n")
    first = lines[0]
    if first[-1] in "[{":
        depth += 1
    pads, top = _PADS, MAX_INDENT_LEVELS
    for i in range(1, len(lines)):
        line = lines[i].lstrip(" ")
        if line[0] in "]}":
            depth -= 1
        lines[i] = (pads[depth] if depth <= top else pads[top]) + line
        if line[-1] in "[{":
            depth += 1
    return lines


_WS_RE = r"[ \t\n\r]*"
_SCALAR_RE = r"(?:" + _STR + r"|[^ \t\n\r,:\[\]{}\"]+)"
_MEMBER_RE = _STR + _WS_RE + ":" + _WS_RE + _SCALAR_RE + _WS_RE
# An object or array of scalars only (no nested container): laid out from one findall.
_FLAT_OBJECT = re.compile(r"\{" + _WS_RE + _MEMBER_RE + r"(?:," + _WS_RE + _MEMBER_RE + r")*\}")
_FLAT_ARRAY = re.compile(r"\[" + _WS_RE + _SCALAR_RE + _WS_RE + r"(?:," + _WS_RE + _SCALAR_RE
                         + _WS_RE + r")*\]")
_MEMBERS = re.compile(r"(" + _STR + r")" + _WS_RE + ":" + _WS_RE + r"(" + _SCALAR_RE + r")")
_ITEMS = re.compile(_SCALAR_RE)


Flat = list[tuple[str, str]]
"""The members (key, value literals) of an object, or the items ("", literal) of an array, that
holds scalars only."""


def flat_parts(text: str, start: int, end: int) -> Flat | None:
    """The members or items of an object or array that holds scalars only (literals as
    written); None for one that holds a container (or is empty)."""
    parts: Flat
    if text[start] == "{":
        if _FLAT_OBJECT.fullmatch(text, start, end) is None:
            return None
        parts = _MEMBERS.findall(text, start + 1, end - 1)
        return parts
    if _FLAT_ARRAY.fullmatch(text, start, end) is None:
        return None
    parts = [("", item) for item in _ITEMS.findall(text, start + 1, end - 1)]
    return parts


def flat_cost(parts: Flat) -> int:
    """The budget cost of a flat object's members or a flat array's items."""
    return sum([len(value) for _, value in parts])


def flat_lines(parts: Flat, opener: str, depth: int) -> list[str]:
    """``pretty_lines`` of a flat object or array from its parts."""
    pad = _indent(depth + 1)
    if opener == "{":
        lines = [pad + key + ": " + value + "," for key, value in parts]
        closer = "}"
    else:
        lines = [pad + item + "," for _, item in parts]
        closer = "]"
    lines[-1] = lines[-1][:-1]
    return [opener, *lines, _indent(depth) + closer]


def _flat_lines(text: str, start: int, end: int, depth: int) -> list[str] | None:
    """``pretty_lines`` for an object or array that holds scalars only; None otherwise."""
    parts = flat_parts(text, start, end)
    return None if parts is None else flat_lines(parts, text[start], depth)


def pretty_lines(text: str, start: int, end: int, depth: int) -> list[str]:
    """A complete value's source, one scalar or member per line (literals verbatim).

    The first line carries no indentation (it follows a key or an indent); nested lines are
    indented for ``depth + 1`` and deeper. Iterative: any nesting depth.
    """
    relaid = _relaid_lines(text, start, end, depth)
    if relaid is None and text.find("{", start + 1, end) < 0 \
            and text.find("[", start + 1, end) < 0:  # (a bracket in a string: read below)
        relaid = _flat_lines(text, start, end, depth)
    if relaid is not None:
        return relaid
    lines: list[str] = []
    append = lines.append
    pads, top = _PADS, MAX_INDENT_LEVELS
    cur = ""
    pending_open = False
    for token in _PRETTY_TOKEN.findall(text, start, end):
        c = token[0]
        if pending_open:
            pending_open = False
            if c == "]" or c == "}":
                cur += c
                depth -= 1
                continue
            append(cur)
            cur = pads[depth] if depth <= top else pads[top]
        if c == ",":  # (a token that starts with a comma is the comma)
            append(cur + ",")
            cur = pads[depth] if depth <= top else pads[top]
        elif c == "{" or c == "[":
            cur += c
            depth += 1
            pending_open = True
        elif c == "]" or c == "}":
            append(cur)
            depth -= 1
            cur = (pads[depth] if depth <= top else pads[top]) + c
        elif c == '"' and token[-1] == ":":  # a key (a string literal ends with its quote)
            cur += token[:-1].rstrip(" \t\n\r") + ": "
        else:  # a scalar literal
            cur += token
    append(cur)
    return lines


_LAYOUT_LEVELS = 6  # nesting levels below a value that its layout pattern covers
_PLAIN_KEY = r'"[^"\\\n]*": '  # a key without escapes: written as its decoded text in quotes
_LAYOUTS: dict[int, re.Pattern[str]] = {}


def _layout_pattern(depth: int, levels: int) -> str:
    """A value as ``pretty_lines`` prints it at ``depth`` (one group per line, each line
    indented for its level; an empty container on one line), ``levels`` levels deep. The text
    it is matched on is valid JSON, so members and items need not be told apart."""
    if levels == 0:
        return r"(?:" + _SCALAR_RE + r"|\{\}|\[\])"
    inner = _layout_pattern(depth + 1, levels - 1)
    here, nested = re.escape("\n" + _indent(depth)), re.escape("\n" + _indent(depth + 1))
    return (r"(?:" + _SCALAR_RE + r"|\{\}|\[\]|[\[{](?:" + nested + r"(?:" + _PLAIN_KEY
            + r")?" + inner + r"(?:,(?=\n)|(?=" + here + r"[\]}])))+" + here + r"[\]}])")


def _layout_at(depth: int) -> re.Pattern[str]:
    pattern = _LAYOUTS.get(depth)
    if pattern is None:
        pattern = _LAYOUTS[depth] = re.compile(_layout_pattern(depth, _LAYOUT_LEVELS))
    return pattern


def verbatim_cost(text: str, start: int, end: int, value: Any, depth: int) -> int:
    """The budget cost of the non-empty container ``text[start:end]`` whose decoded value is
    ``value``, when its source is exactly what ``pretty_lines`` prints for it at ``depth``;
    else -1. Such a source is its length minus its structure: the line breaks, indentation,
    brackets, commas, keys (without escapes: their decoded length and quotes) and ": ", all
    known from ``value``; a key given twice (dropped from ``value``) leaves a line more than
    ``value`` accounts for, and is read the long way."""
    if not value or _layout_at(depth).fullmatch(text, start, end) is None:
        return -1
    structure = lines = 0
    stack = [(value, depth)]
    pop, push = stack.pop, stack.append
    step, top = len(INDENT), MAX_INDENT_LEVELS
    while stack:
        v, level = pop()
        n = len(v)
        # brackets, commas, a line per member or item (and its indentation), the closer's line
        structure += n * (2 + step * (level + 1 if level < top else top)) + 2 \
            + step * (level if level < top else top)
        lines += n + 1
        if type(v) is dict:
            structure += sum(map(len, v)) + 4 * n  # keys, their quotes and ": "
            v = v.values()
        level += 1
        for item in v:
            t = type(item)
            if t is dict or t is list:
                if item:
                    push((item, level))
                else:
                    structure += 2
    if text.count("\n", start, end) != lines:
        return -1
    return end - start - structure

