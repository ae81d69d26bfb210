"""Verification of planned YAML edits before they leave the core.

``verify_file_edits`` applies the edits of one file in memory, parses the result with the
positioned YAML parser and compares the loaded data with the original's: exactly the planned
values may change (and the planned keys be added), nothing else. A replacement must cover a
scalar's own characters only (never its anchor, tag, quotes or a comment), so everything
else of the file stays byte for byte. The answer is ``None`` when the edits are right, else
a one-line reason; the caller then drops that file's edits and says why.
"""

from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from budgetlens.source import TextEdit, apply_text_edits
from budgetlens.yamldoc.parse import YamlDocument, YamlPath, parse_yaml


@dataclass(frozen=True)
class Planned:
    """A value the edits set: ``value`` at ``path`` of the loaded data (added if absent)."""

    path: YamlPath
    value: Any


class OverlappingEdits(ValueError):
    """Two edits of one file overlap: a plan that must never leave the core."""


def _offsets(doc: YamlDocument, edit: TextEdit) -> tuple[int, int]:
    return doc.index.offset(edit.range.start), doc.index.offset(edit.range.end)


def assert_disjoint(edits: Sequence[TextEdit]) -> None:
    """Raise ``OverlappingEdits`` when two edits of one file overlap (an insertion at the
    boundary of another edit does not overlap it)."""
    by_file: dict[str, list[TextEdit]] = {}
    for e in edits:
        by_file.setdefault(e.file, []).append(e)
    for file, group in by_file.items():
        ranges = sorted((e.range.start, e.range.end) for e in group)
        for (_, prev_end), (start, _end) in itertools.pairwise(ranges):
            if start < prev_end:
                raise OverlappingEdits(f"{file}: overlapping text edits at line"
                                       f" {start.line + 1}")


def path_text(path: YamlPath) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


def first_difference(a: Any, b: Any, path: YamlPath = ()) -> YamlPath | None:
    """The first path where ``a`` and ``b`` differ (``None`` when they are the same)."""
    if type(a) is not type(b):
        return path
    if isinstance(a, dict):
        for k in [*a, *[k for k in b if k not in a]]:
            if k not in a or k not in b:
                return (*path, k)
            sub = first_difference(a[k], b[k], (*path, k))
            if sub is not None:
                return sub
        return None
    if isinstance(a, list):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            sub = first_difference(x, y, (*path, i))
            if sub is not None:
                return sub
        return None if len(a) == len(b) else (*path, min(len(a), len(b)))
    return None if _same(a, b) else path


def _set(data: Any, path: YamlPath, value: Any) -> bool:
    if not path:
        return False
    node = data
    for part in path[:-1]:
        if isinstance(part, int):
            if not isinstance(node, list) or not 0 <= part < len(node):
                return False
            node = node[part]
        else:
            if not isinstance(node, dict):
                return False
            if node.get(part) is None:  # an empty value ("settings:") becomes a mapping
                node[part] = {}
            node = node[part]
    last = path[-1]
    if isinstance(last, int):
        if not isinstance(node, list) or not 0 <= last < len(node):
            return False
        node[last] = copy.deepcopy(value)
    elif isinstance(node, dict):
        node[last] = copy.deepcopy(value)
    else:
        return False
    return True


def expected_data(value: Any, planned: Sequence[Planned]) -> Any:
    """The original data with the planned values set (``None`` if a path cannot be set)."""
    data = copy.deepcopy(value)
    for p in planned:
        if not _set(data, p.path, p.value):
            return None
    return data


def _scalar_ranges(doc: YamlDocument) -> set[tuple[int, int]]:
    out: set[tuple[int, int]] = set()
    for tok in doc.tokens.tokens:
        if tok.kind != "Scalar":
            continue
        if tok.style in ("'", '"'):
            out.add((tok.start + 1, tok.end - 1))
        elif tok.style is None:
            out.add((tok.start, tok.end))
    return out


def _edit_place_problem(doc: YamlDocument, edits: Sequence[TextEdit]) -> str | None:
    """Why an edit is not where an edit may go: a replacement covers exactly one scalar's
    characters (a quoted one's inside), an insertion lies between tokens."""
    scalars = _scalar_ranges(doc)
    tokens = doc.tokens.tokens
    for e in edits:
        start, end = _offsets(doc, e)
        if start != end and (start, end) not in scalars:
            return "an edit would change more than a value's own characters"
        if start == end and any(t.start < start < t.end for t in tokens):
            return "an insertion would land inside a YAML token"
    return None


def verify_file_edits(doc: YamlDocument, edits: Sequence[TextEdit],
                      planned: Sequence[Planned]) -> str | None:
    """Why the edits of one file are not exactly the planned change (``None``: they are).

    ``doc`` is the file as the plan read it. Checked: the edits do not overlap; each
    replacement covers one plain scalar's characters or a quoted scalar's inside; each
    insertion lies between tokens; the edited text parses, adds no duplicate-key warning,
    and its data equals the original's with exactly the planned values set.
    """
    if not edits:
        return None
    try:
        assert_disjoint(edits)
    except OverlappingEdits:
        return "two edits of the file would overlap"
    why = _edit_place_problem(doc, edits)
    if why is not None:
        return why
    try:
        new_text = apply_text_edits(doc.text, list(edits))
    except ValueError:
        return "two edits of the file would overlap"
    new_doc, problems = parse_yaml(new_text)
    if new_doc is None:
        why = problems[0].message if problems else "it cannot be read"
        return f"the edited file would not parse ({why})"
    _, old_problems = parse_yaml(doc.text)
    if len(problems) > len(old_problems):
        return f"the edited file would have a new problem ({problems[-1].message})"
    want = expected_data(doc.value, planned)
    if want is None:
        return "a planned value has no place in the file's data"
    if not _same(want, new_doc.value):
        where = first_difference(want, new_doc.value)
        return (f"the edit would also change {path_text(where) or 'the whole document'}"
                if where is not None else "the edited data differs from the plan")
    return None
