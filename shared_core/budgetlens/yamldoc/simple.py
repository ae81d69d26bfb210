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

from typing import Any

from yaml.events import (
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)

from budgetlens.yamldoc.compose import (
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


class _Open:
    """An open collection: its value, path, start, flow, own key's offsets and, for a
    mapping, the key waiting for its value."""

    __slots__ = ("flow", "key", "key_end", "key_start", "kind", "path", "start", "value")

    def __init__(self, kind: int, value: Any, path: YamlPath, start: int, flow: bool,
                 key_start: int | None, key_end: int | None) -> None:
        self.kind = kind
        self.value = value
        self.path = path
        self.start = start
        self.flow = flow
        self.key_start = key_start
        self.key_end = key_end
        self.key: tuple[str, int, int] | None = None


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


# long-function: one loop over the events of a document, kept flat for speed (it runs once
# per event of every simple YAML file read)
def _document(loader: Any, shift: int, max_depth: int,  # noqa: C901
              max_visits: int) -> tuple[Any, dict[YamlPath, RawSpan]]:
    get = loader.get_event
    memo = resolver_memo(loader)
    spans: dict[YamlPath, Any] = {}
    stack: list[_Open] = []
    top: _Open | None = None
    anchors: dict[str, tuple[int, int, str | None, Any]] = {}  # anchored scalars
    visits = 0  # values repeated through aliases
    path: YamlPath
    while True:
        event = get()
        cls = type(event)
        if cls is ScalarEvent:
            text = event.value
            tag = event.tag
            if tag is None or tag == "!":
                implicit = event.implicit
                tag = memo.get((text, implicit)) or resolve_tag(loader, memo, text, implicit)
            if tag not in SCALAR_TAGS:
                raise _NotSimple  # a merge key, or a tag the general reader refuses
            start = event.start_mark.index + shift
            end = event.end_mark.index + shift
            if top is not None and top.kind == MAPPING and top.key is None:
                if text in top.value or event.anchor is not None:
                    raise _NotSimple  # a duplicate key (the general reader warns), an anchor
                top.key = (text, start, end)
                continue
            value = text if tag == STR_TAG else _scalar(tag, text)
            style = event.style or None
            if event.anchor is not None:
                if event.anchor in anchors:
                    raise _NotSimple  # a duplicate anchor: the composer's error
                anchors[event.anchor] = (start, end, style, value)
            if top is None:
                return value, {(): (start, end, SCALAR, False, None, None, style)}
            if len(stack) > max_depth:
                raise _NotSimple
            if top.kind == SEQUENCE:
                items = top.value
                path = (*top.path, len(items))
                spans[path] = (start, end, SCALAR, False, None, None, style)
                items.append(value)
            else:
                name, key_start, key_end = top.key  # type: ignore[misc]
                path = (*top.path, name)
                spans[path] = (start, end, SCALAR, False, key_start, key_end, style)
                top.value[name] = value
                top.key = None
        elif cls is MappingStartEvent or cls is SequenceStartEvent:
            if event.anchor is not None:
                raise _NotSimple
            mapping = cls is MappingStartEvent
            tag = event.tag
            if not (tag is None or tag == "!" or tag == (MAP_TAG if mapping else SEQ_TAG)):
                raise _NotSimple
            if len(stack) > max_depth:
                raise _NotSimple
            key_start = key_end = None
            if top is None:
                path = ()
            elif top.kind == SEQUENCE:
                path = (*top.path, len(top.value))
            elif top.key is None:
                raise _NotSimple  # a collection as a key: the general reader refuses it
            else:
                name, key_start, key_end = top.key
                path = (*top.path, name)
            spans[path] = None  # its place in the order; the span is set at its end
            top = _Open(MAPPING if mapping else SEQUENCE, {} if mapping else [], path,
                        event.start_mark.index + shift, bool(event.flow_style), key_start,
                        key_end)
            stack.append(top)
        elif cls is MappingEndEvent or cls is SequenceEndEvent:
            done = stack.pop()
            spans[done.path] = (done.start, event.end_mark.index + shift, done.kind,
                                done.flow, done.key_start, done.key_end, None)
            if not stack:
                return done.value, spans
            top = stack[-1]
            if top.kind == SEQUENCE:
                top.value.append(done.value)
            else:
                top.value[top.key[0]] = done.value  # type: ignore[index]
                top.key = None
        else:  # an alias: of a scalar, it is that scalar again (counted as a repeat)
            found = anchors.get(event.anchor)
            if found is None or top is None or len(stack) > max_depth \
                    or (top.kind == MAPPING and top.key is None):
                raise _NotSimple  # of a collection or undefined, the root, too deep, a key
            visits += 1
            if visits > max_visits:
                raise _NotSimple  # the general reader refuses it
            start, end, style, value = found
            if top.kind == SEQUENCE:
                path = (*top.path, len(top.value))
                spans[path] = (start, end, SCALAR, False, None, None, style)
                top.value.append(value)
            else:
                name, key_start, key_end = top.key  # type: ignore[misc]
                path = (*top.path, name)
                spans[path] = (start, end, SCALAR, False, key_start, key_end, style)
                top.value[name] = value
                top.key = None


def _scalar(tag: str, text: str) -> Any:
    try:
        return scalar_value(tag, text)
    except (ValueError, UnfitScalar):
        raise _NotSimple from None


__all__ = ["EMPTY", "MERGE_TAG", "RawSpan", "read_simple"]
