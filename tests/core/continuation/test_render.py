"""The budgeted hierarchy context (docs/json-continuation.md) on its worked example, by hand.

Costs, counted by hand from the document below (a value costs the characters of its scalar
literals, quotes included; keys and braces are free):

    metadata: "My Document" 13 + "John Doe" 10 + 1 = 24
    sections[0]: "section1" 10 + "Introduction" 14 + "This is the introduction content..." 37 = 61
    sections[1].id "section2" 10, .title "Main Content" 14
    the cut value: the quote + 112 characters = 113
"""

from __future__ import annotations

import pytest

from budgetlens import get_contexts

SEED = """{
  "document": {
    "metadata": {
      "title": "My Document",
      "author": "John Doe",
      "version": 1
    },
    "sections": [
      {
        "id": "section1",
        "title": "Introduction",
        "content": "This is the introduction content..."
      },
      {
        "id": "section2",
        "title": "Main Content",
        "content": "This is a very long content that gets cut right here in the middle \
of this sentence and the JSON is truncated..."""

CUT_VALUE = ('"This is a very long content that gets cut right here in the middle of this '
             'sentence and the JSON is truncated...')
HEADER = ("// cut inside a string at document.sections[1].content; "
          "the text stops at <<<CUT>>>")


def test_the_hand_counted_sizes() -> None:
    assert len(CUT_VALUE) == 113
    assert SEED.endswith(CUT_VALUE)


def test_budget_500_renders_everything() -> None:
    # 113 for the cut value, then title 14, id 10, sections[0] 61, metadata 24: 222 <= 500
    expected = HEADER + "\n" + SEED + "<<<CUT>>>"
    assert get_contexts(SEED, budget=500).hierarchy_context_for_prompt == expected


def test_budget_100_cut_value_becomes_a_hint_and_summary_starts_after_sections_0() -> None:
    # 113 > 100: the cut value is a type hint (no deduction, 100 left); title 14 -> 86,
    # id 10 -> 76, sections[0] 61 -> 15 < 50: summary mode; metadata (a higher level) shows
    # structure only.
    expected = "\n".join([
        HEADER,
        "{",
        '  "document": {',
        '    "metadata": {...},',
        '    "sections": [',
        "      {",
        '        "id": "section1",',
        '        "title": "Introduction",',
        '        "content": "This is the introduction content..."',
        "      },",
        "      {",
        '        "id": "section2",',
        '        "title": "Main Content",',
        '        "content": <string: 112 chars><<<CUT>>>',
    ])
    assert get_contexts(SEED, budget=100).hierarchy_context_for_prompt == expected


def test_budget_30_is_summary_mode_from_the_start() -> None:
    # 30 < 50: budget 0 at once. The cut element's level gets type hints, higher levels
    # show structure only.
    expected = "\n".join([
        HEADER,
        "{",
        '  "document": {',
        '    "metadata": {...},',
        '    "sections": [',
        "      {...},",
        "      {",
        '        "id": <string: 8 chars>,',
        '        "title": <string: 12 chars>,',
        '        "content": <string: 112 chars><<<CUT>>>',
    ])
    assert get_contexts(SEED, budget=30).hierarchy_context_for_prompt == expected


def test_budget_170_fills_nearest_first_then_hints_the_rest() -> None:
    # 113 -> 57 left; title 14 -> 43 < 50: summary. id becomes a hint (cut level),
    # sections[0] and metadata structure only.
    rendering = get_contexts(SEED, budget=170).hierarchy_context_for_prompt
    assert CUT_VALUE + "<<<CUT>>>" in rendering
    assert '"title": "Main Content",' in rendering
    assert '"id": <string: 8 chars>,' in rendering
    assert "      {...}," in rendering
    assert '"metadata": {...},' in rendering


def test_a_sibling_that_does_not_fit_is_a_hint_while_smaller_ones_still_render() -> None:
    text = '{"big": "' + "x" * 200 + '", "small": "yy", "cut": "ab'
    rendering = get_contexts(text, budget=60).hierarchy_context_for_prompt
    # "ab: 3 -> 57; "yy" 4 -> 53; the 202-character value does not fit: hint, 53 stay
    assert rendering.splitlines()[1:] == [
        "{",
        '  "big": <string: 200 chars>,',
        '  "small": "yy",',
        '  "cut": "ab<<<CUT>>>',
    ]


def test_custom_marker_sits_at_the_cut() -> None:
    rendering = get_contexts('[1, {"a": tr', marker="⟦HERE⟧").hierarchy_context_for_prompt
    assert rendering.splitlines() == [
        "// cut inside a literal (true, false or null) at [1].a; the text stops at ⟦HERE⟧",
        "[",
        "  1,",
        "  {",
        '    "a": tr⟦HERE⟧',
    ]


@pytest.mark.parametrize(("text", "last_line"), [
    ('{"a": 1, "ti', '  "ti<<<CUT>>>'),
    ('{"a": 1, "title"', '  "title"<<<CUT>>>'),
    ('{"a": 1, "title": ', '  "title": <<<CUT>>>'),
    ('{"a": 1, ', "  <<<CUT>>>"),
    ("[1, 2.5", "  2.5<<<CUT>>>"),
    ('{"a": [1, 2]', '  "a": ['),
])
def test_marker_placement_for_each_kind(text: str, last_line: str) -> None:
    lines = get_contexts(text).hierarchy_context_for_prompt.splitlines()
    assert last_line in lines


def test_after_value_renders_the_completed_value_with_the_marker() -> None:
    lines = get_contexts('{"a": [1, 2]', budget=100).hierarchy_context_for_prompt.splitlines()
    assert lines[1:] == ["{", '  "a": [', "    1,", "    2", "  ]<<<CUT>>>"]


def test_long_runs_of_array_items_not_shown_collapse_to_one_line() -> None:
    text = "[" + ", ".join(f'{{"n": "{i:04d}"}}' for i in range(10)) + ', "cut'
    lines = get_contexts(text, budget=0).hierarchy_context_for_prompt.splitlines()
    assert lines[1:] == ["[", "  <10 items not shown>,", "  <string: 3 chars><<<CUT>>>"]


def test_complete_json_has_no_prompt_rendering() -> None:
    assert get_contexts("[1]").hierarchy_context_for_prompt == ""


def test_long_runs_of_object_members_keep_their_ends_and_collapse_the_middle() -> None:
    """Budget 0: every member is a hint. 13 members (5 + 3 + 5) stay listed; 14 members
    keep 5 at each end and the 4 between are one line; a parent level's members (structure
    only) collapse the same way."""
    def obj(n: int) -> str:
        return "{" + ", ".join(f'"k{i:02d}": {i}' for i in range(n)) + ', "cut": "ab'

    lines = get_contexts(obj(13), budget=0).hierarchy_context_for_prompt.splitlines()
    assert lines[2:] == [*(f'  "k{i:02d}": <number>,' for i in range(13)),
                         '  "cut": <string: 2 chars><<<CUT>>>']
    lines = get_contexts(obj(14), budget=0).hierarchy_context_for_prompt.splitlines()
    assert lines[2:] == [*(f'  "k{i:02d}": <number>,' for i in range(5)),
                         "  <4 keys not shown>,",
                         *(f'  "k{i:02d}": <number>,' for i in range(9, 14)),
                         '  "cut": <string: 2 chars><<<CUT>>>']
    parent = "{" + ", ".join(f'"p{i:02d}": [{i}]' for i in range(20)) + ', "in": {"a": "b'
    lines = get_contexts(parent, budget=0).hierarchy_context_for_prompt.splitlines()
    assert lines[2:] == [*(f'  "p{i:02d}": [...],' for i in range(5)),
                         "  <10 keys not shown>,",
                         *(f'  "p{i:02d}": [...],' for i in range(15, 20)),
                         '  "in": {', '    "a": <string: 1 char><<<CUT>>>']


def test_top_level_cut_string() -> None:
    rendering = get_contexts('"hello', budget=0).hierarchy_context_for_prompt
    assert rendering.splitlines()[1:] == ["<string: 5 chars><<<CUT>>>"]


def test_long_array_of_scalars_skipped_in_one_match_renders_like_any_other() -> None:
    text = "[" + ", ".join(str(i) for i in range(1000))   # cut inside the number 999
    ctx = get_contexts(text, budget=0)
    assert ctx.cut is not None and ctx.cut.path == (999,)
    assert ctx.complete_part == text + "]"
    assert ctx.hierarchy_context_for_prompt.splitlines()[1:] == [
        "[", "  <999 items not shown>,", "  <number><<<CUT>>>"]
    # a budget for everything: 3 for the cut value, 10*1 + 90*2 + 899*3 = 2887 for the items,
    # and 50 left at the end so that summary mode never starts
    lines = get_contexts(text, budget=2940).hierarchy_context_for_prompt.splitlines()
    assert lines[1:] == ["[", *(f"  {i}," for i in range(999)), "  999<<<CUT>>>"]
    # 100 left after the cut value (3): 17 items of 3 leave 49 < 50: summary mode
    lines = get_contexts(text, budget=103).hierarchy_context_for_prompt.splitlines()
    assert lines[1:] == ["[", "  <982 items not shown>,",
                         *(f"  {i}," for i in range(982, 999)), "  999<<<CUT>>>"]


def test_closed_long_array_keeps_its_item_count() -> None:
    text = '{"a": [' + ", ".join(str(i) for i in range(1000)) + "]"
    ctx = get_contexts(text, budget=0)
    assert ctx.cut is not None and ctx.cut.path == ("a",)
    assert ctx.hierarchy_context_for_prompt.splitlines()[1:] == [
        "{", '  "a": <array: 1,000 items><<<CUT>>>']


def test_long_keys_cost_nothing_even_in_a_large_sibling() -> None:
    key = "k" * 500
    text = '[{"' + key + '": 1, "b": "xy"}, "cut'
    # the sibling costs 1 + 4 = 5 (its keys are free); the cut value "cut costs 4
    lines = get_contexts(text, budget=60).hierarchy_context_for_prompt.splitlines()
    assert lines[1:] == ["[", "  {", f'    "{key}": 1,', '    "b": "xy"', "  },",
                         '  "cut<<<CUT>>>']
