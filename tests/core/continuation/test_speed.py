"""The scan does bounded Python work per sibling value, never per character (no timing)."""

from __future__ import annotations

import json
import sys
from types import FrameType
from typing import Any

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
