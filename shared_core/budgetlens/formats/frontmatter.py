"""YAML in file coordinates: a whole YAML file, or the front matter of a ``.prompty`` or
``.prompt`` file, read with ``budgetlens.yamldoc`` and its ranges given in the whole
file's lines and characters."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from budgetlens.formats.model import Problem, ProblemKind
from budgetlens.source import LineIndex, Range
from budgetlens.yamldoc.parse import YamlDocument, YamlPath, parse_yaml

_OPEN = re.compile(r"\A\ufeff?---[ \t]*(?:\r\n|\n|\r)")
#: Dotprompt also allows blank lines and ``#`` comment lines before the opening ``---``.
_OPEN_AFTER_COMMENTS = re.compile(
    r"\A\ufeff?(?:(?:#[^\r\n]*|[ \t]*)(?:\r\n|\n|\r))*---[ \t]*(?:\r\n|\n|\r)")
#: The closing line (``$`` alone would miss a ``---`` that ends with ``\r\n``).
_CLOSE = re.compile(r"^---[ \t]*(?=\r\n|\n|\r|\Z)", re.MULTILINE)


@dataclass(frozen=True)
class Split:
    """A file cut at its front matter: ``yaml`` starts at offset ``yaml_start`` and the
    body at ``body_start`` (both in code points of the whole text)."""

    yaml: str
    yaml_start: int
    body: str
    body_start: int


def split_front_matter(text: str, comments: bool = False) -> Split | None:
    """The front matter and body of ``text``, or ``None`` when it opens with none
    (``comments``: blank and ``#`` lines may come first, as Dotprompt allows)."""
    opened = (_OPEN_AFTER_COMMENTS if comments else _OPEN).match(text)
    if opened is None:
        return None
    close = _CLOSE.search(text, opened.end())
    if close is None:
        return None
    body_start = close.end()
    if text.startswith("\r\n", body_start):
        body_start += 2
    elif text.startswith(("\n", "\r"), body_start):
        body_start += 1
    return Split(text[opened.end():close.start()], opened.end(), text[body_start:], body_start)


class FileYaml:
    """A YAML document found at ``base`` in ``text``: values by path, ranges in ``text``."""

    def __init__(self, doc: YamlDocument, base: int, index: LineIndex) -> None:
        self.doc = doc
        self.base = base
        self.index = index

    @property
    def value(self) -> Any:
        return self.doc.value

    def get(self, *path: str | int) -> Any:
        return self.doc.node(path)

    def has(self, *path: str | int) -> bool:
        return self.doc.span(path) is not None

    def range(self, *path: str | int) -> Range | None:
        """The range of the value at ``path``."""
        span = self.doc.span(path)
        return None if span is None else self.at(span.start, span.end)

    def key_range(self, *path: str | int) -> Range | None:
        span = self.doc.span(path)
        if span is None or span.key_start is None or span.key_end is None:
            return None
        return self.at(span.key_start, span.key_end)

    def entry_range(self, path: YamlPath) -> Range | None:
        """From the key (or the value, in a list) to the end of the value."""
        span = self.doc.span(path)
        if span is None:
            return None
        start = span.key_start if span.key_start is not None else span.start
        return self.at(start, span.end)

    def whole(self) -> Range:
        return self.at(0, len(self.doc.text))

    def at(self, start: int, end: int) -> Range:
        return self.index.range(self.base + start, self.base + end)


def read_yaml(text: str, base: int, index: LineIndex,
              problems: list[Problem]) -> FileYaml | None:
    """``text`` (found at ``base`` of the file ``index`` maps) read as YAML; its problems
    (ranges moved into the file) appended to ``problems``."""
    doc, found = parse_yaml(text)
    local = LineIndex(text)
    for problem in found:
        start = local.offset(problem.range.start)
        end = local.offset(problem.range.end)
        problems.append(Problem(ProblemKind.YAML, problem.message,
                                index.range(base + start, base + end)))
    if doc is None:
        return None
    return FileYaml(doc, base, index)
