"""Positions in code points, line ends, and text edits applied against the original text."""

from __future__ import annotations

import pytest

from budgetlens.source import LineIndex, Position, Range, TextEdit, apply_text_edits


def test_positions_count_code_points_not_bytes_or_utf16_units() -> None:
    text = "a: 予算🚀x\nb: 1\n"
    index = LineIndex(text)
    # "a: " is 3, 予 and 算 are one code point each, 🚀 is one code point (two UTF-16 units).
    assert index.position(text.index("x")) == Position(0, 6)
    assert index.position(text.index("b")) == Position(1, 0)
    assert index.offset(Position(0, 6)) == text.index("x")


def test_crlf_belongs_to_the_line_and_is_not_part_of_its_text() -> None:
    text = "one\r\ntwo\r\n"
    index = LineIndex(text)
    assert index.line_text(0) == "one"
    assert index.line_text(1) == "two"
    assert index.line_count == 3
    # A character past the end of a line clamps to the line end, before the \r.
    assert index.offset(Position(0, 99)) == 3
    assert index.offset(Position(7, 0)) == len(text)


def test_edits_refer_to_the_original_text_and_keep_everything_else() -> None:
    text = "x: 100  # keep\r\ny: 2000\n"
    edits = [
        TextEdit("f", Range.at(1, 3, 1, 7), "1500"),
        TextEdit("f", Range.at(0, 3, 0, 6), "90"),
    ]
    assert apply_text_edits(text, edits) == "x: 90  # keep\r\ny: 1500\n"


def test_insertion_at_an_empty_range() -> None:
    assert apply_text_edits("ab", [TextEdit("f", Range.at(0, 1), "Z")]) == "aZb"


def test_overlapping_edits_are_refused() -> None:
    edits = [TextEdit("f", Range.at(0, 0, 0, 3), "a"), TextEdit("f", Range.at(0, 2, 0, 4), "b")]
    with pytest.raises(ValueError, match="overlapping"):
        apply_text_edits("abcdef", edits)
