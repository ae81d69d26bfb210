"""``count_lines`` (the cut's line) is ``str.count`` of the line breaks, whatever the lines."""

from __future__ import annotations

import random

import pytest

from budgetlens.continuation.cut import count_lines, position_at


@pytest.mark.parametrize("seed", range(20))
def test_count_lines_counts_every_line_break_before_the_end(seed: int) -> None:
    rng = random.Random(seed)
    pieces = ["\n", "\r\n", "x" * rng.randint(0, 5000), "数据😀", "ab", '"a\\nb"']
    text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 120)))
    for end in {0, len(text), *(rng.randint(0, len(text)) for _ in range(20))}:
        assert count_lines(text, end) == text.count("\n", 0, end)


def test_a_long_last_line_and_many_short_ones_give_the_same_position() -> None:
    sparse = "{\n" + '  "text": "' + "word " * 20000
    dense = "[\n" + "  1,\n" * 20000 + "  2"
    for text in (sparse, dense):
        at = position_at(text, len(text))
        assert at.line == text.count("\n")
        assert at.character == len(text) - text.rfind("\n") - 1
