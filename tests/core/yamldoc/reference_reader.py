"""Today's positioned YAML reader, frozen as the reference the new one is compared with.

This is ``budgetlens.yamldoc.parse`` as it was before the reader over libyaml's events (main at
a86e58b): ``yaml.compose`` with a given loader, then the node graph converted to plain values
and spans. It is only used by the tests, never by the product; ``parse_yaml_reference(text,
loader)`` answers what ``parse_yaml(text)`` answered then with that loader.
"""
# ruff: noqa

from __future__ import annotations

from typing import Any

import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from budgetlens.codes import DUPLICATE_KEY as YAML_DUPLICATE_KEY
from budgetlens.codes import YAML_LIMIT, YAML_REFUSED, YAML_SYNTAX
from budgetlens.source import LineIndex, Range
from budgetlens.yamldoc.parse import (
    MAX_DEPTH,
    MAX_NODE_VISITS,
    MAX_YAML_CHARS,
    NodeKind,
    Span,
    YamlDocument,
    YamlPath,
    YamlProblem,
)

_STD = "tag:yaml.org,2002:"
_SCALAR_TAGS = {f"{_STD}{t}" for t in ("str", "int", "float", "bool", "null", "timestamp")}
_MERGE = f"{_STD}merge"


class _Refused(Exception):
    def __init__(self, code: str, node: Node | None, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.node = node
        self.message = message


class _Converter:
    def __init__(self, text: str, index: LineIndex, shift: int) -> None:
        self.text = text
        self.index = index
        self.shift = shift  # marks count from after a leading BOM
        self.spans: dict[YamlPath, Span] = {}
        self.visits = 0  # visits of nodes already visited: values repeated through aliases
        self.seen: set[int] = set()
        self.warnings: list[YamlProblem] = []
        self.constructor = SafeConstructor()

    def range(self, node: Node) -> Range:
        return self.index.range(self.start(node), self.end(node))

    def start(self, node: Node) -> int:
        return int(node.start_mark.index) + self.shift

    def end(self, node: Node) -> int:
        return int(node.end_mark.index) + self.shift

    def convert(self, node: Node, path: YamlPath, depth: int, key: Node | None) -> Any:
        self.visit(node, depth)
        self.record(node, path, key)
        if isinstance(node, ScalarNode):
            return self.scalar(node)
        if isinstance(node, SequenceNode):
            if node.tag != f"{_STD}seq":
                raise _Refused(YAML_REFUSED, node, f"YAML tag {node.tag!r} is not allowed")
            return [self.convert(item, (*path, i), depth + 1, None)
                    for i, item in enumerate(node.value)]
        if not isinstance(node, MappingNode) or node.tag != f"{_STD}map":
            raise _Refused(YAML_REFUSED, node, f"YAML tag {node.tag!r} is not allowed")
        return self.mapping(node, path, depth)

    def visit(self, node: Node, depth: int) -> None:
        """Count a visit of ``node``; refuse an alias bomb or a too deep document."""
        if id(node) in self.seen:
            self.visits += 1
        else:
            self.seen.add(id(node))  # the composed graph is alive, so ids stay unique
        if self.visits > MAX_NODE_VISITS:
            raise _Refused(YAML_LIMIT, node, f"document expands to more than {MAX_NODE_VISITS}"
                           " values through aliases (an alias bomb?); refused")
        if depth > MAX_DEPTH:
            raise _Refused(YAML_LIMIT, node, f"nested deeper than {MAX_DEPTH} levels; refused")

    def record(self, node: Node, path: YamlPath, key: Node | None) -> None:
        """The span of the value at ``path`` (the first one seen)."""
        if path in self.spans:
            return
        kind = (NodeKind.SCALAR if isinstance(node, ScalarNode)
                else NodeKind.SEQUENCE if isinstance(node, SequenceNode) else NodeKind.MAPPING)
        self.spans[path] = Span(
            start=self.start(node), end=self.end(node), kind=kind,
            flow=bool(getattr(node, "flow_style", False)),
            key_start=self.start(key) if key is not None else None,
            key_end=self.end(key) if key is not None else None,
            style=(node.style or None) if isinstance(node, ScalarNode) else None,
            index=self.index)

    def mapping(self, node: MappingNode, path: YamlPath, depth: int) -> dict[str, Any]:
        result: dict[str, Any] = {}
        merges: list[Node] = []
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE:
                merges.append(value_node)
                continue
            if not isinstance(key_node, ScalarNode):
                raise _Refused(YAML_REFUSED, key_node, "a mapping key must be a plain scalar")
            if key_node.tag not in _SCALAR_TAGS:
                raise _Refused(YAML_REFUSED, key_node, f"YAML tag {key_node.tag!r} is not allowed")
            name = str(key_node.value)
            if name in result:
                self.warnings.append(YamlProblem(
                    YAML_DUPLICATE_KEY, self.range(key_node),
                    f"duplicate key {name!r}: the last one wins", fatal=False))
                self._drop((*path, name))  # the earlier value and everything under it
            result[name] = self.convert(value_node, (*path, name), depth + 1, key_node)
        for merge in merges:
            sources = merge.value if isinstance(merge, SequenceNode) else [merge]
            for source in sources:
                self.merge(source, result, path, depth)
        return result

    def merge(self, source: Node, result: dict[str, Any], path: YamlPath, depth: int) -> None:
        """Add the keys of a ``<<`` merge source that ``result`` has not set yet."""
        if not isinstance(source, MappingNode):
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

    def scalar(self, node: ScalarNode) -> Any:
        tag = node.tag
        if tag not in _SCALAR_TAGS:
            raise _Refused(YAML_REFUSED, node, f"YAML tag {tag!r} is not allowed")
        try:
            if tag == f"{_STD}int":
                return self.constructor.construct_yaml_int(node)
            if tag == f"{_STD}float":
                return self.constructor.construct_yaml_float(node)
            if tag == f"{_STD}bool":
                return self.constructor.construct_yaml_bool(node)
        except ValueError:
            raise _Refused(YAML_LIMIT, node, "number too long to read") from None
        if tag == f"{_STD}null":
            return None
        return str(node.value)


def _mark_range(index: LineIndex, mark: Any, shift: int) -> Range:
    if mark is None:
        return Range.at(0, 0)
    offset = getattr(mark, "index", None)
    if isinstance(offset, int):
        return index.range(offset + shift, offset + shift)
    return Range.at(int(getattr(mark, "line", 0)), int(getattr(mark, "column", 0)))


def parse_yaml_reference(text: str, loader: Any) -> tuple[YamlDocument | None, list[YamlProblem]]:
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
    if "\t" in text:  # issue 30: a text with a tab reads as yaml.safe_load (Python) reads it
        loader = yaml.SafeLoader
    try:
        root = yaml.compose(text[shift:], Loader=loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        message = " ".join(p for p in (exc.context, exc.problem) if p) or "invalid YAML"
        return None, [YamlProblem(YAML_SYNTAX, _mark_range(index, mark, shift),
                                  f"YAML syntax error: {message}")]
    except yaml.reader.ReaderError as exc:
        char = exc.character
        code = ord(char) if isinstance(char, str) else int(char)
        at = exc.position + shift
        return None, [YamlProblem(YAML_SYNTAX, index.range(at, at + 1),
                                  f"YAML syntax error: character #x{code:04x} is not allowed"
                                  " in YAML text")]
    except yaml.YAMLError as exc:
        return None, [YamlProblem(YAML_SYNTAX, Range.at(0, 0), f"YAML syntax error: {exc}")]
    except RecursionError:
        return None, [YamlProblem(YAML_LIMIT, Range.at(0, 0),
                                  "YAML nested too deeply to read; refused")]
    if root is None:
        return YamlDocument(text, None, {}, index), []
    converter = _Converter(text, index, shift)
    try:
        value = converter.convert(root, (), 0, None)
    except _Refused as exc:
        rng = converter.range(exc.node) if exc.node is not None else Range.at(0, 0)
        if exc.code == YAML_LIMIT and exc.node is not None:
            rng = index.range(converter.start(exc.node), converter.start(exc.node))
        return None, [YamlProblem(exc.code, rng, exc.message)]
    except RecursionError:
        return None, [YamlProblem(YAML_LIMIT, Range.at(0, 0),
                                  "YAML nested too deeply to read; refused")]
    return YamlDocument(text, value, converter.spans, index), converter.warnings

