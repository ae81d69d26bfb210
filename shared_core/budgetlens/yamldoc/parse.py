"""YAML read with its source positions, safely.

The text is read from the events of PyYAML's parser (libyaml's when PyYAML was built with
it, else the pure-Python one): a document without merge keys, anchored collections, duplicate
keys or refused tags goes in one pass straight to plain values and spans
(``budgetlens.yamldoc.simple``); any other is composed into a light node graph
(``budgetlens.yamldoc.compose``: the graph ``yaml.compose`` builds) that this module turns
into plain values (dict, list, str, int, float, bool, None), keeping a map from each value's
path (``("steps", 0, "max_output_tokens")``) to its ranges (``SpanMap``: spans are made when
asked for). Both answer what PyYAML's composer and this converter answered before them
(tests/core/yamldoc/test_reader_equivalence.py); the one difference is on purpose: a node
nested deeper than ``MAX_DEPTH`` is refused as soon as it is read.

Nothing is ever constructed from a tag: any tag outside YAML's plain types (``!!python/...``,
``!custom``, ``!!binary``, ...) refuses the whole document. Aliases are followed, but the
number of values reached again through an alias (or a merge key) is capped, so an alias
bomb ("billion laughs") is refused after a bounded amount of work and memory, however many
values the text itself writes out; so are documents nested too deeply or too large.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum
from functools import cached_property
from typing import Any

import yaml

from budgetlens.codes import DUPLICATE_KEY as YAML_DUPLICATE_KEY
from budgetlens.codes import YAML_LIMIT, YAML_REFUSED, YAML_SYNTAX
from budgetlens.source import LineIndex, Range
from budgetlens.yamldoc import incremental
from budgetlens.yamldoc.compose import (
    MAP_TAG,
    MAPPING,
    MERGE_TAG,
    SCALAR,
    SCALAR_TAGS,
    SEQ_TAG,
    SEQUENCE,
    Node,
    TooDeep,
    UnfitScalar,
    compose_single,
    scalar_value,
)
from budgetlens.yamldoc.simple import RawSpan, read_simple

#: Largest YAML text parsed (characters). Pipelines are small; a bigger file is refused.
MAX_YAML_CHARS = 2 * 1024 * 1024
#: Most values reached again through aliases (each visit of a node already visited counts);
#: beyond it the document is refused. Values written out in the text do not count.
MAX_NODE_VISITS = 20_000
#: Deepest nesting accepted.
MAX_DEPTH = 64

YamlPath = tuple[str | int, ...]

#: libyaml's parser when PyYAML was built with it (same events and marks, in code points,
#: about ten times faster), else the pure-Python one; ``compose`` reads its events.
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_CPARSER: Any = getattr(getattr(yaml, "cyaml", None), "CParser", None)

#: Whether ``parse_yaml`` first tries the one-pass reader of simple documents
#: (``budgetlens.yamldoc.simple``); the general reader answers every other document.
SIMPLE_FIRST = True



class NodeKind(str, Enum):
    """The kind of a YAML node."""

    SCALAR = "scalar"
    MAPPING = "mapping"
    SEQUENCE = "sequence"


@dataclass(frozen=True)
class Span:
    """Where a value sits: code-point offsets of the value (and of its key, for a mapping
    entry) and its node kind; ``value`` and ``key`` are the same as ranges."""

    start: int
    end: int
    kind: NodeKind
    flow: bool = False
    key_start: int | None = None
    key_end: int | None = None
    style: str | None = None  # a scalar's style: None (plain), "'", '"', "|", ">"
    index: LineIndex | None = field(default=None, compare=False, repr=False)

    @cached_property
    def value(self) -> Range:
        if self.index is None:
            return Range.at(0, 0)
        return self.index.range(self.start, self.end)

    @cached_property
    def key(self) -> Range | None:
        if self.key_start is None or self.key_end is None or self.index is None:
            return None
        return self.index.range(self.key_start, self.key_end)


_KINDS = {SCALAR: NodeKind.SCALAR, SEQUENCE: NodeKind.SEQUENCE, MAPPING: NodeKind.MAPPING}


class SpanMap(Mapping[YamlPath, Span]):
    """The spans of a document by path, made when first asked for (a reader records plain
    tuples: most spans of a big file are never looked at)."""

    __slots__ = ("_index", "_made", "_raw")

    def __init__(self, raw: Mapping[YamlPath, RawSpan], index: LineIndex) -> None:
        self._raw = raw
        self._index = index
        self._made: dict[YamlPath, Span] = {}

    def __getitem__(self, path: YamlPath) -> Span:
        span = self._made.get(path)
        if span is None:
            start, end, kind, flow, key_start, key_end, style = self._raw[path]
            span = self._made[path] = Span(start, end, _KINDS[kind], flow, key_start, key_end,
                                           style, self._index)
        return span

    def __contains__(self, path: object) -> bool:
        return path in self._raw

    def __iter__(self) -> Iterator[YamlPath]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)


@dataclass(frozen=True)
class YamlProblem:
    code: str
    range: Range
    message: str
    fatal: bool = True


@dataclass(frozen=True)
class YamlToken:
    """One token of the YAML scanner: its kind (``"Scalar"``, ``"Anchor"``, ``"Alias"``,
    ``"Tag"``, ``"FlowEntry"``, ``"BlockEnd"``, ...), code-point offsets and value."""

    kind: str
    start: int
    end: int
    value: Any = None
    style: str | None = None


class YamlTokens:
    """The scanner's tokens of a text, to find a scalar's own characters (without its
    anchor and tag) and where the content of a collection ends."""

    def __init__(self, text: str) -> None:
        shift = 1 if text.startswith("\ufeff") else 0
        tokens: list[YamlToken] = []
        try:
            for tok in yaml.scan(text[shift:], Loader=_LOADER):
                kind = type(tok).__name__.removesuffix("Token")
                tokens.append(YamlToken(kind, int(tok.start_mark.index) + shift,
                                        int(tok.end_mark.index) + shift,
                                        getattr(tok, "value", None),
                                        getattr(tok, "style", None) or None))
        except yaml.YAMLError:
            tokens = []
        self.tokens = tokens
        self._starts = [t.start for t in tokens]
        self._scalars = {t.end: i for i, t in enumerate(tokens) if t.kind == "Scalar"}

    def scalar(self, span: Span) -> YamlToken | None:
        """The scalar token of a scalar node (its own characters: no anchor, no tag)."""
        i = self._scalars.get(span.end)
        if i is None or span.kind is not NodeKind.SCALAR:
            return None
        tok = self.tokens[i]
        return tok if tok.start >= span.start else None

    def anchor(self, span: Span) -> YamlToken | None:
        """The anchor token in front of a node (``&name``), if it has one."""
        i = bisect.bisect_left(self._starts, span.start)
        while i < len(self.tokens) and self.tokens[i].start < span.end:
            tok = self.tokens[i]
            if tok.kind == "Anchor":
                return tok
            if tok.kind != "Tag":
                return None
            i += 1
        return None

    def inside(self, start: int, end: int) -> list[YamlToken]:
        """The tokens lying within ``[start, end]``."""
        i = bisect.bisect_left(self._starts, start)
        out: list[YamlToken] = []
        while i < len(self.tokens) and self.tokens[i].start <= end:
            if self.tokens[i].end <= end:
                out.append(self.tokens[i])
            i += 1
        return out

    def content_end(self, span: Span) -> int:
        """Where the text of a node ends: its last token, not the comments and blank lines
        a block collection's end mark includes."""
        if span.kind is NodeKind.SCALAR or span.flow:
            return span.end
        ends = [t.end for t in self.inside(span.start, span.end)
                if t.end > t.start and t.kind not in ("DocumentEnd", "DocumentStart")]
        return max(ends, default=span.start)


def line_number(text: str, offset: int) -> int:
    """The 1-based line of ``offset`` as an editor shows it (``\\n``, ``\\r\\n`` and a lone
    ``\\r`` end a line)."""
    head = text[:offset]
    return head.count("\n") + head.count("\r") - head.count("\r\n") + 1


@dataclass(frozen=True)
class YamlDocument:
    text: str
    value: Any
    spans: Mapping[YamlPath, Span]
    index: LineIndex

    @cached_property
    def tokens(self) -> YamlTokens:
        return YamlTokens(self.text)

    def span(self, path: YamlPath) -> Span | None:
        return self.spans.get(path)

    def value_range(self, path: YamlPath) -> Range | None:
        span = self.spans.get(path)
        return span.value if span else None

    def key_range(self, path: YamlPath) -> Range | None:
        span = self.spans.get(path)
        if span is None:
            return None
        return span.key or span.value

    def node(self, path: YamlPath) -> Any:
        """The plain value at ``path`` (``None`` when absent)."""
        value: Any = self.value
        for part in path:
            if isinstance(part, int):
                if not isinstance(value, list) or not 0 <= part < len(value):
                    return None
            elif not isinstance(value, dict) or part not in value:
                return None
            value = value[part]
        return value


class _Refused(Exception):
    def __init__(self, code: str, node: Node | None, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.node = node
        self.message = message


def _refuse_tag(node: Node) -> _Refused:
    return _Refused(YAML_REFUSED, node, f"YAML tag {node.tag!r} is not allowed")


class _Converter:
    """The composed graph as plain values and spans (each value of the data once, aliases
    and merge keys followed and counted; see the module)."""

    def __init__(self, index: LineIndex) -> None:
        self.index = index
        self.spans: dict[YamlPath, RawSpan] = {}
        self.visits = 0  # visits of nodes already visited: values repeated through aliases
        self.warnings: list[YamlProblem] = []

    def range(self, node: Node) -> Range:
        return self.index.range(node.start, node.end)

    def convert(self, node: Node, path: YamlPath, depth: int, key: Node | None) -> Any:
        if node.seen:
            self.visits += 1
            if self.visits > MAX_NODE_VISITS:
                raise _Refused(YAML_LIMIT, node, f"document expands to more than"
                               f" {MAX_NODE_VISITS} values through aliases (an alias bomb?);"
                               " refused")
        else:
            node.seen = True
        if depth > MAX_DEPTH:
            raise _Refused(YAML_LIMIT, node, f"nested deeper than {MAX_DEPTH} levels; refused")
        kind = node.kind
        if path not in self.spans:  # the span of the value at ``path``: the first one seen
            self.spans[path] = (node.start, node.end, kind, node.flow,
                                key.start if key is not None else None,
                                key.end if key is not None else None, node.style)
        if kind == SCALAR:
            return self.scalar(node)
        if kind == SEQUENCE:
            if node.tag != SEQ_TAG:
                raise _refuse_tag(node)
            return [self.convert(item, (*path, i), depth + 1, None)
                    for i, item in enumerate(node.value)]
        if node.tag != MAP_TAG:
            raise _refuse_tag(node)
        return self.mapping(node, path, depth)

    def mapping(self, node: Node, path: YamlPath, depth: int) -> dict[str, Any]:
        result: dict[str, Any] = {}
        merges: list[Node] = []
        for key_node, value_node in node.value:
            tag = key_node.tag
            if tag == MERGE_TAG:
                merges.append(value_node)
                continue
            if key_node.kind != SCALAR:
                raise _Refused(YAML_REFUSED, key_node, "a mapping key must be a plain scalar")
            if tag not in SCALAR_TAGS:
                raise _refuse_tag(key_node)
            name: str = key_node.value
            if name in result:
                self.warnings.append(YamlProblem(
                    YAML_DUPLICATE_KEY, self.range(key_node),
                    f"duplicate key {name!r}: the last one wins", fatal=False))
                self._drop((*path, name))  # the earlier value and everything under it
            result[name] = self.convert(value_node, (*path, name), depth + 1, key_node)
        for merge in merges:
            sources = merge.value if merge.kind == SEQUENCE else [merge]
            for source in sources:
                self.merge(source, result, path, depth)
        return result

    def merge(self, source: Node, result: dict[str, Any], path: YamlPath, depth: int) -> None:
        """Add the keys of a ``<<`` merge source that ``result`` has not set yet."""
        if source.kind != MAPPING:
            raise _Refused(YAML_REFUSED, source, "a merge key '<<' needs a mapping")
        # a merged mapping's spans are kept only for the keys the mapping takes
        # from it (an explicit key, or an earlier merge, wins)
        own, self.spans = self.spans, {}
        try:
            merged = self.convert(source, path, depth + 1, None)
        finally:
            found, self.spans = self.spans, own
        taken = {name for name in merged if name not in result}
        for sub, span in found.items():
            if len(sub) > len(path) and sub[len(path)] in taken:
                self.spans.setdefault(sub, span)
        for name, value in merged.items():
            result.setdefault(name, value)

    def _drop(self, path: YamlPath) -> None:
        n = len(path)
        for sub in [p for p in self.spans if p[:n] == path]:
            del self.spans[sub]

    def scalar(self, node: Node) -> Any:
        if node.tag not in SCALAR_TAGS:
            raise _refuse_tag(node)
        try:
            return scalar_value(node.tag, node.value)
        except ValueError:
            raise _Refused(YAML_LIMIT, node, "number too long to read") from None
        except UnfitScalar as exc:  # PyYAML's constructor itself fails (it raised through)
            raise _Refused(YAML_REFUSED, node, str(exc)) from None


def _mark_range(index: LineIndex, mark: Any, shift: int) -> Range:
    if mark is None:
        return Range.at(0, 0)
    offset = getattr(mark, "index", None)
    if isinstance(offset, int):
        return index.range(offset + shift, offset + shift)
    return Range.at(int(getattr(mark, "line", 0)), int(getattr(mark, "column", 0)))


def _compose(text: str, shift: int, loader_class: Any) -> Node | None:
    """The node graph of ``text[shift:]``, read from the events of ``loader_class``'s parser
    (``_LOADER``: libyaml's when PyYAML has it); raises the parser's and the composer's
    errors."""
    loader = loader_class(text[shift:])
    try:
        libyaml = _CPARSER is not None and isinstance(loader, _CPARSER)
        return compose_single(loader, shift, MAX_DEPTH, libyaml)
    finally:
        loader.dispose()


def _read_simple(text: str, shift: int,
                 loader_class: Any) -> tuple[Any, Mapping[YamlPath, RawSpan]] | None:
    """The one-pass reading of a simple document (``None``: not simple, see ``simple``), or
    the same answer from a text read just before (``incremental``: the same text, or one
    edited inside a scalar value)."""
    known = incremental.reread(text, loader_class)
    if known is not None:
        return known
    loader = loader_class(text[shift:])
    try:
        read = read_simple(loader, shift, MAX_DEPTH, MAX_NODE_VISITS)
    finally:
        loader.dispose()
    if read is not None:
        incremental.remember(text, loader_class, *read)
    return read


def _syntax_problem(exc: yaml.YAMLError, index: LineIndex, shift: int) -> YamlProblem:
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        message = " ".join(p for p in (exc.context, exc.problem) if p) or "invalid YAML"
        return YamlProblem(YAML_SYNTAX, _mark_range(index, mark, shift),
                           f"YAML syntax error: {message}")
    if isinstance(exc, yaml.reader.ReaderError):
        char = exc.character
        code = ord(char) if isinstance(char, str) else int(char)
        at = exc.position + shift
        return YamlProblem(YAML_SYNTAX, index.range(at, at + 1),
                           f"YAML syntax error: character #x{code:04x} is not allowed"
                           " in YAML text")
    return YamlProblem(YAML_SYNTAX, Range.at(0, 0), f"YAML syntax error: {exc}")


#: The problem libyaml (0.2.6 on) reports at 1,000 nested flow collections.
_LIBYAML_NEST_LIMIT = "exceeded maximum nesting depth"

_TOO_DEEP = YamlProblem(YAML_LIMIT, Range.at(0, 0), "YAML nested too deeply to read; refused")


def parse_yaml(text: str) -> tuple[YamlDocument | None, list[YamlProblem]]:
    """Parse one YAML document with positions.

    Returns the document (``None`` when it cannot be used) and the problems found; a problem
    with ``fatal`` set is why the document is ``None``.
    """
    index = LineIndex(text)
    shift = 1 if text.startswith("\ufeff") else 0  # libyaml does not count a BOM: drop it
    if len(text) > MAX_YAML_CHARS:
        return None, [YamlProblem(YAML_LIMIT, Range.at(0, 0),
                                  f"YAML file of {len(text)} characters is above the"
                                  f" {MAX_YAML_CHARS} character cap; refused")]
    # libyaml takes a tab where PyYAML's Python scanner (``yaml.safe_load``, what a runner
    # most likely reads the file with) finds no token (``key:\t600``): a text with a tab is
    # read by the Python parser, so the verdict is the same with or without libyaml
    loader = _LOADER if "\t" not in text else yaml.SafeLoader
    try:
        try:
            return _read(text, shift, index, loader)
        except yaml.MarkedYAMLError as exc:
            if loader is yaml.SafeLoader or exc.problem != _LIBYAML_NEST_LIMIT:
                raise
        # libyaml (0.2.6 on: PyYAML 6.0.4's wheels) stops at 1,000 nested flow levels while it
        # scans ahead, before its parser gives the events MAX_DEPTH refuses at: the Python
        # parser gives them one at a time (the same events, the same answers)
        return _read(text, shift, index, yaml.SafeLoader)
    except yaml.YAMLError as exc:
        return None, [_syntax_problem(exc, index, shift)]
    except (ValueError, OverflowError) as exc:  # PyYAML's own scanner on "\\U99999999"
        return None, [YamlProblem(YAML_SYNTAX, Range.at(0, 0), f"YAML syntax error: {exc}")]
    except TooDeep as exc:
        at = exc.node.start
        return None, [YamlProblem(YAML_LIMIT, index.range(at, at),
                                  f"nested deeper than {MAX_DEPTH} levels; refused")]
    except RecursionError:
        return None, [_TOO_DEEP]


def _read(text: str, shift: int, index: LineIndex,
          loader_class: Any) -> tuple[YamlDocument | None, list[YamlProblem]]:
    """The document read in one pass when it is simple, else composed and converted, from
    the events of ``loader_class``'s parser; the parser's and the composer's errors
    propagate."""
    simple = _read_simple(text, shift, loader_class) if SIMPLE_FIRST else None
    if simple is not None:
        return YamlDocument(text, simple[0], SpanMap(simple[1], index), index), []
    root = _compose(text, shift, loader_class)
    if root is None:
        return YamlDocument(text, None, SpanMap({}, index), index), []
    converter = _Converter(index)
    try:
        value = converter.convert(root, (), 0, None)
    except _Refused as exc:
        rng = converter.range(exc.node) if exc.node is not None else Range.at(0, 0)
        if exc.code == YAML_LIMIT and exc.node is not None:
            rng = index.range(exc.node.start, exc.node.start)
        return None, [YamlProblem(exc.code, rng, exc.message)]
    return YamlDocument(text, value, SpanMap(converter.spans, index), index), converter.warnings
