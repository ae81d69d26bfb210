"""``get_contexts``: everything a continuation needs about a JSON text that may be cut off.

>>> ctx = get_contexts('{"a": [1, 2], "b": "hel')
>>> ctx.complete_part
'{"a": [1, 2], "b": "hel"}'
>>> ctx.cut.kind.value, ctx.cut.path_text, ctx.json_parsing_success
('string', 'b', True)
>>> get_contexts('[1, 2]').overlap_context
''
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from budgetlens.continuation.cut import (
    Scan,
    close,
    cut_path,
    path_text,
    position_at,
    scan,
    state_kind,
    try_complete,
)
from budgetlens.continuation.render import render_hierarchy
from budgetlens.continuation.syntax import KIND_PHRASES, CutKind

DEFAULT_BUDGET = 1000
"""Characters of values the prompt rendering may show in full (structure is free)."""
DEFAULT_MARKER = "<<<CUT>>>"
"""Printed at the cut point in ``hierarchy_context_for_prompt``."""
DEFAULT_OVERLAP_CHARS = 48
"""Length of ``overlap_context``: the last characters before the cut."""

_LEADING_SPACE = re.compile(r"[ \t\n\r\ufeff]*")
_FIRST_BRACKET = re.compile(r"[\[{]")
_SCALAR_START = frozenset('"-0123456789tfn')
_TRAILING_SPACE = " \t\n\r"
_TOKEN_TAIL = re.compile(r'[^ \t\n\r,:\[\]{}"]*')


@dataclass(frozen=True)
class JsonCut:
    """Where a JSON text stops before its end. Line and character are 0-based code points."""

    offset: int
    line: int
    character: int
    path: tuple[str | int, ...]
    kind: CutKind
    path_text: str
    description: str


@dataclass(frozen=True)
class JsonProblem:
    """Why a text is not (a cut-off prefix of) JSON, and where."""

    offset: int
    line: int
    character: int
    message: str
    path: tuple[str | int, ...] = ()
    path_text: str = "$"


@dataclass(frozen=True)
class JsonContexts:
    """The contexts of a possibly cut JSON text (see docs/json-continuation.md).

    ``hierarchy_context`` is the CUT text (from the JSON start to the cut) and is the base for
    merging the next fragment; ``complete_part`` is the CLOSED JSON that parses;
    ``hierarchy_context_for_prompt`` is the budgeted rendering with the cut marked.
    """

    overlap_context: str
    hierarchy_context: str
    hierarchy_context_for_prompt: str
    complete_part: str
    json_parsing_success: bool
    cut: JsonCut | None
    error: JsonProblem | None
    description: str
    budget: int
    marker: str
    json_start: int = 0
    skipped_prefix: str = ""
    skipped_suffix: str = ""

    @property
    def is_complete(self) -> bool:
        """The text holds a whole JSON value (nothing to continue)."""
        return self.json_parsing_success and self.cut is None


def _where(where: str) -> str:
    if where == "$":
        return "the top level"
    return where if len(where) <= 160 else "…" + where[-159:]


def describe_cut(kind: CutKind, path: tuple[str | int, ...] | str) -> str:
    """``cut inside a string at document.sections[1].content``."""
    where = path if isinstance(path, str) else path_text(path)
    return f"cut {KIND_PHRASES[kind]} at {_where(where)}"


def _skip_space(text: str, pos: int) -> int:
    m = _LEADING_SPACE.match(text, pos)
    return m.end() if m else pos


def _candidates(text: str) -> list[int]:
    """Where the JSON may start: the first non-blank character when it can start a value,
    past an opening code fence, then the first brace or bracket (prose before the JSON)."""
    n = len(text)
    i = _skip_space(text, 0)
    if i < n and text.startswith("```", i):
        line_end = text.find("\n", i)
        i = n if line_end < 0 else _skip_space(text, line_end + 1)
    if i >= n:
        return []
    if text[i] in "{[":
        return [i]
    m = _FIRST_BRACKET.search(text, i)
    out = [i] if text[i] in _SCALAR_START else []
    if m is not None:
        out.append(m.start())
    return out


def _scan_from(text: str, start: int) -> Scan:
    if text[start] in "{[":
        last = len(text) - 1
        while last > start and text[last] in " \t\n\r":
            last -= 1
        # a complete document ends with its closer (or with text after it); brackets balance
        # (a text that ends otherwise, e.g. with prose after the JSON, is read by the scan)
        pairs = ("{}", "[]") if text[start] == "{" else ("[]", "{}")
        balanced = text[last] == pairs[0][1] and all(
            text.count(pair[0], start) == text.count(pair[1], start) for pair in pairs)
        if balanced:
            root = try_complete(text, start)
            if root is not None:
                return Scan(text=text, start=start, stop=root.end, frames=[], complete=True,
                            root=root, value_started=True)
    return scan(text, start)


def _acceptable(result: Scan) -> bool:
    if result.error is not None:
        return False
    if result.complete and result.root is not None:
        return not result.text[result.root.end:].strip()
    return True


def get_contexts(text: str, *, budget: int = DEFAULT_BUDGET, marker: str = DEFAULT_MARKER,
                 overlap_chars: int = DEFAULT_OVERLAP_CHARS) -> JsonContexts:
    """Find the cut in ``text`` (an LLM reply that may stop mid-JSON) and build its contexts.

    Never raises for any text; an invalid or missing JSON value is reported in ``error`` with
    ``json_parsing_success`` false. ``budget`` must be >= 0. Whitespace at the very end (an
    editor's final newline) is not part of the reply: when the text is not JSON with it but
    is a cut without it, that cut is reported (offsets still index ``text``).
    """
    if budget < 0:
        raise ValueError(f"budget must be >= 0, got {budget}")
    candidates = _candidates(text)
    if not candidates:
        where = position_at(text, len(text))
        message = "no JSON value found" if text.strip() else "empty text: no JSON value"
        return JsonContexts(
            overlap_context="", hierarchy_context="", hierarchy_context_for_prompt="",
            complete_part="", json_parsing_success=False, cut=None,
            error=JsonProblem(len(text), where.line, where.character, message),
            description=message, budget=budget, marker=marker, json_start=len(text),
            skipped_prefix=text)
    result = _scan_reply(text, candidates[0])
    if not _acceptable(result) and len(candidates) > 1:
        second = _scan_reply(text, candidates[1])
        if _acceptable(second) or result.error is not None:
            result = second
    return _contexts(result, budget=budget, marker=marker, overlap_chars=overlap_chars)


def _scan_reply(text: str, start: int) -> Scan:
    """Scan the JSON starting at ``start``. Whitespace at the very end is not part of the
    reply (editors add a final newline on save): when the text is invalid because of it, the
    text is analysed up to where that whitespace stops being JSON."""
    result = _scan_from(text, start)
    if result.error is not None and _error_in_trailing_token(text, result.error.offset):
        trimmed = _without_trailing_space(text, result.error.offset)
        if start < len(trimmed):
            retry = _scan_from(trimmed, start)
            if retry.error is None:
                return retry
    return result


def _error_in_trailing_token(text: str, error_offset: int) -> bool:
    """Whether the text ends with whitespace and the error lies in it or in the token just
    before it (``tr`` of ``[tr\\n``): only then can the text without it be a cut."""
    if not text or text[-1] not in _TRAILING_SPACE:
        return False
    end = len(text.rstrip(_TRAILING_SPACE))
    if error_offset >= end:
        return True
    token = _TOKEN_TAIL.match(text, error_offset)
    return token is not None and token.end() >= end


def _without_trailing_space(text: str, error_offset: int) -> str:
    """``text`` without the whitespace at its very end; when the error lies inside that
    whitespace (a raw newline in a cut string), only from the error on: the spaces before it
    are string content."""
    end = len(text.rstrip(_TRAILING_SPACE))
    return text[:error_offset] if error_offset >= end else text[:end]


def _contexts(result: Scan, *, budget: int, marker: str, overlap_chars: int) -> JsonContexts:
    text, start = result.text, result.start
    prefix = text[:start]
    if result.complete and result.root is not None:
        value = text[result.root.start:result.root.end]
        suffix = text[result.root.end:]
        suffix = suffix if suffix.strip() else ""
        notes = []
        if prefix.strip():
            notes.append("text before it skipped")
        if suffix:
            notes.append("text after it skipped")
        description = "complete JSON" + (f" ({', '.join(notes)})" if notes else "")
        return JsonContexts(
            overlap_context="", hierarchy_context=value, hierarchy_context_for_prompt="",
            complete_part=value, json_parsing_success=True, cut=None, error=None,
            description=description, budget=budget, marker=marker, json_start=start,
            skipped_prefix=prefix, skipped_suffix=suffix)

    if result.error is not None:
        err = result.error
        at = position_at(text, err.offset)
        path = cut_path(result)
        message = f"invalid JSON at line {at.line + 1}, character {at.character + 1}: " \
                  f"{err.message}"
        kind = state_kind(result.frames)
        header = f"// {message}; the valid part stops at {marker}"
        rendering = render_hierarchy(text, result.frames, kind=kind, token_start=-1,
                                     stop=result.stop, budget=budget, marker=marker,
                                     header=header) if result.frames else ""
        return JsonContexts(
            overlap_context="", hierarchy_context=text[start:result.stop],
            hierarchy_context_for_prompt=rendering, complete_part=close(result),
            json_parsing_success=False, cut=None,
            error=JsonProblem(err.offset, at.line, at.character, err.message, path,
                              path_text(path)),
            description=message, budget=budget, marker=marker, json_start=start,
            skipped_prefix=prefix)

    kind = result.kind
    assert kind is not None
    # the closed copy first: a long text's copy then reuses the memory the scan just freed
    complete = close(result)
    path = cut_path(result)
    at = position_at(text, len(text))
    where = path_text(path)
    description = describe_cut(kind, where)
    cut = JsonCut(len(text), at.line, at.character, path, kind, where, description)
    hierarchy = text[start:]
    header = f"// {description}; the text stops at {marker}"
    rendering = render_hierarchy(text, result.frames, kind=kind, token_start=result.token_start,
                                 stop=len(text), budget=budget, marker=marker, header=header,
                                 cut_chars=result.cut_chars)
    return JsonContexts(
        overlap_context=hierarchy[-max(overlap_chars, 1):],
        hierarchy_context=hierarchy, hierarchy_context_for_prompt=rendering,
        complete_part=complete, json_parsing_success=True, cut=cut, error=None,
        description=description, budget=budget, marker=marker, json_start=start,
        skipped_prefix=prefix)
