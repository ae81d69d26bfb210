"""Unit tests of the position-encoding conversion (code points <-> LSP code units)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from budgetlens_lsp.convert import UTF8, UTF16, UTF32, from_lsp_character, to_lsp_character

LINE = "ab参考🏔️x"  # a, b, 2 CJK (3 UTF-8 bytes each), U+1F3D4 (4 bytes / 2 units), U+FE0F


def test_columns_by_hand() -> None:
    # code-point columns:      0  1  2  3  4  5  6  7
    assert [to_lsp_character(LINE, i, UTF16) for i in range(8)] == [0, 1, 2, 3, 4, 6, 7, 8]
    assert [to_lsp_character(LINE, i, UTF8) for i in range(8)] == [0, 1, 2, 5, 8, 12, 15, 16]
    assert [to_lsp_character(LINE, i, UTF32) for i in range(8)] == list(range(8))


def test_a_column_inside_a_character_moves_to_its_end_and_past_the_end_clamps() -> None:
    assert from_lsp_character(LINE, 5, UTF16) == 5  # the low surrogate of the emoji
    assert from_lsp_character(LINE, 3, UTF8) == 3  # inside 参
    assert from_lsp_character(LINE, 999, UTF16) == len(LINE)
    assert from_lsp_character(LINE, -1, UTF8) == 0


@given(st.text(), st.sampled_from([UTF8, UTF16, UTF32]), st.data())
def test_round_trip(line: str, encoding: str, data: st.DataObject) -> None:
    line = line.replace("\n", "").replace("\r", "")
    col = data.draw(st.integers(min_value=0, max_value=len(line)))
    assert from_lsp_character(line, to_lsp_character(line, col, encoding), encoding) == col
