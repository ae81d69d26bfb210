"""The budgeted hierarchy context: the structure around a cut, for a continuation prompt.

Budget is allocated bottom-up (from the cut towards the root) and the text is printed
top-down (docs/json-continuation.md):

1. the cut element (the partial value, or the value just completed at the cut) costs its size:
   rendered in full when it fits the remaining budget (deducted), else a type hint (free);
2. the containers on the path from the cut to the root cost nothing (keys, braces);
3. side branches (the complete children of those containers) get the leftover, nearest to
   the cut first: cut level in reverse order, then the parent's level, and so on up;
   a branch that fits is rendered in full and deducted, one that does not is a type hint;
   after ``MAX_MISSES_PER_LEVEL`` branches in a row did not fit, the rest of that level is
   taken as not fitting without measuring it (this bounds the work on huge arrays);
4. whenever the remaining budget is under ``SUMMARY_BELOW`` (50) it becomes 0: summary
   mode. From then on the cut element's level shows type hints and higher levels show
   structure only (``{...}``, ``[...]``, ``...``).

Cost of a value = the characters of the scalar literals it holds (strings with their quotes,
numbers, true/false/null) as they appear in the source; keys, braces, brackets, commas,
colons, whitespace, type hints and the marker are structure and cost nothing.

A value shown in full is printed by ``pretty``; RUN children are read back through ``runs``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from budgetlens.continuation.cut import Frame
from budgetlens.continuation.pretty import (
    Flat,
    _indent,
    flat_cost,
    flat_lines,
    flat_parts,
    pretty_lines,
    verbatim_cost,
)
from budgetlens.continuation.runs import (
    RUN,
    RUN_MIN_ITEMS,
    SourceLiterals,
    compact_record_tail,
    expand_run,
    record_tail,
    scalar_floor,
    scalar_literals,
    scalar_tail,
    split_known,
    split_run,
)
from budgetlens.continuation.syntax import (
    ARRAY,
    JSON_STRING,
    LITERAL,
    NUMBER,
    OBJECT,
    STRING,
    Child,
    CutKind,
    ValueKind,
    string_keep_end,
)

SUMMARY_BELOW = 50
COLLAPSE_RUN = 4          # this many or more consecutive array items not shown in full: one line
OBJECT_KEEP = 5           # a run of object members not shown in full keeps this many at each
                          # end; the COLLAPSE_RUN or more between them are one line
MAX_MISSES_PER_LEVEL = 64  # after this many side branches in a row did not fit, the rest of
                           # that level is taken as not fitting (type hints) unmeasured

_FULL, _HINT, _STRUCT = 0, 1, 2
_PARTIAL_KINDS = (CutKind.STRING, CutKind.STRING_ESCAPE, CutKind.NUMBER, CutKind.LITERAL)

_STR = JSON_STRING
# findall gives the scalar literals of values, one match per value with the structure and the
# key before it (a key gives nothing, and so does a string cut by the end of a measuring
# window, so a window never over-counts); a match per value, not per character. A window may
# end inside an escape (right after its backslash): the cut string still ends the window in
# one match (else findall would restart at each of its escaped quotes, counting pieces of it
# and scanning the rest of the window again from each: quadratic).
_COST_SCALARS = re.compile(
    r"[ \t\n\r,:\[\]{}]*(?:" + _STR + r"[ \t\n\r]*:[ \t\n\r]*)?"
    r"(?:(" + _STR + r"|[^ \t\n\r,:\[\]{}\"]+)|\"[^\"\\]*(?:\\.[^\"\\]*)*\\?\Z)?")


def value_cost(text: str, start: int, end: int, kind: ValueKind, limit: int,
               floor: int = 0) -> int:
    """Budget cost of the complete value ``text[start:end]``.

    Exact when it is at most ``limit``; otherwise some number above ``limit``: large values
    are measured on a window that grows until it holds more than ``limit`` (what a window
    holds is never more than the whole value costs) or the whole value, so a huge sibling
    costs little to turn down. ``floor``: a known lower bound of the cost (above ``limit``:
    the value is not measured).
    """
    if kind != OBJECT and kind != ARRAY:
        return end - start
    if floor > limit:
        return floor
    window = 2 * max(limit, 0) + 64
    if end - start <= 4 * window:  # one pass over a small value beats two windows
        return sum(map(len, _COST_SCALARS.findall(text, start, end)))
    while True:
        stop = min(end, start + window)
        total = sum(map(len, _COST_SCALARS.findall(text, start, stop)))
        if total > limit or stop >= end:
            return total
        window *= 4


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}s"


def decoded_chars(text: str, start: int, end: int) -> int:
    """Characters of the decoded value of the valid JSON string content ``text[start:end]``
    (no quotes), counted without decoding when it holds no ``\\u`` escape: every other escape
    is two characters for one, and a run of L backslashes starts L - L // 2 escapes (its
    pairs, plus one more when L is odd)."""
    if end - start > 4096:  # one C string scan of a copy beats three counting passes
        literal = text[start - 1:end]
        literal += '"'
        return string_chars(literal)
    backslashes = text.count("\\", start, end)
    if backslashes == 0:
        return end - start
    if text.find("\\u", start, end) < 0:
        return end - start - (backslashes - text.count("\\\\", start, end))
    return string_chars('"' + text[start:end] + '"')


def string_chars(literal: str) -> int:
    """Characters of a JSON string literal's decoded value."""
    try:
        value = json.loads(literal)
    except ValueError:
        return max(len(literal) - 2, 0)
    return len(value) if isinstance(value, str) else 0


def type_hint(kind: ValueKind, count: int = 0, chars: int = 0, first: str = "") -> str:
    if kind == OBJECT:
        return "{}" if count == 0 else f"<object: {_plural(count, 'key')}>"
    if kind == ARRAY:
        return "[]" if count == 0 else f"<array: {_plural(count, 'item')}>"
    if kind == STRING:
        return f"<string: {_plural(chars, 'char')}>"
    if kind == NUMBER:
        return "<number>"
    return "<null>" if first == "n" else "<boolean>"


def _child_hint(text: str, child: Child) -> str:
    chars = decoded_chars(text, child.start + 1, child.end - 1) if child.kind == STRING else 0
    return type_hint(child.kind, child.size, chars, text[child.start:child.start + 1])


def _child_structure(child: Child) -> str:
    if child.kind == OBJECT:
        return "{...}" if child.size else "{}"
    if child.kind == ARRAY:
        return "[...]" if child.size else "[]"
    return "..."


class _Allocator:
    def __init__(self, budget: int) -> None:
        self.remaining = max(budget, 0)
        self.summary = False
        self._check()

    def _check(self) -> None:
        if self.remaining < SUMMARY_BELOW:
            self.remaining = 0
            self.summary = True

    def take(self, cost_of: int) -> int:
        if cost_of <= self.remaining:
            self.remaining -= cost_of
            decision = _FULL
        else:
            decision = _HINT
        self._check()
        return decision


@dataclass
class _Layout:
    """What the allocation decided, per open container (level) from the root down."""

    frames: list[Frame]
    cut_child: Child | None
    levels: list[list[Child]]        # the children of each level (RUN children get expanded)
    decisions: list[dict[int, int]]  # per level: child index -> _FULL / _HINT
    defaults: list[int]              # per level: the decision of a child not measured
    # scalar RUNs in full: their literals, or where they are in the text
    literals: dict[int, list[str] | SourceLiterals] = field(default_factory=dict)
    flat: dict[int, Flat] = field(default_factory=dict)  # flat containers measured, by start
    records: dict[int, list[list[tuple[str, str]]]] = field(default_factory=dict)  # RUNs in full
    verbatim: set[int] = field(default_factory=set)  # containers printed as their source, by start
    compact: set[int] = field(default_factory=set)  # RUNs of compact records in full, by start
    floors: dict[int, tuple[Any, int]] = field(default_factory=dict)  # by id: (value, floor)

    def floor_of(self, value: Any, limit: int) -> int:
        """``scalar_floor(value, limit)``, or one computed before with a limit at least as
        high (the budget left only shrinks): above ``limit`` exactly when the new one is. The
        value is kept with its floor (its id is not reused while it lives)."""
        known = self.floors.get(id(value))
        if known is not None:
            return known[1]
        floor = scalar_floor(value, limit)
        self.floors[id(value)] = (value, floor)
        return floor

    @property
    def innermost(self) -> int:
        return len(self.frames) - 1

    def shown(self, fi: int) -> int:
        """How many children of level ``fi`` are printed as side branches (not the cut's)."""
        cut_own = fi == self.innermost and self.cut_child is not None
        return len(self.levels[fi]) - (1 if cut_own else 0)


def render_hierarchy(text: str, frames: list[Frame], *, kind: CutKind | None,
                     token_start: int, stop: int, budget: int, marker: str,
                     header: str, cut_chars: int = -1) -> str:
    """The budgeted rendering of ``text`` cut at ``stop`` (see the module docstring).

    ``kind`` is the cut kind (or the state at an error); ``token_start`` is where the partial
    token at the cut starts (-1 when none); ``cut_chars``, when >= 0, the decoded characters
    of a cut string (the scan already knows them: not counted again).
    """
    cut_child: Child | None = None
    if kind is CutKind.AFTER_VALUE and frames and frames[-1].children:
        cut_child = frames[-1].children[-1]
    alloc = _Allocator(budget)
    # 1. the cut element
    cut_decision = _cut_decision(text, alloc, kind, token_start, stop, cut_child)
    # 2. path containers are structure; 3. side branches, nearest to the cut first
    layout = _Layout(frames, cut_child, [list(frame.children) for frame in frames],
                     [{} for _ in frames],
                     [_HINT if fi == len(frames) - 1 else _STRUCT for fi in range(len(frames))])
    for fi in range(layout.innermost, -1, -1):
        if alloc.summary:
            break
        _allocate_level(text, layout, fi, alloc)
    # printing, top-down
    lines: list[str] = [header] if header else []
    for fi, frame in enumerate(frames):
        if fi == 0:
            lines.append("{" if frame.is_object else "[")
        depth = fi + 1
        pad = _indent(depth)
        lines.extend(_side_branch_lines(text, layout, fi, pad, depth))
        if fi < layout.innermost:
            nxt = frames[fi + 1]
            key = text[frame.key_start:frame.key_end] + ": " if frame.is_object else ""
            lines.append(pad + key + ("{" if nxt.is_object else "["))
            continue
        lines.extend(_cut_lines(text, frame, kind, token_start, stop, cut_child, cut_decision,
                                pad, depth, marker, cut_chars))
    if not frames:
        lines.extend(_cut_lines(text, None, kind, token_start, stop, None, cut_decision,
                                "", 0, marker, cut_chars))
    return "\n".join(lines)


def _cut_decision(text: str, alloc: _Allocator, kind: CutKind | None, token_start: int,
                  stop: int, cut_child: Child | None) -> int:
    """Step 1: the partial token or the value completed at the cut, in full if it fits."""
    if alloc.summary:
        return _HINT
    if kind in _PARTIAL_KINDS and token_start >= 0:
        return alloc.take(stop - token_start)
    if cut_child is not None:
        return alloc.take(
            value_cost(text, cut_child.start, cut_child.end, cut_child.kind, alloc.remaining))
    return _HINT


def _allocate_level(text: str, layout: _Layout, fi: int, alloc: _Allocator) -> None:
    """Step 3 on one level: its side branches from the cut backwards, while budget lasts."""
    children = layout.levels[fi]
    decisions = layout.decisions[fi]
    ci = layout.shown(fi)
    misses = 0
    values: dict[int, Any] = {}  # the decoded values of container items split off a RUN
    whole = [True]  # RUNs are still taken whole at their end (until one is not)
    while ci > 0 and not alloc.summary:
        ci -= 1
        if misses >= MAX_MISSES_PER_LEVEL:
            layout.defaults[fi] = _HINT  # the rest of this level is taken as not fitting
            break
        child = children[ci]
        if child.kind == RUN:
            ci, misses = _allocate_run(text, layout, fi, ci, alloc, values, whole, misses)
            decisions = layout.decisions[fi]
            continue
        kind = child.kind
        if kind is OBJECT or kind is ARRAY:
            cost = _side_cost(text, layout, fi, child, alloc.remaining, values)
        else:
            cost = child.end - child.start
        decision = alloc.take(cost)
        decisions[ci] = decision
        misses = misses + 1 if decision == _HINT else 0


def _allocate_run(text: str, layout: _Layout, fi: int, ci: int, alloc: _Allocator,
                  values: dict[int, Any], whole: list[bool], misses: int) -> tuple[int, int]:
    """Step 3 for the RUN child ``ci`` of level ``fi``: turned down whole, or its items taken
    from its end (laid out as printed: one by one, unread; else split off); returns the index
    the allocation goes on from (it steps back one first) and the level's misses."""
    child = layout.levels[fi][ci]
    turned, trailing = _turned_down(layout, fi, child, alloc.remaining, misses)
    if turned is not None:
        layout.decisions[fi][ci] = _HINT
        return ci, turned
    if trailing == 0:
        walked = _walk_laid_out(text, layout, fi, ci, alloc, values, misses)
        if walked is not None:
            whole[0] = False
            return walked
    known = split_known(text, child, trailing, values) if trailing >= RUN_MIN_ITEMS else None
    if known is not None:  # its last items cannot fit: one RUN, not read
        ci = _replace_run(layout, fi, ci, known) + len(known) - 1
        layout.decisions[fi][ci] = _HINT
        whole[0] = False
        return ci, misses + trailing
    ci, fitted = _split_level_run(text, layout, fi, ci, alloc, values, whole, trailing)
    return ci, 0 if fitted else misses


def _walk_laid_out(text: str, layout: _Layout, fi: int, ci: int, alloc: _Allocator,
                   values: dict[int, Any], misses: int) -> tuple[int, int] | None:
    """Take the container items of the RUN child ``ci`` of level ``fi`` one by one from its
    end (as step 3 takes single children) while they are laid out as printed, without reading
    them again: an item's start is the separator before it (found with ``str.rfind``), and
    ``verbatim_cost``'s layout pattern, matching one whole value from there to the item's end
    (known: the RUN's end, then the separator found before), shows it is the item; its
    decoded value (kept by the scan) gives its cost. Stops at an item that cannot fit by its
    lower bound or is laid out otherwise, when the level's misses are used up or the budget
    is spent: the items before stay one RUN. None when not one item was taken."""
    run = layout.levels[fi][ci]
    kept = layout.frames[fi].run_items
    items = kept.get(run.start) if kept is not None else None
    depth = fi + 1
    sep = ",\n" + _indent(depth)
    if items is None or layout.frames[fi].is_object or not text.startswith(sep, run.end):
        return None
    taken: list[tuple[Child, int]] = []
    end, i = run.end, run.size - 1
    while i >= 0 and not alloc.summary and misses < MAX_MISSES_PER_LEVEL:
        value = items[i]
        kind = OBJECT if type(value) is dict else ARRAY if type(value) is list else None
        if kind is None or not value:
            break
        at = text.rfind(sep + ("{" if kind is OBJECT else "["), run.start, end) if i else -1
        if at < 0 and i:
            break
        start, limit = at + len(sep) if i else run.start, alloc.remaining
        if end - start > limit and layout.floor_of(value, limit) > limit:
            break  # (a cost is at most the length)
        cost = verbatim_cost(text, start, end, value, depth)
        if cost < 0:
            break
        decision = alloc.take(cost)
        layout.verbatim.add(start)
        taken.append((Child(start, end, kind, len(value)), decision))
        misses = misses + 1 if decision == _HINT else 0
        end, i = at, i - 1
    if not taken:
        return None
    parts: list[Child] = []
    if i >= 0:
        head = Child(run.start, end, RUN, i + 1)
        parts = [head] if head.size >= RUN_MIN_ITEMS else expand_run(text, head, values)
    first = len(parts)
    parts.extend(child for child, _ in reversed(taken))
    _replace_run(layout, fi, ci, parts)
    decisions = layout.decisions[fi]
    for k, (_, decision) in enumerate(reversed(taken)):
        decisions[ci + first + k] = decision
    return ci + first, misses


_FLAT_MAX = 2048  # containers up to this many characters are tried as flat ones


def _container_cost(text: str, layout: _Layout, child: Child, limit: int, floor: int) -> int:
    """``value_cost`` of a container side branch; a small flat one is measured from its
    parts, which are kept for printing it."""
    start, end = child.start, child.end
    if floor <= limit and end - start <= _FLAT_MAX and text.find("{", start + 1, end) < 0 \
            and text.find("[", start + 1, end) < 0:
        parts = flat_parts(text, start, end)
        if parts is not None:
            layout.flat[child.start] = parts
            return flat_cost(parts)
    return value_cost(text, child.start, child.end, child.kind, limit, floor)


def _side_cost(text: str, layout: _Layout, fi: int, child: Child, limit: int,
               values: dict[int, Any]) -> int:
    """``value_cost`` of a container side branch of level ``fi``. When its decoded value is
    known (kept by the scan, or read when its RUN was split): turned down from a lower bound
    without measuring it, or, when its source is laid out as it is printed, measured from its
    length and structure (and printed as its source)."""
    value = values.get(child.start)
    if value is None:
        kept = layout.frames[fi].values
        value = kept.get(child.start) if kept is not None else None
        if value is None:
            return _container_cost(text, layout, child, limit, 0)
    if child.end - child.start > limit:  # (a cost is at most the length)
        floor = layout.floor_of(value, limit)
        if floor > limit:
            return floor
    cost = verbatim_cost(text, child.start, child.end, value, fi + 1)
    if cost >= 0:
        layout.verbatim.add(child.start)
        return cost
    return _container_cost(text, layout, child, limit, 0)


def _turned_down(layout: _Layout, fi: int, run: Child, limit: int,
                 misses: int) -> tuple[int | None, int]:
    """The misses of level ``fi`` after the RUN ``run`` when none of its items can fit, from
    the end back to the run's start or to the last miss measured: every one's cost is at least
    ``scalar_floor`` of its decoded item (kept by the scan) and that is above ``limit``. None
    when an item may fit (or its items were not kept): the run is split instead; with how many
    items at its end cannot fit (-1: not known)."""
    kept = layout.frames[fi].run_items
    items = kept.get(run.start) if kept is not None else None
    if items is None or len(items) < run.size:
        return None, -1
    if len(items) > run.size:  # the head of a kept RUN split before: its first items
        items = items[:run.size]
    for count, item in enumerate(reversed(items), 1):
        if layout.floor_of(item, limit) <= limit:
            return None, count - 1
        if misses + count >= MAX_MISSES_PER_LEVEL:
            return MAX_MISSES_PER_LEVEL, count
    return misses + len(items), len(items)


def _split_level_run(text: str, layout: _Layout, fi: int, ci: int, alloc: _Allocator,
                     values: dict[int, Any], whole: list[bool],
                     trailing: int = -1) -> tuple[int, bool]:
    """Replace the RUN child ``ci`` of level ``fi`` by what it stands for; returns the index the
    allocation goes on from (it steps back one first) and whether items were taken in full.

    Scalar items at its end that fit while the budget stays at or above ``SUMMARY_BELOW`` are
    taken at once (each would be taken in full, one by one, with the same result) and kept
    as one RUN shown in full (scalars, or objects of scalars); otherwise the items of (about)
    twice the budget left, at least 16 (or, when known, the ``trailing`` items that cannot fit
    and two more), are split off. ``whole``: whether to try the first (once a RUN was not taken
    whole, the budget left is about one item)."""
    children = layout.levels[fi]
    child = children[ci]
    kept = layout.frames[fi].run_items
    items = kept.get(child.start) if kept is not None else None
    tail = scalar_tail(text, child, alloc.remaining - SUMMARY_BELOW, items) if whole[0] else None
    if tail is not None:
        layout.literals[tail[0]] = tail[4]
    elif whole[0]:
        compact = compact_record_tail(text, child, items, alloc.remaining - SUMMARY_BELOW) \
            if items is not None else None
        if compact is not None:
            layout.compact.add(compact[0])
            tail = (*compact, [])
        else:
            records = record_tail(text, child, alloc.remaining - SUMMARY_BELOW)
            if records is not None:
                layout.records[records[0]] = records[4]
            tail = records  # type: ignore[assignment]
    whole[0] = tail is not None and tail[1] == child.size
    if tail is not None:
        start, count, cost, head_end, _ = tail
        parts = [Child(start, child.end, RUN, count)]
        head = Child(child.start, head_end, RUN, child.size - count)
        if head.size >= RUN_MIN_ITEMS:
            parts.insert(0, head)
        elif head.size:
            parts[:0] = expand_run(text, head)
        alloc.remaining -= cost  # stays at or above SUMMARY_BELOW
    else:
        each = (child.end - child.start) // max(child.size, 1) + 1
        # (a run reached again is split again: a few items at a time past the budget)
        least = (trailing + 2 if trailing >= 0 else 16) * each
        parts = split_run(text, child, max(2 * alloc.remaining + 256, least), values)
    _replace_run(layout, fi, ci, parts)
    if tail is not None:
        layout.decisions[fi][ci + len(parts) - 1] = _FULL
        return ci + len(parts) - 1, True
    return ci + len(parts), False


def _replace_run(layout: _Layout, fi: int, ci: int, parts: list[Child]) -> int:
    """Put ``parts`` in place of the RUN child ``ci`` of level ``fi``; returns ``ci``."""
    layout.levels[fi][ci:ci + 1] = parts
    shift = len(parts) - 1  # decisions made after the run move along
    layout.decisions[fi] = {k + shift if k > ci else k: v
                            for k, v in layout.decisions[fi].items()}
    return ci


def _side_branch_lines(text: str, layout: _Layout, fi: int, pad: str,
                       depth: int) -> list[str]:
    """The printed side branches of level ``fi``; in an array, a run of ``COLLAPSE_RUN`` or
    more items not shown in full is one line; in an object, such a run keeps its first and
    last ``OBJECT_KEEP`` members (their keys) and the ``COLLAPSE_RUN`` or more between them
    are one line."""
    frame, children = layout.frames[fi], layout.levels[fi]
    count = layout.shown(fi)
    default, chosen = layout.defaults[fi], layout.decisions[fi]
    gaps = _object_gaps(layout, fi, count) if frame.is_object else {}
    lines: list[str] = []
    ci = 0
    while ci < count:
        gap_end = gaps.get(ci)
        if gap_end is not None:
            lines.append(f"{pad}<{gap_end - ci:,} keys not shown>,")
            ci = gap_end
            continue
        decision = chosen.get(ci, default)
        if not frame.is_object and decision != _FULL:
            run, items = ci, 0
            while run < count and chosen.get(run, default) != _FULL:
                items += children[run].size if children[run].kind == RUN else 1
                run += 1
            if items >= COLLAPSE_RUN:
                lines.append(f"{pad}<{items:,} items not shown>,")
                ci = run
                continue
        child = children[ci]
        prefix = pad + (text[child.key_start:child.key_end] + ": " if frame.is_object else "")
        if decision == _FULL and child.kind == RUN:
            lines.extend(_full_run_lines(text, layout, child, pad, depth))
            ci += 1
            continue
        if decision == _FULL and child.start in layout.verbatim:
            # laid out as printed (joined: ``+`` after ``+`` copies the value once more each)
            lines.append("".join((prefix, text[child.start:child.end], ",")))
            ci += 1
            continue
        if decision == _FULL and child.kind != OBJECT and child.kind != ARRAY:
            lines.append(prefix + text[child.start:child.end] + ",")  # a scalar in full
            ci += 1
            continue
        parts = layout.flat.get(child.start) if decision == _FULL else None
        body = flat_lines(parts, text[child.start], depth) if parts is not None \
            else _render_child(text, child, decision, depth)
        body[0] = prefix + body[0]
        body[-1] += ","
        lines.extend(body)
        ci += 1
    return lines


def _object_gaps(layout: _Layout, fi: int, count: int) -> dict[int, int]:
    """The members of the object level ``fi`` left out of the printing: for each run of
    members not shown in full, those between its first and last ``OBJECT_KEEP`` when they
    are ``COLLAPSE_RUN`` or more (first index -> index after the last)."""
    default, chosen = layout.defaults[fi], layout.decisions[fi]
    gaps: dict[int, int] = {}
    ci = 0
    while ci < count:
        if chosen.get(ci, default) == _FULL:
            ci += 1
            continue
        run = ci
        while run < count and chosen.get(run, default) != _FULL:
            run += 1
        if run - ci - 2 * OBJECT_KEEP >= COLLAPSE_RUN:
            gaps[ci + OBJECT_KEEP] = run - OBJECT_KEEP
        ci = run
    return gaps


def _full_run_lines(text: str, layout: _Layout, run: Child, pad: str, depth: int) -> list[str]:
    """The lines of a RUN shown in full: records (a member per line) or scalar items (one per
    line)."""
    if run.start in layout.compact:
        return [_compact_records(text, run, pad, _indent(depth + 1))]
    records = layout.records.get(run.start)
    if records is not None:
        inner = ",\n" + _indent(depth + 1)
        return [pad + "{\n" + inner[2:] + inner.join(map(": ".join, members)) + "\n"
                + pad + "}," if members else pad + "{}," for members in records]
    literals = layout.literals.get(run.start)
    if isinstance(literals, SourceLiterals):
        return [pad + literals.joined(text, ",\n" + pad) + ","]
    if literals is None:
        literals = scalar_literals(text, run.start, run.end)
    return [pad + (",\n" + pad).join(literals) + ","]


def _compact_records(text: str, run: Child, pad: str, inner: str) -> str:
    """The lines of a RUN of records taken by ``compact_record_tail`` (no string holds ", "),
    a member per line, as ``_side_branch_lines`` prints records from their members."""
    # four copies of the run: its records less their outer braces, each ", " broken (that of
    # "}, {" too: no string holds ", ", and no raw line break, so "}" ",\n" inner "{" stands
    # only where "}, {" did), the record breaks, the lines joined
    span = text[run.start + 1:run.end - 1].replace(", ", ",\n" + inner)
    span = span.replace("},\n" + inner + "{", "\n" + pad + "},\n" + pad + "{\n" + inner)
    return "".join((pad, "{\n", inner, span, "\n", pad, "},"))


def _render_child(text: str, child: Child, decision: int, depth: int) -> list[str]:
    if decision == _FULL:
        if child.kind == OBJECT or child.kind == ARRAY:
            return pretty_lines(text, child.start, child.end, depth)
        return [text[child.start:child.end]]
    if decision == _HINT:
        return [_child_hint(text, child)]
    return [_child_structure(child)]


def _cut_lines(text: str, frame: Frame | None, kind: CutKind | None, token_start: int,
               stop: int, cut_child: Child | None, decision: int, pad: str, depth: int,
               marker: str, cut_chars: int) -> list[str]:
    key = ""
    if frame is not None and frame.is_object and frame.key_start >= 0 and kind in (
            CutKind.STRING, CutKind.STRING_ESCAPE, CutKind.NUMBER, CutKind.LITERAL,
            CutKind.AFTER_COLON):
        key = text[frame.key_start:frame.key_end] + ": "
    if kind is CutKind.AFTER_KEY and frame is not None:
        return [pad + text[frame.key_start:frame.key_end] + marker]
    if kind is CutKind.KEY and token_start >= 0:
        return [pad + text[token_start:stop] + marker]
    if kind in _PARTIAL_KINDS and token_start >= 0:
        if decision == _FULL:
            return [pad + key + text[token_start:stop] + marker]
        return [pad + key + _partial_hint(kind, text, token_start, cut_chars) + marker]
    if cut_child is not None and frame is not None:
        body = _render_child(text, cut_child, decision, depth)
        if frame.is_object:
            body[0] = text[cut_child.key_start:cut_child.key_end] + ": " + body[0]
        body[0] = pad + body[0]
        body[-1] += marker
        return body
    return [pad + key + marker]


def _partial_hint(kind: CutKind, text: str, token_start: int, cut_chars: int) -> str:
    if kind in (CutKind.STRING, CutKind.STRING_ESCAPE):
        if cut_chars < 0:
            cut_chars = decoded_chars(text, token_start + 1, string_keep_end(text, token_start))
        return type_hint(STRING, chars=cut_chars)
    if kind is CutKind.NUMBER:
        return type_hint(NUMBER)
    return type_hint(LITERAL, first=text[token_start:token_start + 1])
