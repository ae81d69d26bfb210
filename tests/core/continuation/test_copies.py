"""The closed JSON of a long cut text is made without asking the allocator for more memory than
it holds (no test times anything: tracemalloc counts the bytes asked for).

A string built with room to spare (``str.format`` and ``%`` grow their buffer by a quarter and
shrink it at the end) asks for more than the largest copy freed before it, so the allocator
maps fresh pages for it on every call."""

from __future__ import annotations

import json
import sys
import tracemalloc

import pytest

from budgetlens.continuation.cut import close, scan


def _document(items: int) -> str:
    return json.dumps({"items": [{"id": i, "name": f"item {i}", "tags": ["a", "b"]}
                                 for i in range(items)]}, indent=2)


# cut inside a key, after a key, after its colon, after a comma: the closed JSON stops before
# the cut (at the end of the last complete value)
@pytest.mark.parametrize("cut", [3, 6, 8, -2])
def test_the_closed_json_of_a_long_text_is_made_in_memory_its_own_size(cut: int) -> None:
    if sys.gettrace() is not None:
        pytest.skip("a traced interpreter does not grow a string in place")
    doc = _document(4000)
    text = doc[:doc.index('"name"', len(doc) * 3 // 4) + cut]
    result = scan(text)
    assert result.kind is not None and result.start == 0
    for _ in range(64):  # (compiled patterns; the interpreter specializes ``+=`` on strings)
        close(result)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        closed = close(result)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    json.loads(closed)
    assert len(closed) < len(text)  # the text after its last complete value is dropped
    assert len(text) > 100_000
    assert peak < len(closed) + 4096
