r"""Every conversion from core data to LSP types (and LSP positions back), in one place.

Core positions count Unicode code points (Python ``str`` indices). LSP positions count code
units of the negotiated ``positionEncoding``: UTF-16 by default (an emoji is 2 units, a CJK
character 1), UTF-8 (a CJK character is 3 units, an emoji 4) or UTF-32 (code points, the same
as the core). The fix-ups need the text of the line, so a :class:`Converter` is built with a
function that returns a file's current text (the editor buffer when open, else the disk).

Lines, too, are counted two ways. The LSP ends a line at ``\n``, ``\r\n`` or ``\r`` and at
nothing else: U+2028, U+2029, U+0085, ``\v``, ``\f`` and ``\x1c``-``\x1e`` (where
``str.splitlines`` also splits) are ordinary characters of a line. The core's
:class:`~budgetlens.source.LineIndex` counts lines the same way, so core and LSP lines agree.
:class:`LspText` counts them in code units of the negotiated encoding; the server applies the
editor's incremental changes with it (:func:`apply_changes`), so its copy of a buffer is the
editor's text.
"""

from __future__ import annotations

import bisect
import functools
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote_to_bytes, urlsplit

from lsprotocol import types
from pygls import uris

from budgetlens import codes
from budgetlens.serialize import to_jsonable
from budgetlens.source import (
    ClampFix,
    Diagnostic,
    FailureStage,
    FixData,
    JsonCut,
    JsonTooLarge,
    LineIndex,
    Location,
    Position,
    Range,
    RenameKey,
    Severity,
    TextEdit,
)

UTF8 = types.PositionEncodingKind.Utf8.value
UTF16 = types.PositionEncodingKind.Utf16.value
UTF32 = types.PositionEncodingKind.Utf32.value
SOURCE = "budgetlens"

_SEVERITY = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFORMATION: types.DiagnosticSeverity.Information,
    Severity.HINT: types.DiagnosticSeverity.Hint,
}


# --- paths and URIs ---------------------------------------------------------------------------

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:")


def uri_from_path(path: str | Path) -> str:
    """The ``file:`` URI of a path; a key that already is a URI (an untitled buffer's) stays."""
    if isinstance(path, str):
        return _uri_of_text(path)
    return _file_uri(str(path))


@functools.lru_cache(maxsize=16384)
def _uri_of_text(path: str) -> str:
    """:func:`uri_from_path` of a string, memoised (a publish batch names the same prompt,
    config and base files in every dependent's related information)."""
    if _SCHEME.match(path) and not os.path.isabs(path):
        return path
    return _file_uri(path)


def _file_uri(path: str) -> str:
    """pygls's URI of ``path``; for a name that is not valid UTF-8 (its bytes kept as
    surrogate escapes, as ``os.listdir`` gives them) each byte is percent-encoded, so
    ``bad\\xff.yaml`` is ``bad%FF.yaml`` and :func:`path_from_uri` gives the same bytes back."""
    try:
        uri = uris.from_fs_path(path)
    except UnicodeEncodeError:
        quoted = quote(os.fsencode(path), safe="/")
        return "file://" + (quoted if quoted.startswith("/") else "/" + quoted)
    return uri if uri is not None else Path(path).resolve().as_uri()


def path_from_uri(uri: str) -> Path | None:
    """The filesystem path of a ``file:`` URI, None for other schemes."""
    if not uri.startswith("file:"):
        return None
    path = uris.to_fs_path(uri)
    if path and "\ufffd" in path and os.name != "nt":
        parts = urlsplit(uri)
        if not parts.netloc:  # maybe bytes that are not UTF-8 (_file_uri): decoded as names are
            path = os.fsdecode(unquote_to_bytes(parts.path))
    return Path(path) if path else None


def encoding_name(value: object) -> str:
    """``"utf-8"``, ``"utf-16"`` or ``"utf-32"`` for a negotiated position encoding (a
    ``PositionEncodingKind`` or its string); anything else is the LSP default, UTF-16."""
    if isinstance(value, types.PositionEncodingKind):
        return str(value.value)
    return value if isinstance(value, str) and value in (UTF8, UTF16, UTF32) else UTF16


# --- code units -------------------------------------------------------------------------------

def _units(ch: str, encoding: str) -> int:
    cp = ord(ch)
    if encoding == UTF16:
        return 2 if cp > 0xFFFF else 1
    if cp < 0x80:
        return 1
    if cp < 0x800:
        return 2
    if cp < 0x10000:
        return 3
    return 4


def to_lsp_character(line: str, character: int, encoding: str) -> int:
    """Code-point column ``character`` of ``line`` as a column in ``encoding`` units."""
    character = max(0, min(character, len(line)))
    if encoding == UTF32:
        return character
    prefix = line[:character]
    if prefix.isascii():
        return character
    if encoding == UTF16:
        return len(prefix.encode("utf-16-le", "surrogatepass")) // 2
    return len(prefix.encode("utf-8", "surrogatepass"))


def from_lsp_character(line: str, units: int, encoding: str) -> int:
    """A column in ``encoding`` units of ``line`` as a code-point column.

    A column inside a character (half of a surrogate pair) moves to the character's end;
    a column past the end of the line clamps to the end, as the LSP specification says.
    """
    if units <= 0:
        return 0
    if encoding == UTF32 or line.isascii():
        return min(units, len(line))
    seen = 0
    for i, ch in enumerate(line):
        if seen >= units:
            return i
        seen += _units(ch, encoding)
    return len(line)


# --- LSP lines -------------------------------------------------------------------------------

_LSP_BREAK = re.compile(r"\r\n|\r|\n")


def lsp_line_starts(text: str) -> list[int]:
    r"""Offsets at which the lines of ``text`` begin, by the LSP's rules (``\n``, ``\r\n``,
    ``\r`` end a line; nothing else does). A text has one line more than it has breaks."""
    return [0, *(m.end() for m in _LSP_BREAK.finditer(text))]


class LspText:
    """A text with its lines counted the LSP's way, converting LSP positions (in the code
    units of ``encoding``) to code-point offsets and back."""

    __slots__ = ("_starts", "encoding", "text")

    def __init__(self, text: str, encoding: str = UTF16) -> None:
        self.text = text
        self.encoding = encoding_name(encoding)
        self._starts = lsp_line_starts(text)

    @property
    def line_count(self) -> int:
        return len(self._starts)

    def line_span(self, line: int) -> tuple[int, int]:
        """Offsets of the first character of ``line`` and of its end (before its break)."""
        start = self._starts[line]
        if line + 1 >= len(self._starts):
            return start, len(self.text)
        end = self._starts[line + 1] - 1
        if self.text[end] == "\n" and end > start and self.text[end - 1] == "\r":
            end -= 1
        return start, end

    def line_text(self, line: int) -> str:
        if not 0 <= line < len(self._starts):
            return ""
        start, end = self.line_span(line)
        return self.text[start:end]

    def offset(self, pos: types.Position) -> int:
        """The offset of an LSP position. A line past the last one means the end of the text;
        a character past the end of its line means the line's end (before its break), as
        the LSP specification says; one inside a character moves to that character's end."""
        if pos.line < 0:
            return 0
        if pos.line >= len(self._starts):
            return len(self.text)
        start, end = self.line_span(pos.line)
        return start + from_lsp_character(self.text[start:end], pos.character, self.encoding)

    def position(self, offset: int) -> types.Position:
        r"""The LSP position of an offset (one inside a ``\r\n`` counts as the line's end)."""
        offset = max(0, min(offset, len(self.text)))
        line = bisect.bisect_right(self._starts, offset) - 1
        start, end = self.line_span(line)
        column = min(offset, end) - start
        return types.Position(line=line, character=to_lsp_character(
            self.text[start:end], column, self.encoding))


def apply_change(text: str, change: types.TextDocumentContentChangeEvent,
                 encoding: str = UTF16) -> str:
    """``text`` after one ``didChange`` content change: a whole-document change replaces
    it; a ranged one replaces the range, whose positions count lines and code units as
    the LSP does (see :class:`LspText`)."""
    if not isinstance(change, types.TextDocumentContentChangePartial):
        return change.text
    encoding = encoding_name(encoding)
    start = _offset(text, change.range.start, encoding)
    end = _offset(text, change.range.end, encoding)
    if end < start:  # a reversed range: the span between the two positions
        start, end = end, start
    return text[:start] + change.text + text[end:]


def _offset(text: str, pos: types.Position, encoding: str) -> int:
    """``LspText(text, encoding).offset(pos)`` without listing every line: the breaks
    before ``pos.line`` are counted a chunk at a time, so a keystroke costs a few fast scans
    of the buffer, not a Python step per line."""
    if pos.line < 0:
        return 0
    has_cr = "\r" in text
    start = _line_start(text, pos.line, has_cr)
    if start is None:
        return len(text)
    if has_cr:
        m = _LSP_BREAK.search(text, start)
        end = m.start() if m is not None else len(text)
    else:
        end = text.find("\n", start)
        if end < 0:
            end = len(text)
    return start + from_lsp_character(text[start:end], pos.character, encoding)


#: Characters whose line breaks are counted in one step when looking for a line.
SCAN_CHUNK = 4096


def _line_start(text: str, line: int, has_cr: bool) -> int | None:
    """Offset at which LSP line ``line`` of ``text`` starts; None past the last line."""
    pos, remaining, n = 0, line, len(text)
    count = text.count
    while remaining:
        if pos >= n:
            return None
        end = min(pos + SCAN_CHUNK, n)
        if has_cr and end < n and text[end - 1] == "\r":
            end += 1  # never split a \r\n between two chunks
        breaks = count("\n", pos, end)
        if has_cr:
            breaks += count("\r", pos, end) - count("\r\n", pos, end)
        if breaks < remaining:
            remaining -= breaks
            pos = end
            continue
        for _ in range(remaining):  # the line starts in this chunk: walk to it
            if has_cr:
                m = _LSP_BREAK.search(text, pos, end)
                assert m is not None
                pos = m.end()
            else:
                pos = text.index("\n", pos, end) + 1
        return pos
    return pos


def apply_changes(text: str, changes: Iterable[types.TextDocumentContentChangeEvent],
                  encoding: str = UTF16) -> str:
    """``text`` after a ``didChange`` notification's changes, applied in order."""
    for change in changes:
        text = apply_change(text, change, encoding)
    return text


# --- the payload of a diagnostic ------------------------------------------------------------

_SCALARS = (str, int, float, bool, type(None))


def _jsonable(value: Any) -> Any:
    """``to_jsonable(value)``, with a fast path: data that already is plain JSON (dicts with
    string keys, lists, scalars: what the core's contract diagnostics carry) comes back as
    it is, not copied; anything else is converted by the core's ``to_jsonable``."""
    return value if _plain(value) else to_jsonable(value)


#: Values :func:`_plain` looks at before it gives up (and the data is converted instead).
_PLAIN_LIMIT = 1_000_000


def _plain(value: Any) -> bool:
    """Whether ``value`` is plain JSON: dicts with string keys, lists and scalars, of their
    exact types (no subclass, tuple or enum). One loop over the values, no recursion (a
    contract diagnostic's data has about a hundred)."""
    stack = [value]
    seen = 0
    while stack:
        item = stack.pop()
        seen += 1
        if seen > _PLAIN_LIMIT:
            return False
        kind = type(item)
        if kind is dict:
            for key, inner in item.items():
                if type(key) is not str:
                    return False
                stack.append(inner)
        elif kind is list:
            stack.extend(item)
        elif kind not in _SCALARS:
            return False
    return True


class CheckedJson(dict[str, Any]):
    """A diagnostic's ``data`` as :meth:`DiagnosticData.to_json` builds it: plain JSON by
    construction (its ``core`` went through :func:`_jsonable`), so :func:`publish_json`
    writes it without walking it again (for a shared prompt's edit, that walk was a third of
    the time the message loop took to send the pushes). A dict in every other respect: the
    same JSON from ``json.dumps`` and from lsprotocol's converter; a payload a client sends
    back is a plain dict again."""

    __slots__ = ()


@dataclass(frozen=True)
class DiagnosticData:
    """What every budgetlens diagnostic carries in ``Diagnostic.data`` (to the client and,
    with a code-action request, back): the pipeline and step a quick-fix works on, the
    code, and the core diagnostic's own payload in JSON form (``core``).

    This is the one place the core's typed payloads (:data:`budgetlens.source.FixData`) meet
    JSON: :meth:`of` encodes one (:func:`fix_json`), :meth:`fix` decodes a client's copy.
    The ``code`` is the kind tag: it names the payload's class (:data:`FIX_KINDS`), so a
    payload of an unknown code, or one malformed, decodes to None and is ignored."""

    pipeline: str | None = None
    step: str | None = None
    code: str | None = None
    core: dict[str, Any] | None = None
    """Plain JSON: what :meth:`of` made with :func:`_jsonable`, or what a client sent back
    (:meth:`from_json`), so :meth:`to_json` marks the payload as checked."""

    @classmethod
    def of(cls, diag: Diagnostic) -> DiagnosticData:
        return cls(diag.pipeline, diag.step, diag.code,
                   fix_json(diag.data) if diag.data else None)

    def to_json(self) -> CheckedJson:
        out = CheckedJson(pipeline=self.pipeline, step=self.step, code=self.code)
        if self.core:
            out["core"] = self.core
        return out

    @classmethod
    def from_json(cls, raw: object) -> DiagnosticData | None:
        """The payload a client sent back; None when it sent none or something else (a
        field of the wrong type is dropped, never trusted)."""
        if not isinstance(raw, Mapping):
            return None

        def text(key: str) -> str | None:
            value = raw.get(key)
            return value if isinstance(value, str) else None
        core = raw.get("core")
        return cls(text("pipeline"), text("step"), text("code"),
                   dict(core) if isinstance(core, Mapping) else None)

    def fix(self) -> FixData | None:
        """The typed payload of ``core``, of the kind ``code`` names; None when the code
        carries none, or ``core`` is missing or malformed (a client's copy is never
        trusted)."""
        kind = FIX_KINDS.get(self.code or "")
        if kind is None or self.core is None:
            return None
        try:
            return _FIX_READERS[kind](self.core)
        except (KeyError, TypeError, ValueError, AttributeError):
            return None


def fix_json(fix: FixData) -> Any:
    """The JSON of a core diagnostic's payload (the ``core`` of :class:`DiagnosticData`).

    Each kind has its JSON shape here and nowhere else (its reader is :data:`_FIX_READERS`).
    A contract diagnostic's budget and terms are JSON already and go out as they are."""
    if type(fix) is ClampFix:  # the most frequent: every budget diagnostic
        return _jsonable({"budget": fix.budget, "step_index": fix.step_index,
                          "defined_in": fix.defined_in, "terms": fix.terms})
    if type(fix) is RenameKey:
        return {"rename": {"from": fix.key, "to": fix.suggestion, "range": to_jsonable(fix.range),
                           "new_text": fix.new_text}}
    if type(fix) is FailureStage:
        return {"stage": to_jsonable(fix.stage)}
    if type(fix) is JsonCut:
        return {"path": fix.path, "kind": fix.kind}
    if type(fix) is JsonTooLarge:
        return {"length": fix.length}
    return _jsonable(fix)  # not a FixData (mypy rejects one): a test's raw value


def _str(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(value)
    return value


def _int(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(value)
    return value


def _dict(value: object) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TypeError(value)
    return value


def _range_of(raw: object) -> Range:
    rng = _dict(raw)
    start, end = _dict(rng["start"]), _dict(rng["end"])
    return Range(Position(_int(start["line"]), _int(start["character"])),
                 Position(_int(end["line"]), _int(end["character"])))


def _rename(core: dict[str, Any]) -> RenameKey:
    r = _dict(core["rename"])
    new_text = r.get("new_text")
    return RenameKey(_str(r["from"]), _str(r["to"]), _range_of(r["range"]),
                     None if new_text is None else _str(new_text))


_FIX_READERS: dict[type[FixData], Callable[[dict[str, Any]], FixData]] = {
    RenameKey: _rename,
    ClampFix: lambda c: ClampFix(_dict(c["budget"]), _int(c["step_index"]),
                                 _str(c["defined_in"]), _dict(c["terms"])),
    FailureStage: lambda c: FailureStage(_str(c["stage"])),
    JsonCut: lambda c: JsonCut(_str(c["path"]), _str(c["kind"])),
    JsonTooLarge: lambda c: JsonTooLarge(_int(c["length"])),
}

#: The kind of payload each code carries (the kind tag of :meth:`DiagnosticData.fix`).
FIX_KINDS: dict[str, type[FixData]] = {
    codes.NEAR_MISS_KEY: RenameKey,
    codes.CONTRACT_VIOLATION: ClampFix,
    codes.CANNOT_FIT: ClampFix,
    codes.INTERNAL_ERROR: FailureStage,
    codes.JSON_TRUNCATED: JsonCut,
    codes.JSON_TOO_LARGE: JsonTooLarge,
}


# --- the converter ----------------------------------------------------------------------------

class RangeMemo:
    """Ranges converted by earlier converters, per file, kept while the file's text and the
    position encoding are what they were: a publish batch converts the places its
    diagnostics point to (each dependent's steps, config.json's keys, a parent's settings,
    a shared prompt) once, not again at every keystroke. At most ``max_files`` files (the
    memo is emptied when full)."""

    def __init__(self, max_files: int = 4096) -> None:
        self.max_files = max_files
        self._files: dict[str, tuple[str, str, dict[Range, types.Range]]] = {}

    def ranges(self, file: str, encoding: str, text: str) -> dict[Range, types.Range]:
        """The converted ranges of ``file`` as it reads ``text`` in ``encoding``: the same
        dict as last time when neither changed, else a new empty one."""
        entry = self._files.get(file)
        if entry is not None and entry[0] == encoding and (entry[1] is text
                                                           or entry[1] == text):
            return entry[2]
        if len(self._files) >= self.max_files:
            self._files.clear()
        ranges: dict[Range, types.Range] = {}
        self._files[file] = (encoding, text, ranges)
        return ranges

    def __len__(self) -> int:
        return len(self._files)


class Converter:
    """Converts core data to LSP types for one negotiated position encoding.

    A converter reads each file once and keeps what it converted (line indexes, ranges): make
    one per batch of answers, over one state of the files. With a :class:`RangeMemo`, the
    ranges are kept across converters too, per file, while its text is the same."""

    def __init__(self, encoding: str, text_of: Callable[[str], str | None],
                 memo: RangeMemo | None = None) -> None:
        self.encoding = encoding_name(encoding)
        self._text_of = text_of
        self._memo = memo
        self._texts: dict[str, str | None] = {}
        self._indexes: dict[str, LineIndex | None] = {}
        #: converted ranges per file: the places many diagnostics of a batch point to
        #: (config.json's keys, a shared prompt, a parent's settings) are converted once
        self._ranges: dict[str, dict[Range, types.Range]] = {}

    def _text(self, file: str) -> str | None:
        if file not in self._texts:
            self._texts[file] = self._text_of(file)
        return self._texts[file]

    def _index(self, file: str) -> LineIndex | None:
        if file not in self._indexes:
            text = self._text(file)
            self._indexes[file] = LineIndex(text) if text is not None else None
        return self._indexes[file]

    def _file_ranges(self, file: str) -> dict[Range, types.Range]:
        ranges = self._ranges.get(file)
        if ranges is None:
            text = self._text(file) if self._memo is not None else None
            ranges = self._ranges[file] = (self._memo.ranges(file, self.encoding, text)
                                           if self._memo is not None and text is not None
                                           else {})
        return ranges

    def line_text(self, file: str, line: int) -> str:
        r"""The text of line ``line`` (lines end at ``\n``, ``\r\n`` or ``\r``)."""
        index = self._index(file)
        return index.line_text(line) if index is not None else ""

    # core -> LSP
    def position(self, file: str, pos: Position) -> types.Position:
        if self.encoding == UTF32:
            return types.Position(line=max(pos.line, 0), character=max(pos.character, 0))
        line = self.line_text(file, pos.line)
        if not line:
            return types.Position(line=max(pos.line, 0), character=max(pos.character, 0))
        return types.Position(line=max(pos.line, 0),
                              character=to_lsp_character(line, pos.character, self.encoding))

    def range(self, file: str, rng: Range) -> types.Range:
        ranges = self._file_ranges(file)
        out = ranges.get(rng)
        if out is None:
            out = ranges[rng] = types.Range(start=self.position(file, rng.start),
                                            end=self.position(file, rng.end))
        return out

    def location(self, loc: Location) -> types.Location:
        return types.Location(uri=uri_from_path(loc.file), range=self.range(loc.file, loc.range))

    def diagnostic(self, diag: Diagnostic, *, related: bool = True) -> types.Diagnostic:
        info = None
        if related and diag.related:
            info = [types.DiagnosticRelatedInformation(location=self.location(r.location),
                                                       message=r.message)
                    for r in diag.related]
        return types.Diagnostic(
            range=self.range(diag.file, diag.range),
            message=diag.message,
            severity=_SEVERITY.get(diag.severity, types.DiagnosticSeverity.Warning),
            code=diag.code,
            source=SOURCE,
            related_information=info,
            data=DiagnosticData.of(diag).to_json(),
        )

    def text_edit(self, edit: TextEdit) -> types.TextEdit:
        return types.TextEdit(range=self.range(edit.file, edit.range), new_text=edit.new_text)

    def workspace_edit(self, edits: Iterable[TextEdit], *, versions: Mapping[str, int | None],
                       document_changes: bool) -> types.WorkspaceEdit:
        """One ``WorkspaceEdit`` for edits across files.

        ``versions`` maps the URI of each open document to its version; with
        ``document_changes`` the edit is versioned (``documentChanges``), so a client refuses
        it if the buffer changed since; otherwise it is a plain ``changes`` map.
        """
        by_uri: dict[str, list[types.TextEdit]] = {}
        for edit in edits:
            by_uri.setdefault(uri_from_path(edit.file), []).append(self.text_edit(edit))
        if document_changes:
            return types.WorkspaceEdit(document_changes=[
                types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(
                        uri=uri, version=versions.get(uri)),
                    edits=list(lsp_edits))
                for uri, lsp_edits in by_uri.items()])
        return types.WorkspaceEdit(changes=by_uri)

    # LSP -> core
    def core_position(self, file: str, pos: types.Position) -> Position:
        if self.encoding == UTF32:
            return Position(pos.line, pos.character)
        line = self.line_text(file, pos.line)
        return Position(pos.line, from_lsp_character(line, pos.character, self.encoding))

    def core_range(self, file: str, rng: types.Range) -> Range:
        return Range(self.core_position(file, rng.start), self.core_position(file, rng.end))


# --- publishDiagnostics as JSON ------------------------------------------------------------

def _range_json(rng: types.Range) -> dict[str, Any]:
    return {"start": {"line": rng.start.line, "character": rng.start.character},
            "end": {"line": rng.end.line, "character": rng.end.character}}


def _diagnostic_json(diag: types.Diagnostic) -> dict[str, Any] | None:
    if diag.code_description is not None or diag.tags is not None:
        return None  # fields budgetlens never sets: left to lsprotocol's converter
    out: dict[str, Any] = {"range": _range_json(diag.range), "message": diag.message}
    if diag.severity is not None:
        out["severity"] = diag.severity.value
    if diag.code is not None:
        out["code"] = diag.code
    if diag.source is not None:
        out["source"] = diag.source
    if diag.related_information is not None:
        out["relatedInformation"] = [
            {"location": {"uri": r.location.uri, "range": _range_json(r.location.range)},
             "message": r.message} for r in diag.related_information]
    if diag.data is not None:
        if type(diag.data) is not CheckedJson and not _plain(diag.data):
            return None
        out["data"] = diag.data
    return out


def publish_json(params: types.PublishDiagnosticsParams) -> dict[str, Any] | None:
    """The JSON of a ``publishDiagnostics`` notification's params, the same as lsprotocol's
    converter makes (``tests/server/test_publish_json.py`` compares them), built directly:
    several times faster for the hundreds of pushes of a shared prompt's dependents, which
    the message loop sends between two keystrokes. None when a diagnostic has a field this
    does not write (``codeDescription``, ``tags``) or data that is not plain JSON: the
    caller then uses the converter."""
    diagnostics = []
    for diag in params.diagnostics:
        item = _diagnostic_json(diag)
        if item is None:
            return None
        diagnostics.append(item)
    out: dict[str, Any] = {"uri": params.uri, "diagnostics": diagnostics}
    if params.version is not None:
        out["version"] = params.version
    return out


def format_int(n: int) -> str:
    """Thousands with commas: ``1,204``."""
    return f"{n:,}"
