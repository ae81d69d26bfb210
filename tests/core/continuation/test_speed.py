"""The scan does bounded Python work per sibling value, never per character (no timing)."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path
from types import FrameType
from typing import Any

import budgetlens.continuation
from budgetlens import get_contexts


def _document(sections: int) -> str:
    return json.dumps({"document": {"metadata": {"title": "T"}, "sections": [
        {"id": i, "title": f"Section {i}", "content": "lorem ipsum dolor sit amet " * 8,
         "tags": ["a", "b"], "score": i * 1.5, "draft": i % 2 == 0}
        for i in range(sections)]}}, indent=2)


def _python_events(text: str) -> int:
    """Calls into Python and C functions made while get_contexts runs on ``text``."""
    events = 0

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal events
        events += 1

    sys.setprofile(profile)
    try:
        get_contexts(text)
    finally:
        sys.setprofile(None)
    return events


def test_work_is_per_sibling_not_per_character() -> None:
    small = _document(300)
    large = _document(3000)
    cut_small, cut_large = small[:-len(small) // 10], large[:-len(large) // 10]
    events_small, events_large = _python_events(cut_small), _python_events(cut_large)
    # a per-character loop would make at least one call per character
    assert events_large < len(cut_large) / 20
    # linear: ten times the siblings, about ten times the calls (not a hundred)
    assert events_large < 14 * events_small


def test_complete_document_is_one_c_scan() -> None:
    doc = _document(3000)
    assert _python_events(doc) < 200


def test_no_method_is_called_on_a_name_imported_from_the_project() -> None:
    # CPython 3.11 compiles ``name.method()`` on a name bound by ``from budgetlens... import``
    # as an attribute load that makes a bound method on every call; on any other global as
    # LOAD_METHOD, which makes none. The modules of the package bind such objects (compiled
    # patterns, dicts) by assignment, so that moving one between modules costs nothing per call.
    package = Path(budgetlens.continuation.__file__).parent
    found = []
    for path in sorted(package.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {alias.asname or alias.name for node in tree.body
                    if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                        "budgetlens.") and node.module != "budgetlens.continuation"
                    for alias in node.names}
        found += [f"{path.name}:{node.lineno}: {ast.unparse(node.func)}()"
                  for node in ast.walk(tree)
                  if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                  and isinstance(node.func.value, ast.Name) and node.func.value.id in imported]
    assert found == []
