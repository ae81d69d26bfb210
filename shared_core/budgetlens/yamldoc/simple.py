"""The one-pass reader of simple YAML documents: events straight to values and spans.

Most pipeline files use no merge key and no anchored collection, repeat no key and carry no
tag the reader refuses; at most a scalar is anchored (``max_context_tokens: &ctx 8000``) and
aliased. For them the node graph is a tree (an alias of a scalar is that scalar again) that
is converted once, in the order of the text, so the plain values and the spans can be built
while the events are read, without a node graph. ``read_simple`` does that and gives up
(``None``) at the first thing outside that case: an anchored collection or key, an alias of
one (or undefined, or used as a key), a merge key, a duplicate key or anchor, a collection as
a key, a tag other than YAML's plain ones, a number too long to read, nesting deeper than the
cap, more repeats through aliases than the cap, or a second document. The caller then reads
the text again with the general reader (``compose`` + the converter in ``parse``), which
answers everything exactly, errors included; for a simple document both give the same
values and the same spans, in the same order (tests/core/yamldoc/test_reader_equivalence.py).

A parser error raised while reading is the answer as it stands: the general reader would
read the same events up to it and raise the same error.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from yaml.events import (
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)

from budgetlens.yamldoc.compose import (
    _MEMO_ENTRIES,
    _MEMO_VALUE_CHARS,
    MAP_TAG,
    MAPPING,
    MERGE_TAG,
    SCALAR,
    SCALAR_TAGS,
    SEQ_TAG,
    SEQUENCE,
    STR_TAG,
    UnfitScalar,
    resolve_tag,
    resolver_memo,
    scalar_value,
)

YamlPath = tuple[str | int, ...]
#: A span as the readers record it: start, end, kind (``compose.SCALAR``, ...), flow,
#: key start, key end, scalar style.
RawSpan = tuple[int, int, int, bool, int | None, int | None, str | None]

#: ``read_simple``'s answer for a stream without a document.
EMPTY: tuple[Any, dict[YamlPath, RawSpan]] = (None, {})


class _NotSimple(Exception):
    pass


def read_simple(loader: Any, shift: int, max_depth: int,
                max_visits: int) -> tuple[Any, dict[YamlPath, RawSpan]] | None:
    """The value and spans of the one document of ``loader``'s stream (``EMPTY`` for none),
    or ``None`` when the document is not simple (see the module). Parser errors propagate."""
    get = loader.get_event
    get()  # StreamStart
    if type(get()) is StreamEndEvent:
        return EMPTY
    try:
        value, spans = _document(loader, shift, max_depth, max_visits)
    except _NotSimple:
        return None
    get()  # DocumentEnd
    if type(get()) is not StreamEndEvent:
        return None  # a second document: the general reader words the error
    return value, spans


#: Plain values of untagged plain scalars whose tag the reader accepts (a merge key is not
#: one), memoised per loader class: {class: {text: value}}; bounded as ``compose``'s memos.
_PLAIN: dict[type, dict[str, Any]] = {}
_MISSING: Any = object()
#: The ``implicit`` of an untagged plain scalar's event (both parsers).
_PLAIN_IMPLICIT = (True, False)


def _plain_values(loader: Any) -> dict[str, Any]:
    values = _PLAIN.get(type(loader))
    if values is None:
        values = _PLAIN[type(loader)] = {}
    return values


#: Untagged plain scalars whose tag the reader accepts as a key, per loader class (bounded
#: as ``_PLAIN``).
_KEYS: dict[type, set[str]] = {}


def _plain_keys(loader: Any) -> set[str]:
    keys = _KEYS.get(type(loader))
    if keys is None:
        keys = _KEYS[type(loader)] = set()
    return keys


def _plain_key(loader: Any, memo: dict[tuple[str, tuple[bool, bool]], str], keys: set[str],
               text: str) -> None:
    """Check the tag of an untagged plain key not in ``keys`` yet (then remembered there)."""
    _accepted_tag(loader, memo, text, None, _PLAIN_IMPLICIT)
    if len(keys) >= _MEMO_ENTRIES:
        keys.clear()
    if len(text) <= _MEMO_VALUE_CHARS:
        keys.add(text)


def _accepted_tag(loader: Any, memo: dict[tuple[str, tuple[bool, bool]], str], text: str,
                  tag: str | None, implicit: tuple[bool, bool]) -> str:
    """The resolved tag of a scalar; ``_NotSimple`` when the one-pass reader does not take
    it (a merge key, or a tag the general reader refuses)."""
    if tag is None or tag == "!":
        tag = memo.get((text, implicit)) or resolve_tag(loader, memo, text, implicit)
    if tag not in SCALAR_TAGS:
        raise _NotSimple
    return tag


#: Loader classes whose resolver is PyYAML's YAML 1.1 one (``SafeLoader``'s): for them an
#: untagged plain scalar of ``_DECIMAL`` digits is an int, its value ``int(text)``.
_YAML11_RESOLVERS = frozenset(c for c in (getattr(yaml, "CSafeLoader", None), yaml.SafeLoader)
                              if c is not None)
#: A decimal without sign, underscore or leading zero (a leading 0 is octal in YAML 1.1),
#: short enough for ``int`` to read: no resolver of ``SafeLoader`` but the int one matches
#: it (float needs a dot, timestamp a dash, bool and null letters).
_DECIMAL = re.compile(r"(?:0|[1-9][0-9]{0,17})")


def _plain_value(loader: Any, memo: dict[tuple[str, tuple[bool, bool]], str],
                 values: dict[str, Any], text: str) -> Any:
    """The value of an untagged plain scalar not in ``values`` yet (then memoised there)."""
    if _DECIMAL.fullmatch(text) is not None and type(loader) in _YAML11_RESOLVERS:
        return int(text)  # what resolving and constructing give (tests: equivalence)
    value = _scalar(_accepted_tag(loader, memo, text, None, _PLAIN_IMPLICIT), text)
    if len(values) >= _MEMO_ENTRIES:
        values.clear()
    if len(text) <= _MEMO_VALUE_CHARS:
        values[text] = value
    return value


def _value(loader: Any, memo: dict[tuple[str, tuple[bool, bool]], str], event: Any,
           text: str) -> Any:
    """The value of a tagged scalar (or one with the non-specific tag ``!``)."""
    tag = _accepted_tag(loader, memo, text, event.tag, event.implicit)
    return text if tag == STR_TAG else _scalar(tag, text)


#: A loader of each class, kept to resolve tags with (``plain_value``).
_RESOLVERS: dict[type, Any] = {}


def plain_value(loader_class: type, text: str) -> tuple[bool, Any]:
    """``(True, value)``: the value ``read_simple`` gives an untagged plain scalar ``text``
    read with a loader of ``loader_class``; ``(False, None)`` when it does not take it (a
    merge key, a tag it refuses, a number too long to read)."""
    values = _PLAIN.get(loader_class)
    if values is None:
        values = _PLAIN[loader_class] = {}
    value = values.get(text, _MISSING)
    if value is not _MISSING:
        return True, value
    loader = _RESOLVERS.get(loader_class)
    if loader is None:
        loader = _RESOLVERS[loader_class] = loader_class("")
    try:
        return True, _plain_value(loader, resolver_memo(loader), values, text)
    except _NotSimple:
        return False, None


# long-function: one loop over the events of a document, kept flat for speed (it runs once
# per event of every simple YAML file read): the open collection is held in locals (its
# value, path, kind, start, flow and own key's offsets; the parents' on ``stack``) and the
# key of a mapping waiting for its value in ``name``/``key_start``/``key_end``; a path is
# extended by concatenation (``at + (name,)``), twice as fast as unpacking
def _document(loader: Any, shift: int, max_depth: int,  # noqa: C901
              max_visits: int) -> tuple[Any, dict[YamlPath, RawSpan]]:
    get = loader.get_event
    memo = resolver_memo(loader)
    values = _plain_values(loader)
    keys = _plain_keys(loader)
    missing = _MISSING
    spans: dict[YamlPath, Any] = {}
    stack: list[tuple[Any, YamlPath, bool, int, bool, int | None, int | None]] = []
    anchors: dict[str, tuple[int, int, str | None, Any]] = {}  # anchored scalars
    visits = 0  # values repeated through aliases
    # the open collection (none yet: ``container`` is None)
    container: Any = None
    at: YamlPath = ()
    path: YamlPath  # a collection's path as it opens
    in_map = False
    start = 0
    flow = False
    own_start: int | None = None
    own_end: int | None = None
    deep = False  # len(stack) > max_depth: a value there is refused
    name: Any = None  # in a mapping, the key (str) waiting for its value
    key_start = key_end = 0
    while True:
        event = get()
        cls = type(event)
        if cls is ScalarEvent:
            text = event.value
            style = event.style or None
            if in_map and name is None:  # a key: its tag is checked, its value never made
                if style is None and event.tag is None:
                    if text not in keys:
                        _plain_key(loader, memo, keys, text)
                elif event.tag is not None:
                    _accepted_tag(loader, memo, text, event.tag, event.implicit)
                if text in container or event.anchor is not None:
                    raise _NotSimple  # a duplicate key (the general reader warns), an anchor
                name = text
                key_start = event.start_mark.index + shift
                key_end = event.end_mark.index + shift
                continue
            if event.tag is None:
                if style is None:
                    value = values.get(text, missing)
                    if value is missing:
                        value = _plain_value(loader, memo, values, text)
                else:
                    value = text  # quoted or block: a string
            else:
                value = _value(loader, memo, event, text)
            s_start = event.start_mark.index + shift
            s_end = event.end_mark.index + shift
            anchor = event.anchor
            if anchor is not None:
                if anchor in anchors:
                    raise _NotSimple  # a duplicate anchor: the composer's error
                anchors[anchor] = (s_start, s_end, style, value)
            if container is None:
                return value, {(): (s_start, s_end, SCALAR, False, None, None, style)}
            if deep:
                raise _NotSimple
            if in_map:  # the span made once, with its key's offsets
                spans[at + (name,)] = (s_start, s_end, SCALAR, False,  # noqa: RUF005
                                       key_start, key_end, style)
                container[name] = value
                name = None
            else:
                spans[at + (len(container),)] = (s_start, s_end, SCALAR, False,  # noqa: RUF005
                                                 None, None, style)
                container.append(value)
        elif cls is MappingStartEvent or cls is SequenceStartEvent:
            if event.anchor is not None:
                raise _NotSimple
            mapping = cls is MappingStartEvent
            tag = event.tag
            if not (tag is None or tag == "!" or tag == (MAP_TAG if mapping else SEQ_TAG)):
                raise _NotSimple
            if len(stack) > max_depth:
                raise _NotSimple
            stack.append((container, at, in_map, start, flow, own_start, own_end))
            if container is None:
                path = ()
                own_start = own_end = None
            elif in_map:
                if name is None:
                    raise _NotSimple  # a collection as a key: the general reader refuses it
                path = at + (name,)  # noqa: RUF005
                own_start, own_end = key_start, key_end
            else:
                path = at + (len(container),)  # noqa: RUF005
                own_start = own_end = None
            spans[path] = None  # its place in the order; the span is set at its end
            container = {} if mapping else []
            at = path
            in_map = mapping
            start = event.start_mark.index + shift
            flow = bool(event.flow_style)
            name = None
            deep = len(stack) > max_depth
        elif cls is MappingEndEvent or cls is SequenceEndEvent:
            done = container
            spans[at] = (start, event.end_mark.index + shift, MAPPING if in_map else SEQUENCE,
                         flow, own_start, own_end, None)
            last = at[-1] if at else None
            container, at, in_map, start, flow, own_start, own_end = stack.pop()
            if container is None:
                return done, spans
            deep = len(stack) > max_depth
            if in_map:
                container[last] = done
                name = None
            else:
                container.append(done)
        else:  # an alias: of a scalar, it is that scalar again (counted as a repeat)
            found = anchors.get(event.anchor)
            if found is None or container is None or deep or (in_map and name is None):
                raise _NotSimple  # of a collection or undefined, the root, too deep, a key
            visits += 1
            if visits > max_visits:
                raise _NotSimple  # the general reader refuses it
            a_start, a_end, a_style, value = found
            if in_map:
                path = at + (name,)  # noqa: RUF005
                spans[path] = (a_start, a_end, SCALAR, False, key_start, key_end, a_style)
                container[name] = value
                name = None
            else:
                spans[at + (len(container),)] = (a_start, a_end, SCALAR, False, None, None,  # noqa: RUF005
                                                 a_style)
                container.append(value)


def _scalar(tag: str, text: str) -> Any:
    try:
        return scalar_value(tag, text)
    except (ValueError, UnfitScalar):
        raise _NotSimple from None


__all__ = ["EMPTY", "MERGE_TAG", "RawSpan", "plain_value", "read_simple"]
