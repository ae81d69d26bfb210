"""Minimal text edits of a YAML file in its own style.

``YamlText`` is a file as read, with offset helpers that know every YAML line break
(``\\n``, ``\\r\\n`` and a lone ``\\r``): the characters of a scalar (no anchor, tag or
quotes), its other users through anchors and aliases, the file's indentation step, and where
a new entry goes (in a block or a flow mapping, at the top level). Nothing here decides what
to change: the clamp plan does (``budgetlens.contract.plan``), and every edit is verified
(``budgetlens.yamldoc.verify``) before it leaves the core.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from budgetlens.files import FileSource, SourceError
from budgetlens.source import TextEdit, apply_text_edits
from budgetlens.yamldoc.parse import (
    NodeKind,
    Span,
    YamlDocument,
    YamlPath,
    YamlTokens,
    line_number,
    parse_yaml,
)


@dataclass
class YamlText:
    """A file as the plan read it, with offset helpers that know every YAML line break
    (``\\n``, ``\\r\\n`` and a lone ``\\r``)."""

    path: str
    text: str
    doc: YamlDocument

    @property
    def tokens(self) -> YamlTokens:
        return self.doc.tokens

    def eol(self, offset: int) -> int:
        """End of the line holding ``offset`` (before its line break)."""
        n, text, i = len(self.text), self.text, offset
        while i < n and text[i] not in "\r\n":
            i += 1
        return i

    def bol(self, offset: int) -> int:
        return max(self.text.rfind("\n", 0, offset), self.text.rfind("\r", 0, offset)) + 1

    def col(self, offset: int) -> int:
        return offset - self.bol(offset)

    def line(self, offset: int) -> int:
        return line_number(self.text, offset)

    def newline(self, offset: int) -> str:
        """The line break ending the line of ``offset`` (else the file's first one)."""
        i = self.eol(offset)
        if i < len(self.text):
            return "\r\n" if self.text.startswith("\r\n", i) else self.text[i]
        found = re.search(r"\r\n|\r|\n", self.text)
        return found.group() if found else "\n"

    def back(self, offset: int) -> int:
        """``offset`` moved back over blanks and line breaks."""
        while offset > 0 and self.text[offset - 1] in " \t\r\n":
            offset -= 1
        return offset

    def after_line(self, offset: int) -> int:
        """Where a new line goes after content ending at ``offset``: the end of its line
        (after a trailing comment, never inside it)."""
        return self.eol(self.back(offset))

    def edit(self, start: int, end: int, new_text: str) -> TextEdit:
        return TextEdit(self.path, self.doc.index.range(start, end), new_text)

    def indent_unit(self) -> int:
        """The file's indentation step: how far a nested block key sits right of its parent."""
        steps: list[int] = []
        for path, span in self.doc.spans.items():
            if len(path) < 2 or span.key_start is None:
                continue
            parent = self.doc.span(path[:-1])
            if parent is None or parent.kind is not NodeKind.MAPPING or parent.flow \
                    or parent.key_start is None:
                continue
            diff = self.col(span.key_start) - self.col(parent.key_start)
            if diff > 0:
                steps.append(diff)
        return min(steps) if steps else 2

    def scalar_range(self, path: YamlPath) -> tuple[int, int] | str:
        """The characters of the scalar at ``path`` itself: no anchor, tag or quotes."""
        span = self.doc.span(path)
        if span is None or span.kind is not NodeKind.SCALAR:
            return "the value is not a plain number there"
        tok = self.tokens.scalar(span)
        if tok is None:
            return "the value's text could not be found"
        if tok.style in ("|", ">"):
            return "the value is a block scalar"
        if tok.style in ("'", '"'):
            return tok.start + 1, tok.end - 1
        return tok.start, tok.end

    def users(self, path: YamlPath) -> list[YamlPath]:
        """Every path of the data whose value is the scalar at ``path`` (one text through
        an anchor, its aliases and merge keys)."""
        span = self.doc.span(path)
        if span is None:
            return []
        return [p for p, s in self.doc.spans.items()
                if s.kind is NodeKind.SCALAR and s.start == span.start and s.end == span.end]

    def anchor_text(self, path: YamlPath) -> str:
        span = self.doc.span(path)
        tok = self.tokens.anchor(span) if span is not None else None
        if tok is None or span is None:
            return f"the value at line {self.line(span.start if span else 0)}"
        return f"anchor &{tok.value} at line {self.line(tok.start)}"

    def flow_insert(self, span: Span, entry: str) -> tuple[int, str] | None:
        """Add ``entry`` to a flow mapping: after its last entry, keeping a trailing comma,
        comments and the closing brace where they are."""
        toks = self.tokens.inside(span.start, span.end)
        if len(toks) < 2 or toks[-1].kind != "FlowMappingEnd" or toks[-1].end != span.end:
            return None
        last = toks[-2]
        if last.kind == "FlowMappingStart":
            return last.end, entry
        if last.kind == "FlowEntry":  # a trailing comma: the new entry gets one too
            return last.end, f" {entry},"
        return last.end, ", " + entry

    def insert_entry(self, mapping: YamlPath, key: str,
                     value: int) -> tuple[int, str] | tuple[int, str, int] | None:
        """Add ``key: value`` to the mapping at ``mapping`` in its own style (an empty value
        written ``~`` or ``null`` is replaced: the third item is the end of what goes)."""
        span = self.doc.span(mapping)
        node = self.doc.node(mapping)
        if span is None:
            return None
        if span.kind is NodeKind.MAPPING and span.flow:
            return self.flow_insert(span, f"{key}: {value}")
        if span.kind is NodeKind.MAPPING:
            at = self.after_line(self.tokens.content_end(span))
            return at, f"{self.newline(at)}{' ' * self.col(span.start)}{key}: {value}"
        if span.kind is NodeKind.SCALAR and node is None:
            tok = self.tokens.scalar(span)
            if tok is not None and tok.style is None:  # "settings: ~" or "null"
                return (None if tok.start != span.start
                        else (tok.start, f"{{{key}: {value}}}", tok.end))
            if span.start != span.end or span.key_start is None or span.key_end is None:
                return None
            indent = " " * (self.col(span.key_start) + self.indent_unit())
            at = self.eol(span.key_end)
            return at, f"{self.newline(at)}{indent}{key}: {value}"
        return None

    def root_mapping(self) -> Span | None:
        """The document's top-level mapping (``None``: the document is not one)."""
        root = self.doc.span(())
        if root is None or not isinstance(self.doc.value, dict) \
                or root.kind is not NodeKind.MAPPING:
            return None
        return root

    def insert_top_level(self, block: list[str], flow_text: str) -> tuple[int, str] | None:
        """Insert a top-level entry: after ``extends`` if there is one, else first."""
        root = self.root_mapping()
        if root is None:
            return None
        if root.flow:
            return self.flow_insert(root, flow_text)
        lines = [" " * self.col(root.start) + line for line in block]
        ext = self.doc.span(("extends",))
        if ext is not None:
            at = self.after_line(self.tokens.content_end(ext))
            nl = self.newline(at)
            return at, nl + nl.join(lines)
        at = self.bol(root.start)
        if self.text[at:root.start].strip():
            return None
        nl = self.newline(root.start)
        return at, nl.join(lines) + nl

    def append_top_level(self, block: list[str], flow_text: str | None) -> tuple[int, str] | None:
        """Add a top-level entry after the last one (before an end marker ``...``)."""
        root = self.root_mapping()
        if root is None:
            return None
        if root.flow:
            return self.flow_insert(root, flow_text) if flow_text is not None else None
        col = self.col(root.start)
        lines = [(" " * col + line) if line.strip() else line for line in block]
        at = self.after_line(self.tokens.content_end(root))
        nl = self.newline(at)
        return at, nl + nl + nl.join(lines)


def load_yaml_text(path: str, files: FileSource) -> YamlText | None:
    """``path`` read through ``files`` and parsed (``None``: unreadable or not YAML)."""
    try:
        text = files.read_text(Path(path))
    except SourceError:
        return None
    doc, _ = parse_yaml(text)
    if doc is None:
        return None
    return YamlText(path, text, doc)


def number_at(f: YamlText, path: YamlPath) -> int | None:
    """The integer at ``path`` (``None``: absent or not an integer)."""
    value = f.doc.node(path)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def edited_block(text: str, edits: list[TextEdit], key: str) -> list[str] | None:
    """The top-level entry ``key`` of ``text`` after ``edits``, as lines dedented to column 0
    (``None``: the edits overlap or the result has no such entry)."""
    try:
        new_text = apply_text_edits(text, edits)
    except ValueError:
        return None
    doc, _ = parse_yaml(new_text)
    span = doc.span((key,)) if doc is not None else None
    if doc is None or span is None or span.key_start is None:
        return None
    start = max(new_text.rfind("\n", 0, span.key_start),
                new_text.rfind("\r", 0, span.key_start)) + 1
    first = new_text[start:span.key_start]
    col0 = len(first) - len(first.lstrip(" "))
    end = doc.tokens.content_end(span)
    lines = re.split(r"\r\n|\r|\n", new_text[start:end].rstrip(" \t\r\n"))
    if col0:
        lines = [ln[col0:] if ln[:col0].strip() == "" else ln for ln in lines]
    return lines
