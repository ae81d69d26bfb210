"""The server's copy of a buffer follows the LSP's line rules (``convert.apply_changes``).

Only ``\\n``, ``\\r\\n`` and ``\\r`` end a line. U+2028, U+2029, U+0085, ``\\v``, ``\\f`` and
``\\x1c``-``\\x1e`` (where ``str.splitlines`` also splits) are characters of the line they are
on. Positions count code units of the negotiated encoding. Expected texts are written by
hand; the property test compares with a reference that counts units with Python's codecs.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from lsprotocol import types

from budgetlens.source import LineIndex, Position
from budgetlens_lsp.convert import (
    SCAN_CHUNK,
    UTF8,
    UTF16,
    UTF32,
    Converter,
    LspText,
    apply_change,
    apply_changes,
    encoding_name,
    lsp_line_starts,
)

NOT_BREAKS = "\u2028\u2029\u0085\x0b\x0c\x1c\x1d\x1e"


def partial(sl: int, sc: int, el: int, ec: int,
            text: str) -> types.TextDocumentContentChangePartial:
    return types.TextDocumentContentChangePartial(
        range=types.Range(start=types.Position(line=sl, character=sc),
                          end=types.Position(line=el, character=ec)),
        text=text)


def whole(text: str) -> types.TextDocumentContentChangeWholeDocument:
    return types.TextDocumentContentChangeWholeDocument(text=text)


def test_only_lf_crlf_and_cr_end_lines() -> None:
    one_line = "a" + "b".join(NOT_BREAKS) + "z"
    assert len(one_line.splitlines()) == len(NOT_BREAKS) + 1  # what str.splitlines would do
    assert lsp_line_starts(one_line) == [0]
    assert lsp_line_starts("a\r\nb\rc\nd") == [0, 3, 5, 7]
    assert lsp_line_starts("x\n") == [0, 2]  # a final break opens an empty last line
    assert lsp_line_starts("\r\r\n\n") == [0, 1, 3, 4]
    lines = LspText("a\r\nb\rc\nd")
    assert [lines.line_text(i) for i in range(lines.line_count)] == ["a", "b", "c", "d"]


def test_an_edit_after_u2028_u2029_u0085_lands_on_the_editors_line() -> None:
    text = 'title: "x\u2028y\u2029z\u0085w\x0b\x0c\x1c\x1d\x1e"\nmax_output_tokens: 100\nend: 1\n'
    # the editor's line 1 is "max_output_tokens: 100"; replace "100" (characters 19-22)
    new = apply_change(text, partial(1, 19, 1, 22, "250"))
    assert new == ('title: "x\u2028y\u2029z\u0085w\x0b\x0c\x1c\x1d\x1e"\n'
                   "max_output_tokens: 250\nend: 1\n")


def test_columns_on_a_line_with_the_odd_characters_count_them_as_one_unit() -> None:
    text = "\u2028\u2029\u0085abc\n"
    # UTF-16 and UTF-32: each of them is one unit; UTF-8: U+2028/U+2029 3 bytes, U+0085 2
    assert apply_change(text, partial(0, 3, 0, 4, "A")) == "\u2028\u2029\u0085Abc\n"
    assert apply_change(text, partial(0, 3, 0, 4, "A"), UTF32) == "\u2028\u2029\u0085Abc\n"
    assert apply_change(text, partial(0, 8, 0, 9, "A"), UTF8) == "\u2028\u2029\u0085Abc\n"


def test_crlf_lines() -> None:
    text = "ab\r\ncd\r\nef"
    assert apply_change(text, partial(1, 0, 1, 2, "XY")) == "ab\r\nXY\r\nef"
    # a character past the end of a line means the end of the line, before its \r\n
    assert apply_change(text, partial(0, 99, 0, 99, "!")) == "ab!\r\ncd\r\nef"
    # joining two lines removes the whole \r\n
    assert apply_change(text, partial(0, 2, 1, 0, "")) == "abcd\r\nef"
    lines = LspText(text)
    assert lines.position(3) == types.Position(line=0, character=2)  # between \r and \n
    assert lines.position(4) == types.Position(line=1, character=0)


def test_cr_only_lines() -> None:
    text = "a\rb\rc"
    assert apply_change(text, partial(2, 0, 2, 0, "X")) == "a\rb\rXc"
    assert apply_change(text, partial(1, 0, 1, 1, "B")) == "a\rB\rc"
    assert apply_change(text, partial(0, 1, 1, 0, "")) == "ab\rc"


def test_emoji_columns_in_each_encoding() -> None:
    text = "k: \U0001F600x\n"  # the emoji: 2 UTF-16 units, 4 UTF-8 bytes, 1 code point
    expected = "k: \U0001F600Yx\n"
    assert apply_change(text, partial(0, 5, 0, 5, "Y"), UTF16) == expected
    assert apply_change(text, partial(0, 7, 0, 7, "Y"), UTF8) == expected
    assert apply_change(text, partial(0, 4, 0, 4, "Y"), UTF32) == expected
    # a column between the two halves of the surrogate pair moves to the emoji's end
    assert apply_change(text, partial(0, 4, 0, 4, "Y"), UTF16) == expected
    lines = LspText(text, UTF16)
    assert lines.position(4) == types.Position(line=0, character=5)
    assert lines.offset(types.Position(line=0, character=6)) == 5


def test_past_the_last_line_is_the_end_of_the_text_and_whole_changes_replace() -> None:
    assert apply_change("a\nb", partial(7, 0, 7, 0, "!")) == "a\nb!"
    assert apply_change("a\nb\n", partial(2, 0, 2, 0, "c\n")) == "a\nb\nc\n"
    assert apply_change("old\u2028text", whole("new")) == "new"


def test_changes_apply_in_order_each_on_the_text_the_previous_one_left() -> None:
    text = "a\u2028b\nc\n"
    changes = [partial(0, 0, 0, 0, "1\n"), partial(2, 0, 2, 1, "C"), whole("x\ny"),
               partial(1, 1, 1, 1, "z")]
    assert apply_changes(text, changes[:2]) == "1\na\u2028b\nC\n"
    assert apply_changes(text, changes) == "x\nyz"


def test_core_and_lsp_lines_agree_when_a_lone_cr_ends_one() -> None:
    text = "a\rbb\r\u2028c\n\U0001F600d"
    conv = Converter(UTF16, lambda _: text)
    # a lone \r ends a line for the core too: 'c' is line 2, after U+2028 (not a line end)
    assert LineIndex(text).position(text.index("c")) == Position(2, 1)
    assert conv.position("f", Position(2, 1)) == types.Position(line=2, character=1)
    assert conv.core_position("f", types.Position(line=2, character=1)) == Position(2, 1)
    # after the \n; the emoji is two UTF-16 units
    assert conv.position("f", Position(3, 1)) == types.Position(line=3, character=2)
    assert conv.core_position("f", types.Position(line=3, character=2)) == Position(3, 1)


# --- a property: the same edit, applied by a reference that knows nothing of convert.py ---

ALPHABET = st.sampled_from(["a", "\n", "\r", "\r\n", "\u2028", "\u2029", "\u0085", "\x0b",
                            "\x0c", "\x1c", "\x1d", "\x1e", "\U0001F600", "参", " "])


def _reference_lines(text: str) -> list[tuple[int, str]]:
    """(offset, content) of each line: walk the text, breaking at \\n, \\r\\n and \\r only."""
    lines: list[tuple[int, str]] = []
    start = i = 0
    while i < len(text):
        if text[i] == "\r" and text[i + 1:i + 2] == "\n":
            lines.append((start, text[start:i]))
            i += 2
            start = i
        elif text[i] in "\r\n":
            lines.append((start, text[start:i]))
            i += 1
            start = i
        else:
            i += 1
    lines.append((start, text[start:]))
    return lines


def _reference_offset(text: str, line: int, units: int, encoding: str) -> int:
    lines = _reference_lines(text)
    if line >= len(lines):
        return len(text)
    start, content = lines[line]
    codec, width = {UTF8: ("utf-8", 1), UTF16: ("utf-16-le", 2), UTF32: ("utf-32-le", 4)}[
        encoding]
    for column in range(len(content) + 1):
        if len(content[:column].encode(codec)) // width >= units:
            return start + column
    return start + len(content)


@settings(max_examples=300, deadline=None)
@given(st.lists(ALPHABET, max_size=30).map("".join), st.sampled_from([UTF8, UTF16, UTF32]),
       st.data())
def test_apply_change_matches_a_reference_editor(text: str, encoding: str,
                                                 data: st.DataObject) -> None:
    n_lines = len(_reference_lines(text))
    sl = data.draw(st.integers(0, n_lines))
    el = data.draw(st.integers(sl, n_lines))
    sc = data.draw(st.integers(0, 12))
    ec = data.draw(st.integers(0, 12))
    insert = data.draw(st.lists(ALPHABET, max_size=4).map("".join))
    start = _reference_offset(text, sl, sc, encoding)
    end = _reference_offset(text, el, ec, encoding)
    if end < start:
        start, end = end, start
    expected = text[:start] + insert + text[end:]
    assert apply_change(text, partial(sl, sc, el, ec, insert), encoding) == expected
    # and the position of every offset maps back to it (offsets inside \r\n excepted)
    lines = LspText(text, encoding)
    for offset in range(len(text) + 1):
        if 0 < offset < len(text) and text[offset - 1:offset + 1] == "\r\n":
            continue
        if 0 < offset < len(text) and 0xD800 <= ord(text[offset]) <= 0xDFFF:
            continue
        assert lines.offset(lines.position(offset)) == offset


def test_large_buffers_with_breaks_across_the_scan_chunks() -> None:
    """Texts of several scanning chunks, with a \r\n pair, a lone \r or a \n at each
    chunk edge: an insert on every line lands where the reference puts it."""
    import random

    rng = random.Random(7)
    pieces = ["a", "bc", "\u2028", "\U0001F600", "\n", "\r", "\r\n", "xyz ", "long " * 9]
    for edge_break in ("\r\n", "\r", "\n"):
        body = ""
        while len(body) < 3 * SCAN_CHUNK + 100:
            body += rng.choice(pieces)
        for k in (1, 2, 3):
            cut = k * SCAN_CHUNK - 1  # the break straddles (or ends right at) the edge
            body = body[:cut] + edge_break + body[cut + len(edge_break):]
        starts = [s for s, _ in _reference_lines(body)]
        for line in range(len(starts) + 2):
            new = apply_change(body, partial(line, 0, line, 0, "@"), UTF16)
            at = starts[line] if line < len(starts) else len(body)
            assert new == body[:at] + "@" + body[at:], (edge_break, line)


def test_the_negotiated_encoding_may_arrive_as_an_enum_member() -> None:
    # pygls hands over PositionEncodingKind members; str() of one is not its value
    assert str(types.PositionEncodingKind.Utf16) != "utf-16"
    text = "k: \U0001F600x\n"
    assert apply_change(text, partial(0, 5, 0, 5, "Y"), types.PositionEncodingKind.Utf16) \
        == "k: \U0001F600Yx\n"
    assert apply_change(text, partial(0, 7, 0, 7, "Y"), types.PositionEncodingKind.Utf8) \
        == "k: \U0001F600Yx\n"
    assert encoding_name(types.PositionEncodingKind.Utf32) == "utf-32"
    assert encoding_name(None) == encoding_name("latin-1") == "utf-16"
