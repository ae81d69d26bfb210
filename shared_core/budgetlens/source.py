"""Source positions, ranges, diagnostics and text edits: the plain data every core result carries.

Positions are 0-based lines and characters counted in Unicode code points (Python ``str``
indices). The language server converts them to the negotiated LSP encoding in one place.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from budgetlens.serialize import JSON_KEY


@dataclass(frozen=True, order=True)
class Position:
    line: int
    character: int


@dataclass(frozen=True)
class Range:
    start: Position
    end: Position

    @classmethod
    def at(cls, line: int, character: int, end_line: int | None = None,
           end_character: int | None = None) -> Range:
        return cls(Position(line, character),
                   Position(line if end_line is None else end_line,
                            character if end_character is None else end_character))


FILE_START = Range.at(0, 0)


@dataclass(frozen=True)
class Location:
    """A range in a file. ``file`` is a filesystem path as a string.

    ``Location.lazy`` makes one whose range is computed when first read (a check makes a
    location for every term of every step, but reads the ranges of the few it reports); it
    is the same type and compares, hashes, prints, pickles and serialises the same.
    """

    file: str
    range: Range = FILE_START

    @classmethod
    def lazy(cls, file: str, make: Callable[..., Range], *args: Any) -> Location:
        """A location of ``file`` whose range is ``make(*args)``, called on the first read
        (the arguments are kept until then)."""
        loc = _new(cls)
        _set(loc, "__dict__", {"file": file, _MAKE: make, _ARGS: args})  # one call, not three
        return loc

    def __getstate__(self) -> dict[str, Any]:
        """The fields (a lazy range computed), never the function that makes the range."""
        return {"file": self.file, "range": self.range}


_MAKE, _ARGS = "_make_range", "_range_args"  # a lazy range's function and arguments
_new, _set, _get, _del = object.__new__, object.__setattr__, object.__getattribute__, \
    object.__delattr__


class _LazyRange:
    """The class attribute behind ``Location.range``: an instance keeps its range as an
    attribute of its own, which wins over this (non-data) descriptor; a lazy one has none
    until first read, when this computes it with the function and arguments
    ``Location.lazy`` kept and stores it (dropping them). Reading it from the class gives
    the default."""

    def __get__(self, obj: Location | None, owner: type | None = None) -> Range:
        if obj is None:
            return FILE_START
        try:
            make, args = _get(obj, _MAKE), _get(obj, _ARGS)
        except AttributeError:  # another thread computed it meanwhile
            rng: Range = _get(obj, "range")
            return rng
        rng = make(*args)
        _set(obj, "range", rng)
        try:
            _del(obj, _MAKE)
            _del(obj, _ARGS)
        except AttributeError:  # pragma: no cover - another thread dropped them first
            pass
        return rng


# dataclass() kept the default for __init__; the class attribute becomes the descriptor
Location.range = _LazyRange()  # type: ignore[assignment]


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFORMATION = "information"
    HINT = "hint"


@dataclass(frozen=True)
class Related:
    """Another place that makes up a diagnostic (an inherited setting, a prompt file, ...)."""

    location: Location
    message: str


# --- the payload of a diagnostic (``Diagnostic.data``): one frozen dataclass per fix kind ---
# The language server encodes each to the LSP ``Diagnostic.data`` JSON, and decodes a
# client's copy back, in one place: ``budgetlens_lsp.convert.DiagnosticData``.

@dataclass(frozen=True)
class RenameKey:
    """A near-miss key (BL008): rename ``key`` to ``suggestion`` over ``range`` (the key's own
    characters); ``new_text`` is None when the rename is not safe to offer (a duplicate key,
    a key written with quotes or escapes)."""

    key: str
    suggestion: str
    range: Range
    new_text: str | None


@dataclass(frozen=True)
class ClampFix:
    """A budget diagnostic (BL050, BL051, ...): the step's budget and each term with its place,
    already JSON data (what the CLI prints under the message, what a clamp is about)."""

    budget: dict[str, Any]
    step_index: int
    defined_in: str
    terms: dict[str, Any]


@dataclass(frozen=True)
class FailureStage:
    """An internal failure (BL009): the stage of the analysis that failed."""

    stage: str


@dataclass(frozen=True)
class JsonCut:
    """A truncated JSON buffer (BL200): the cut's path and kind."""

    path: str
    kind: str


@dataclass(frozen=True)
class JsonTooLarge:
    """A JSON buffer too large to analyse as you type (BL201): its length in characters."""

    length: int


#: Every kind of ``Diagnostic.data``: a closed set, so mypy strict rejects a dict there.
FixData = RenameKey | ClampFix | FailureStage | JsonCut | JsonTooLarge


@dataclass(frozen=True)
class Diagnostic:
    file: str
    range: Range
    severity: Severity
    code: str
    message: str
    pipeline: str | None = None
    step: str | None = None
    related: tuple[Related, ...] = field(default=(), metadata={JSON_KEY: False})
    """Not in the JSON form (the CLI and the server each show it their own way)."""
    data: FixData | None = field(default=None, compare=False, metadata={JSON_KEY: False})
    """The payload of a quick fix (one of :data:`FixData`); not in the JSON form."""


def unique_diagnostics(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    """``diagnostics`` in order, each once: a diagnostic is the same as an earlier one with
    the same file, range, code and message (a parent's problem shows in every child)."""
    seen: set[tuple[str, Range, str, str]] = set()
    out: list[Diagnostic] = []
    for d in diagnostics:
        key = (d.file, d.range, d.code, d.message)
        if key not in seen:
            seen.add(key)
            out.append(d)
    return out


@dataclass(frozen=True)
class TextEdit:
    """Replace ``range`` of ``file`` with ``new_text`` (an empty range inserts)."""

    file: str
    range: Range
    new_text: str


_LINE_BREAK = re.compile(r"\r\n?|\n")
_NEWLINE = re.compile("\n")


class LineIndex:
    """Maps code-point offsets of a text to (line, character) positions and back.

    Lines end at ``\\n``, ``\\r\\n`` or a lone ``\\r``, as in LSP (and YAML); other
    characters (U+2028, U+0085, ...) do not end a line.
    """

    __slots__ = ("_line_starts", "_text")

    def __init__(self, text: str) -> None:
        self._text = text
        self._line_starts: list[int] | None = None  # made on first use (most are never used)

    @property
    def _starts(self) -> list[int]:
        """The offset where each line starts."""
        starts = self._line_starts
        if starts is None:
            breaks = _LINE_BREAK if "\r" in self._text else _NEWLINE
            starts = self._line_starts = [0, *(m.end() for m in breaks.finditer(self._text))]
        return starts

    @property
    def line_count(self) -> int:
        return len(self._starts)

    def position(self, offset: int) -> Position:
        offset = max(0, min(offset, len(self._text)))
        starts = self._starts
        line = bisect.bisect_right(starts, offset) - 1
        return Position(line, offset - starts[line])

    def offset(self, position: Position) -> int:
        if position.line >= len(self._starts):
            return len(self._text)
        start = self._starts[max(position.line, 0)]
        end = self.line_end(position.line)
        return min(start + max(position.character, 0), end)

    def line_end(self, line: int) -> int:
        """Offset of the end of ``line`` (before its ``\\r\\n``, ``\\n`` or ``\\r``)."""
        if line + 1 < len(self._starts):
            end = self._starts[line + 1] - 1
            if self._text[end] == "\n" and end > 0 and self._text[end - 1] == "\r":
                end -= 1
            return end
        return len(self._text)

    def line_text(self, line: int) -> str:
        if not 0 <= line < len(self._starts):
            return ""
        return self._text[self._starts[line]:self.line_end(line)]

    def range(self, start: int, end: int) -> Range:
        return Range(self.position(start), self.position(end))


def apply_text_edits(text: str, edits: list[TextEdit] | tuple[TextEdit, ...]) -> str:
    """Apply non-overlapping edits (all for the same file) to ``text``.

    Edits are applied from the end of the text backwards, so their ranges all refer to
    the original text. Overlapping edits raise ``ValueError``.
    """
    index = LineIndex(text)
    spans = sorted(((index.offset(e.range.start), index.offset(e.range.end), e.new_text)
                    for e in edits), key=lambda s: (s[0], s[1]))
    for (_, prev_end, _), (start, _, _) in itertools.pairwise(spans):
        if start < prev_end:
            raise ValueError("overlapping text edits")
    out = text
    for start, end, new_text in reversed(spans):
        out = out[:start] + new_text + out[end:]
    return out
