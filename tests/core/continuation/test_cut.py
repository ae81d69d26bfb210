"""Cut detection and the closing rules, one case per cut kind (expectations written by hand)."""

from __future__ import annotations

import json

import pytest

from budgetlens import get_contexts
from budgetlens.continuation.cut import position_at
from budgetlens.continuation.syntax import CutKind
from budgetlens.serialize import to_jsonable
from budgetlens.source import LineIndex

# (text, kind, path, complete_part) -- see the closing-rules table in docs/json-continuation.md
CASES = [
    # inside a string: closed and kept
    ('{"a": "xy', CutKind.STRING, ("a",), '{"a": "xy"}'),
    ('["xy', CutKind.STRING, (0,), '["xy"]'),
    # right after a backslash, inside \uXXXX, inside a surrogate pair: the escape is dropped
    ('{"a": "xy\\', CutKind.STRING_ESCAPE, ("a",), '{"a": "xy"}'),
    ('{"a": "xy\\u00', CutKind.STRING_ESCAPE, ("a",), '{"a": "xy"}'),
    ('{"a": "xy\\u', CutKind.STRING_ESCAPE, ("a",), '{"a": "xy"}'),
    ('{"a": "x\\ud83d', CutKind.STRING_ESCAPE, ("a",), '{"a": "x"}'),
    ('{"a": "x\\ud83d\\', CutKind.STRING_ESCAPE, ("a",), '{"a": "x"}'),
    ('{"a": "x\\ud83d\\udc', CutKind.STRING_ESCAPE, ("a",), '{"a": "x"}'),
    # an escaped backslash before the cut is a complete escape: kept
    ('{"a": "x\\\\', CutKind.STRING, ("a",), '{"a": "x\\\\"}'),
    # inside a key, after a key, after a colon: the member is dropped
    ('{"a": 1, "ti', CutKind.KEY, (), '{"a": 1}'),
    ('{"ti', CutKind.KEY, (), "{}"),
    ('{"a": 1, "title"', CutKind.AFTER_KEY, ("title",), '{"a": 1}'),
    ('{"a": 1, "title":', CutKind.AFTER_COLON, ("title",), '{"a": 1}'),
    ('{"a": 1, "title": ', CutKind.AFTER_COLON, ("title",), '{"a": 1}'),
    # after a comma, object and array: the comma is dropped
    ('{"a": 1,', CutKind.AFTER_COMMA, (), '{"a": 1}'),
    ("[1, 2,", CutKind.AFTER_COMMA, (), "[1, 2]"),
    # inside a number: kept only when its prefix is a valid number
    ("[0, -", CutKind.NUMBER, (1,), "[0]"),
    ("[0, 1.", CutKind.NUMBER, (1,), "[0]"),
    ("[0, 1e", CutKind.NUMBER, (1,), "[0]"),
    ("[0, 1e+", CutKind.NUMBER, (1,), "[0]"),
    ("[0, 1.5E", CutKind.NUMBER, (1,), "[0]"),
    ("[0, 12", CutKind.NUMBER, (1,), "[0, 12]"),
    ("[0, -0.5", CutKind.NUMBER, (1,), "[0, -0.5]"),
    ('{"n": 1e+5', CutKind.NUMBER, ("n",), '{"n": 1e+5}'),
    # inside true / false / null: the first letter decides the value, completed
    ("[1, t", CutKind.LITERAL, (1,), "[1, true]"),
    ("[1, tru", CutKind.LITERAL, (1,), "[1, true]"),
    ('{"a": f', CutKind.LITERAL, ("a",), '{"a": false}'),
    ('{"a": fals', CutKind.LITERAL, ("a",), '{"a": false}'),
    ('{"a": n', CutKind.LITERAL, ("a",), '{"a": null}'),
    ('{"a": nul', CutKind.LITERAL, ("a",), '{"a": null}'),
    # right after an opening brace or bracket
    ("{", CutKind.AFTER_OPEN, (), "{}"),
    ("[", CutKind.AFTER_OPEN, (), "[]"),
    ('{"a": [', CutKind.AFTER_OPEN, ("a",), '{"a": []}'),
    ('{"a": {', CutKind.AFTER_OPEN, ("a",), '{"a": {}}'),
    # after a complete value, before a comma or closer
    ("[1, true", CutKind.AFTER_VALUE, (1,), "[1, true]"),
    ('{"a": [1, 2]', CutKind.AFTER_VALUE, ("a",), '{"a": [1, 2]}'),
    ('{"a": "x"', CutKind.AFTER_VALUE, ("a",), '{"a": "x"}'),
    # trailing whitespace: the kind is what precedes it; the whitespace is not kept
    ('{"a": 1 ', CutKind.AFTER_VALUE, ("a",), '{"a": 1}'),
    ('{"a": 1,\n  ', CutKind.AFTER_COMMA, (), '{"a": 1}'),
    ("[\n  ", CutKind.AFTER_OPEN, (), "[]"),
    ('{"a": "x"\n\n', CutKind.AFTER_VALUE, ("a",), '{"a": "x"}'),
    # top-level scalars
    ('"abc', CutKind.STRING, (), '"abc"'),
    ("tr", CutKind.LITERAL, (), "true"),
    ("fa", CutKind.LITERAL, (), "false"),
    ("-", CutKind.NUMBER, (), "null"),
    # nested: the path runs through keys and indices
    ('{"a": {"b": [1, {"c": "d', CutKind.STRING, ("a", "b", 1, "c"),
     '{"a": {"b": [1, {"c": "d"}]}}'),
    ('{"a": {"b": [1, {"c":', CutKind.AFTER_COLON, ("a", "b", 1, "c"), '{"a": {"b": [1, {}]}}'),
]


@pytest.mark.parametrize(("text", "kind", "path", "closed"), CASES)
def test_cut_kind_path_and_closing(text: str, kind: CutKind, path: tuple[object, ...],
                                   closed: str) -> None:
    ctx = get_contexts(text)
    assert ctx.cut is not None
    assert ctx.cut.kind is kind
    assert ctx.cut.path == path
    assert ctx.complete_part == closed
    assert ctx.json_parsing_success is True
    json.loads(ctx.complete_part)
    assert ctx.hierarchy_context == text
    assert ctx.overlap_context == text[-48:]
    assert ctx.cut.offset == len(text)


def test_complete_json_has_no_cut_and_empty_overlap() -> None:
    ctx = get_contexts('{"a": [1, 2]}\n')
    assert ctx.cut is None
    assert ctx.overlap_context == ""
    assert ctx.complete_part == '{"a": [1, 2]}'
    assert ctx.json_parsing_success and ctx.is_complete
    assert ctx.description == "complete JSON"


def test_top_level_number_at_the_end_is_complete() -> None:
    ctx = get_contexts("-12.5e3")
    assert ctx.is_complete
    assert ctx.complete_part == "-12.5e3"


def test_every_value_completed_before_the_cut_is_kept_exactly() -> None:
    text = '{"x": 1.50, "y": "\\u00e9\\n", "z": [true, null, {"k": -0.0e1}], "w": "cu'
    ctx = get_contexts(text)
    assert ctx.complete_part == ('{"x": 1.50, "y": "\\u00e9\\n", "z": [true, null, '
                                 '{"k": -0.0e1}], "w": "cu"}')


def test_cut_line_and_character_are_code_points() -> None:
    text = '{\n  "emoji": "😀😀 数据'
    ctx = get_contexts(text)
    assert ctx.cut is not None
    # line 1 is '  "emoji": "😀😀 数据': 2 + 8 + 1 + 1 + 2 + 1 + 2 = 17 code points
    assert (ctx.cut.line, ctx.cut.character) == (1, 17)
    assert ctx.complete_part == '{\n  "emoji": "😀😀 数据"}'


def test_position_at_matches_line_index() -> None:
    text = 'a\r\nbc\n\n😀d\n'
    index = LineIndex(text)
    for offset in range(len(text) + 1):
        assert position_at(text, offset) == index.position(offset)


def test_multibyte_character_right_at_the_cut() -> None:
    ctx = get_contexts('["€', budget=500)
    assert ctx.complete_part == '["€"]'
    assert ctx.overlap_context == '["€'
    assert '"€<<<CUT>>>' in ctx.hierarchy_context_for_prompt


def test_raw_lone_high_surrogate_at_the_cut_is_dropped() -> None:
    # a UTF-16 cut can leave half of a surrogate pair at the end of the text
    ctx = get_contexts('["ab\ud83d')
    assert ctx.complete_part == '["ab"]'


def test_deep_nesting_does_not_recurse() -> None:
    depth = 10_000
    text = '{"a": ' * depth + "[" * depth + '"x'
    ctx = get_contexts(text, budget=100)
    assert ctx.cut is not None
    assert ctx.cut.kind is CutKind.STRING
    assert ctx.cut.path == ("a",) * depth + (0,) * depth
    assert ctx.complete_part == text + '"' + "]" * depth + "}" * depth
    assert ctx.hierarchy_context_for_prompt.endswith('"x<<<CUT>>>')


def test_deep_complete_document() -> None:
    depth = 10_000
    ctx = get_contexts("[" * depth + "]" * depth)
    assert ctx.is_complete
    ctx = get_contexts("[" * depth + "]" * (depth - 1))
    assert ctx.cut is not None and ctx.cut.kind is CutKind.AFTER_VALUE
    assert ctx.complete_part == "[" * depth + "]" * depth


def test_code_fence_before_the_json_is_skipped_and_reported() -> None:
    text = '```json\n{"a": [1, 2'
    ctx = get_contexts(text)
    assert ctx.skipped_prefix == "```json\n"
    assert ctx.json_start == 8
    assert ctx.complete_part == '{"a": [1, 2]}'
    assert ctx.hierarchy_context == '{"a": [1, 2'
    assert ctx.cut is not None and ctx.cut.offset == len(text)
    assert (ctx.cut.line, ctx.cut.character) == (1, 11)


def test_prose_before_the_json_is_skipped_and_reported() -> None:
    text = 'Sure! Here is the JSON you asked for:\n\n{"ok": tr'
    ctx = get_contexts(text)
    assert ctx.skipped_prefix == "Sure! Here is the JSON you asked for:\n\n"
    assert ctx.complete_part == '{"ok": true}'
    assert ctx.cut is not None and ctx.cut.kind is CutKind.LITERAL


def test_prose_that_starts_like_a_literal_is_still_prose() -> None:
    ctx = get_contexts('the answer: [1, 2]')
    assert ctx.is_complete
    assert ctx.skipped_prefix == "the answer: "
    assert ctx.complete_part == "[1, 2]"


def test_fenced_complete_json_reports_the_closing_fence_as_suffix() -> None:
    ctx = get_contexts('```json\n{"a": 1}\n```\n')
    assert ctx.is_complete
    assert ctx.complete_part == '{"a": 1}'
    assert ctx.skipped_suffix == "\n```\n"
    assert "text after it skipped" in ctx.description


@pytest.mark.parametrize(("text", "message"), [
    ("", "empty text: no JSON value"),
    ("   \n", "empty text: no JSON value"),
    ("I cannot help with that.", "no JSON value found"),
])
def test_no_json_at_all(text: str, message: str) -> None:
    ctx = get_contexts(text)
    assert ctx.json_parsing_success is False
    assert ctx.error is not None and ctx.error.message == message
    assert ctx.complete_part == ""
    assert ctx.cut is None


@pytest.mark.parametrize(("text", "offset", "message", "closed"), [
    ("[1,,2]", 3, "expected a value, found ','", "[1]"),
    ('{"a" 1}', 5, "expected ':' after a key, found '1'", "{}"),
    ("[01]", 1, "invalid number", "[]"),
    ('{"a": [1, 2}', 11, "expected ',' or ']', found '}'", '{"a": [1, 2]}'),
    ('["a\tb"]', 3, "control character U+0009 in a string (escape it)", "[]"),
    ('["a\\x"]', 3, "invalid escape sequence in a string", "[]"),
    ("[NaN]", 1, "expected a value, found 'N'", "[]"),
])
def test_invalid_json_says_what_and_where(text: str, offset: int, message: str,
                                          closed: str) -> None:
    ctx = get_contexts(text)
    assert ctx.json_parsing_success is False
    assert ctx.error is not None
    assert (ctx.error.offset, ctx.error.message) == (offset, message)
    assert ctx.complete_part == closed  # the valid part before the error, closed
    assert ctx.description.startswith("invalid JSON at line 1, character")


def test_description_and_path_text() -> None:
    ctx = get_contexts('{"document": {"sections": [{}, {"content": "abc')
    assert ctx.cut is not None
    assert ctx.cut.path_text == "document.sections[1].content"
    assert ctx.cut.description == "cut inside a string at document.sections[1].content"
    ctx = get_contexts('{"a b": ["x')
    assert ctx.cut is not None and ctx.cut.path_text == '["a b"][0]'
    ctx = get_contexts("[")
    assert ctx.cut is not None and ctx.cut.path_text == "$"
    assert ctx.cut.description == "cut right after an opening brace or bracket at the top level"


def test_negative_budget_is_refused() -> None:
    with pytest.raises(ValueError, match="budget must be >= 0"):
        get_contexts("[", budget=-1)


def test_to_dict_has_the_documented_keys() -> None:
    data = to_jsonable(get_contexts('{"a": "b'))
    assert {"overlap_context", "hierarchy_context", "hierarchy_context_for_prompt",
            "complete_part", "json_parsing_success", "cut", "budget"} <= set(data)
    assert {"offset", "line", "character", "path", "kind", "path_text",
            "description"} <= set(data["cut"])
    json.dumps(data)


def test_a_quoted_sentence_before_the_json_is_prose() -> None:
    ctx = get_contexts('"Sure!" Here it is: {"a": 1')
    assert ctx.skipped_prefix == '"Sure!" Here it is: '
    assert ctx.complete_part == '{"a": 1}'
    assert ctx.cut is not None and ctx.cut.kind is CutKind.NUMBER


def test_a_scalar_followed_by_prose_without_brackets_is_kept() -> None:
    ctx = get_contexts("42 is the answer")
    assert ctx.is_complete and ctx.complete_part == "42"
    assert ctx.skipped_suffix == " is the answer"
    assert ctx.description == "complete JSON (text after it skipped)"


# Whitespace at the very end (an editor's final newline, a client's "\r\n") is not part of the
# reply: (text, kind, path, complete_part, cut offset) -- written by hand.
TRAILING = [
    ('{"a": "xy\n', CutKind.STRING, ("a",), '{"a": "xy"}', 9),
    ('{"a": "xy\r\n', CutKind.STRING, ("a",), '{"a": "xy"}', 9),
    ('{"a": "xy\n\n  \t', CutKind.STRING, ("a",), '{"a": "xy"}', 9),
    # spaces are string content; the newline after them is not
    ('{"a": "x  \n', CutKind.STRING, ("a",), '{"a": "x  "}', 10),
    ('{"a": "x\\\n', CutKind.STRING_ESCAPE, ("a",), '{"a": "x"}', 9),
    ('["ab", "c\n', CutKind.STRING, (1,), '["ab", "c"]', 9),
    ('"abc\n', CutKind.STRING, (), '"abc"', 4),
    ("[1, tr\n", CutKind.LITERAL, (1,), "[1, true]", 6),
    ("[1, f \n", CutKind.LITERAL, (1,), "[1, false]", 5),
    ("[0, -\n", CutKind.NUMBER, (1,), "[0]", 5),
    ('{"a": 1, "ti\n', CutKind.KEY, (), '{"a": 1}', 12),
]


@pytest.mark.parametrize(("text", "kind", "path", "closed", "offset"), TRAILING)
def test_trailing_whitespace_after_a_cut_is_not_part_of_the_reply(
        text: str, kind: CutKind, path: tuple[object, ...], closed: str, offset: int) -> None:
    ctx = get_contexts(text)
    assert ctx.json_parsing_success is True and ctx.error is None
    assert ctx.cut is not None
    assert (ctx.cut.kind, ctx.cut.path, ctx.complete_part) == (kind, path, closed)
    # the cut is where the reply stops, an offset into the text as given
    assert ctx.cut.offset == offset
    assert (ctx.cut.line, ctx.cut.character) == (0, offset)
    assert ctx.hierarchy_context == text[:offset]
    assert ctx.overlap_context == text[:offset][-48:]
    assert ctx.hierarchy_context_for_prompt.endswith("<<<CUT>>>")


def test_a_cut_string_on_a_later_line_followed_by_a_newline() -> None:
    text = '{\n  "title": "Report",\n  "body": "It was a long\n'
    ctx = get_contexts(text)
    assert ctx.cut is not None and ctx.cut.kind is CutKind.STRING
    assert ctx.cut.description == "cut inside a string at body"
    assert (ctx.cut.offset, ctx.cut.line, ctx.cut.character) == (len(text) - 1, 2, 24)
    assert ctx.complete_part == '{\n  "title": "Report",\n  "body": "It was a long"}'


@pytest.mark.parametrize("text", [
    '{"a": [1, 2]}\n', '{"a": [1, 2]}\r\n', '{\n  "a": "x y",\n  "b": [\n    1\n  ]\n}\n',
    '"a b"\n', "12\n", "true \t\n",
])
def test_whitespace_in_and_after_complete_json_is_still_complete(text: str) -> None:
    ctx = get_contexts(text)
    assert ctx.is_complete
    assert ctx.description == "complete JSON"
    assert ctx.complete_part == text.rstrip()


@pytest.mark.parametrize(("text", "offset", "message"), [
    # a raw newline in the middle of a string is an error, not a cut: text follows it
    ('{"a": "x\ny"}\n', 8, "control character U+000A in a string (escape it)"),
    ("[1, tx\n", 4, "invalid literal (expected true)"),
])
def test_whitespace_that_is_not_at_the_very_end_is_still_an_error(
        text: str, offset: int, message: str) -> None:
    ctx = get_contexts(text)
    assert ctx.json_parsing_success is False and ctx.cut is None
    assert ctx.error is not None and (ctx.error.offset, ctx.error.message) == (offset, message)


def test_a_cut_string_holding_a_bracket_with_a_final_newline_is_still_the_string() -> None:
    # the bracket inside the string is not where the JSON starts
    ctx = get_contexts('"{\n')
    assert ctx.cut is not None and ctx.cut.kind is CutKind.STRING
    assert (ctx.complete_part, ctx.json_start, ctx.skipped_prefix) == ('"{"', 0, "")
    ctx = get_contexts('"see [1, 2\n')
    assert ctx.cut is not None and ctx.cut.kind is CutKind.STRING
    assert ctx.complete_part == '"see [1, 2"'


def test_prose_before_a_cut_reply_with_a_final_newline() -> None:
    text = 'Here it is: {"a": "x\n'
    ctx = get_contexts(text)
    assert ctx.skipped_prefix == "Here it is: "
    assert ctx.cut is not None and ctx.cut.offset == len(text) - 1
    assert ctx.complete_part == '{"a": "x"}'
