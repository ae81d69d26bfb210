"""Mapping a position inside a YAML string value back onto the file's text."""

from __future__ import annotations

from budgetlens.source import Range
from budgetlens.yamldoc.parse import Span, YamlDocument, YamlPath


def _literal_offsets(doc: YamlDocument, span: Span, header_end: int) -> tuple[list[int], str]:
    """The file offset of each character of a literal block scalar (``|``) whose header
    ends at ``header_end`` (relative to the span), and the text those characters make."""
    offsets: list[int] = []
    chars: list[str] = []
    body_start = span.start + header_end + 1
    indent = None
    pos = body_start
    for line in doc.text[body_start:span.end].split("\n"):
        stripped = line.rstrip("\r")
        if indent is None and stripped.strip():
            indent = len(stripped) - len(stripped.lstrip(" "))
        cut = min(indent or 0, len(stripped))
        for k, ch in enumerate(stripped[cut:]):
            offsets.append(pos + cut + k)
            chars.append(ch)
        offsets.append(pos + len(stripped))
        chars.append("\n")
        pos += len(line) + 1
    return offsets, "".join(chars)


def _literal_range(doc: YamlDocument, span: Span, value: str, start: int,
                   end: int) -> Range | None:
    header_end = doc.text[span.start:span.end].find("\n")
    if header_end == -1:
        return None
    offsets, text = _literal_offsets(doc, span, header_end)
    if not (text.startswith(value[:end]) and end <= len(offsets)):
        return None
    last = offsets[end - 1] + 1 if end > start else offsets[start]
    return doc.index.range(offsets[start], last)


def string_range(doc: YamlDocument | None, path: YamlPath, start: int, end: int) -> Range:
    """The file range of ``[start, end)`` of the string value at ``path``, exact when the
    YAML scalar maps onto its text simply (plain, quoted without escapes, literal block);
    else the whole value."""
    span: Span | None = doc.span(path) if doc else None
    if doc is None or span is None:
        return Range.at(0, 0)
    value = doc.node(path)
    raw = doc.text[span.start:span.end]
    if not isinstance(value, str):
        return span.value
    if span.style is None and "\n" not in raw and raw == value:
        return doc.index.range(span.start + start, span.start + end)
    if span.style in ("'", '"') and raw[1:-1] == value:
        return doc.index.range(span.start + 1 + start, span.start + 1 + end)
    if span.style == "|":
        return _literal_range(doc, span, value, start, end) or span.value
    return span.value
