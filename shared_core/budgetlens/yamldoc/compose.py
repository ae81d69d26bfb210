"""YAML events composed into a light node graph, with code-point offsets.

PyYAML's composers (the pure-Python one, and the one over libyaml in ``_yaml``) build a
``Node`` with two ``Mark`` objects for every value and resolve every plain scalar's type
through a list of regular expressions. This module reads the parser's event stream (libyaml's
when available: the same events and marks the C composer reads) and builds ``Node``: a small
slotted object holding the kind, the resolved tag, the value and the start and end offsets.
The result is the graph ``yaml.compose`` would build, node for node:

- anchors are registered when their node starts (an alias inside its own anchor's node makes
  a cycle, as in PyYAML), an alias is the anchored node itself;
- a scalar without a tag (or with the non-specific ``!``) gets the tag the loader's resolver
  gives it (YAML 1.1, as ``yaml.safe_load``): the answer is memoised per value;
- an undefined alias, a duplicate anchor and a second document are ``ComposerError`` with the
  same messages and marks as the composer of the event source (libyaml's or PyYAML's);
- parser errors are the parser's own exceptions.

One difference, on purpose: a node nested deeper than ``max_depth`` collections is refused as
soon as its event is read (``TooDeep``). The positioned reader refuses such a document anyway;
stopping there bounds the work (libyaml's scanner slows quadratically with flow nesting) and
the C composer's recursion (which overflows the C stack at about 30,000 levels).
"""

from __future__ import annotations

from typing import Any

from yaml.composer import ComposerError
from yaml.constructor import SafeConstructor
from yaml.events import (
    AliasEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    StreamEndEvent,
)
from yaml.nodes import ScalarNode

_STD = "tag:yaml.org,2002:"
STR_TAG = f"{_STD}str"
NULL_TAG = f"{_STD}null"
SEQ_TAG = f"{_STD}seq"
MAP_TAG = f"{_STD}map"
MERGE_TAG = f"{_STD}merge"
#: The tags of the scalars the reader accepts (a timestamp stays the text it is).
SCALAR_TAGS = frozenset(f"{_STD}{t}" for t in ("str", "int", "float", "bool", "null",
                                                "timestamp"))

SCALAR = 0
SEQUENCE = 1
MAPPING = 2

#: Tags of plain scalars memoised per resolver class: {class: {(value, implicit): tag}}.
_TAGS: dict[type, dict[tuple[str, tuple[bool, bool]], str]] = {}
#: Values longer than this are resolved every time (their regular expressions stay cheap);
#: the memo is emptied when it holds this many entries, so it stays small.
_MEMO_VALUE_CHARS = 200
_MEMO_ENTRIES = 20_000


_CONSTRUCTOR = SafeConstructor()
_CONSTRUCT = {f"{_STD}int": SafeConstructor.construct_yaml_int,
              f"{_STD}float": SafeConstructor.construct_yaml_float,
              f"{_STD}bool": SafeConstructor.construct_yaml_bool}
#: Plain values of int, float and bool scalars memoised per tag and text.
_VALUES: dict[str, dict[str, Any]] = {tag: {} for tag in _CONSTRUCT}


class UnfitScalar(Exception):
    """An explicit tag whose constructor cannot read the text (``!!int`` on an empty value,
    ``!!bool maybe``): PyYAML raises ``IndexError`` or ``KeyError`` there."""


def scalar_value(tag: str, text: str) -> Any:
    """The plain value of a scalar of an accepted tag (``SCALAR_TAGS``), as PyYAML's
    ``SafeConstructor`` makes it; a timestamp stays its text. Raises ``ValueError`` for a
    number too long (or otherwise impossible) to read, ``UnfitScalar`` for a text the
    tag's constructor fails on otherwise."""
    if tag == STR_TAG:
        return text
    memo = _VALUES.get(tag)
    if memo is None:  # null, timestamp
        return None if tag == NULL_TAG else text
    if text in memo:
        return memo[text]
    try:
        value = _CONSTRUCT[tag](_CONSTRUCTOR, ScalarNode(tag, text))
    except (IndexError, KeyError):
        raise UnfitScalar(f"YAML tag {tag!r} does not fit the value {text!r}") from None
    if len(memo) >= _MEMO_ENTRIES:
        memo.clear()
    if len(text) <= _MEMO_VALUE_CHARS:
        memo[text] = value
    return value


class Node:
    """One YAML node: ``kind`` (``SCALAR``, ``SEQUENCE``, ``MAPPING``), its resolved tag,
    its value (a ``str``, a list of nodes, or a list of ``(key, value)`` node pairs), its
    code-point ``start`` and ``end``, a scalar's ``style`` and a collection's ``flow``."""

    __slots__ = ("end", "flow", "kind", "seen", "start", "style", "tag", "value")

    def __init__(self, kind: int, tag: str, value: Any, start: int, end: int,
                 style: str | None, flow: bool) -> None:
        self.kind = kind
        self.tag = tag
        self.value = value
        self.start = start
        self.end = end
        self.style = style
        self.flow = flow
        self.seen = False  # set by a reader the first time it visits the node


class TooDeep(Exception):
    """A node nested deeper than the reader accepts: ``node`` is the first one found."""

    def __init__(self, node: Node) -> None:
        super().__init__("nested too deeply")
        self.node = node


def resolver_memo(loader: Any) -> dict[tuple[str, tuple[bool, bool]], str]:
    """The memo of resolved tags for ``loader``'s resolver (one per loader class)."""
    memo = _TAGS.get(type(loader))
    if memo is None:
        memo = _TAGS[type(loader)] = {}
    return memo


def resolve_tag(loader: Any, memo: dict[tuple[str, tuple[bool, bool]], str], value: str,
                implicit: tuple[bool, bool]) -> str:
    """The tag ``loader``'s resolver gives an untagged scalar, memoised in ``memo``."""
    key = (value, implicit)
    tag = memo.get(key)
    if tag is None:
        tag = str(loader.resolve(ScalarNode, value, implicit))
        if len(memo) >= _MEMO_ENTRIES:
            memo.clear()
        if len(value) <= _MEMO_VALUE_CHARS:
            memo[key] = tag
    return tag


class _Composer:
    """Composes the single document of ``loader``'s event stream (see the module)."""

    def __init__(self, loader: Any, shift: int, max_depth: int, libyaml: bool) -> None:
        self.loader = loader
        self.get = loader.get_event
        self.memo = resolver_memo(loader)
        self.shift = shift
        self.max_depth = max_depth
        self.libyaml = libyaml
        self.anchors: dict[str, Node] = {}

    def single(self) -> Node | None:
        get = self.get
        get()  # StreamStart
        event = get()
        if type(event) is StreamEndEvent:
            return None
        root = self.document()
        event = get()
        if type(event) is not StreamEndEvent:
            raise ComposerError("expected a single document in the stream", None,
                                "but found another document", event.start_mark)
        return root

    def tag(self, value: str, implicit: tuple[bool, bool]) -> str:
        return resolve_tag(self.loader, self.memo, value, implicit)

    def alias(self, event: Any) -> Node:
        node = self.anchors.get(event.anchor)
        if node is None:
            problem = ("found undefined alias" if self.libyaml
                       else f"found undefined alias {event.anchor!r}")
            raise ComposerError(None, None, problem, event.start_mark)
        return node

    def anchor(self, name: str, node: Node, event: Any) -> None:
        first = self.anchors.get(name)
        if first is not None:
            context = ("found duplicate anchor; first occurrence" if self.libyaml
                       else f"found duplicate anchor {name!r}; first occurrence")
            raise ComposerError(context, None, "second occurrence", event.start_mark)
        self.anchors[name] = node

    # long-function: one loop over the events of a document, kept flat for speed (it runs
    # once per event of every YAML file read)
    def document(self) -> Node:  # noqa: C901
        """The root node of the document whose DocumentStart was just read; reads up to and
        including its DocumentEnd."""
        get, shift, memo, max_depth = self.get, self.shift, self.memo, self.max_depth
        stack: list[Node] = []  # open collections, innermost last
        keys: list[Node | None] = []  # per open mapping level: its key waiting for a value
        while True:
            event = get()
            cls = type(event)
            if cls is ScalarEvent:
                value = event.value
                tag = event.tag
                if tag is None or tag == "!":
                    implicit = event.implicit
                    tag = memo.get((value, implicit)) or self.tag(value, implicit)
                node = Node(SCALAR, tag, value, event.start_mark.index + shift,
                            event.end_mark.index + shift, event.style or None, False)
                if event.anchor is not None:
                    self.anchor(event.anchor, node, event)
            elif cls is AliasEvent:
                node = self.alias(event)
            elif cls is SequenceEndEvent or cls is MappingEndEvent:
                node = stack.pop()
                keys.pop()
                node.end = event.end_mark.index + shift
            else:  # a collection starts
                tag = event.tag
                mapping = cls is MappingStartEvent
                if tag is None or tag == "!":
                    tag = MAP_TAG if mapping else SEQ_TAG
                start = event.start_mark.index + shift
                node = Node(MAPPING if mapping else SEQUENCE, tag, [], start, start, None,
                            bool(event.flow_style))
                if event.anchor is not None:
                    self.anchor(event.anchor, node, event)
                if len(stack) > max_depth:
                    self.check_depth(node, stack, keys)
                stack.append(node)
                keys.append(None)
                continue
            if not stack:
                return self.end_document(node)
            parent = stack[-1]
            if parent.kind == SEQUENCE:
                if len(stack) > max_depth:
                    raise TooDeep(node)
                parent.value.append(node)
            elif keys[-1] is None:
                keys[-1] = node
            else:
                if len(stack) > max_depth:
                    raise TooDeep(node)
                parent.value.append((keys[-1], node))
                keys[-1] = None

    @staticmethod
    def check_depth(node: Node, stack: list[Node], keys: list[Node | None]) -> None:
        """Refuse a collection starting deeper than ``max_depth`` as a value (a mapping's keys
        are not values: the reader never descends into them)."""
        if not (stack[-1].kind == MAPPING and keys[-1] is None):
            raise TooDeep(node)

    def end_document(self, root: Node) -> Node:
        self.get()  # DocumentEnd
        self.anchors = {}
        return root


def compose_single(loader: Any, shift: int, max_depth: int, libyaml: bool) -> Node | None:
    """The root node of the one document of ``loader``'s stream (``None`` for an empty
    stream); offsets are the marks' plus ``shift``. ``loader`` is a PyYAML loader: its
    ``get_event`` gives the events and its ``resolve`` the tags of untagged scalars;
    ``libyaml`` says it is libyaml's, whose composer words its errors differently."""
    return _Composer(loader, shift, max_depth, libyaml).single()


__all__ = ["MAPPING", "MAP_TAG", "MERGE_TAG", "NULL_TAG", "SCALAR", "SCALAR_TAGS", "SEQUENCE",
           "SEQ_TAG", "STR_TAG", "Node", "TooDeep", "UnfitScalar", "compose_single", "resolve_tag",
           "resolver_memo", "scalar_value"]
