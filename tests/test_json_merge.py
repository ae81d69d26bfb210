"""merge_with_overlap: the longest overlap wins; fences, blanks and restarts are handled."""

from __future__ import annotations

from budgetlens import MIN_OVERLAP, merge_with_overlap


def test_longest_overlap_is_removed_once() -> None:
    r = merge_with_overlap('{"a": [1, 2', "[1, 2, 3]}")
    assert (r.merged, r.has_overlap, r.overlap_length) == ('{"a": [1, 2, 3]}', True, 5)


def test_longest_match_wins_over_a_shorter_one() -> None:
    # both "a" and "aba" end the base and start the fragment: "aba" (3) wins
    r = merge_with_overlap('["xaba', 'aba"]')
    assert (r.merged, r.overlap_length) == ('["xaba"]', 3)


def test_minimum_overlap_is_one_character_by_default() -> None:
    assert MIN_OVERLAP == 1
    r = merge_with_overlap('["ab', 'bc"]')
    assert (r.merged, r.overlap_length) == ('["abc"]', 1)
    r = merge_with_overlap('["ab', 'bc"]', min_overlap=2)
    assert r.has_overlap is False


def test_no_overlap() -> None:
    r = merge_with_overlap('{"a": 1, ', 'xyz"}')
    assert r.has_overlap is False and r.overlap_length == 0
    assert r.merged == '{"a": 1, xyz"}'


def test_code_fence_and_leading_blanks_in_the_fragment_are_tolerated() -> None:
    r = merge_with_overlap('{"a": "hel', '```json\n  "hello"}\n```\n')
    # the fragment as given does not overlap; without its fence and blanks it does
    assert (r.merged, r.has_overlap, r.overlap_length) == ('{"a": "hello"}', True, 4)
    assert r.fragment_trimmed == len("```json\n  ")


def test_leading_whitespace_that_is_part_of_the_overlap_is_kept() -> None:
    r = merge_with_overlap('{"a": 1,\n  ', '\n  "b": 2}')
    assert (r.merged, r.overlap_length) == ('{"a": 1,\n  "b": 2}', 3)


def test_trailing_blanks_of_the_base_are_not_required_in_the_fragment() -> None:
    r = merge_with_overlap('{"a": 1,\n  ', '1, "b": 2}')
    assert (r.merged, r.overlap_length) == ('{"a": 1, "b": 2}', 2)


def test_a_restart_from_the_top_replaces_the_base() -> None:
    base = '{"document": {"title": "Report", "sections": [{"id": 1, "te'
    fragment = '{"document": {"title": "Report", "sections": [{"id": 1, "text": "x"}]}}'
    r = merge_with_overlap(base, fragment)
    # the fragment repeats the whole base: that is simply the longest overlap
    assert (r.merged, r.has_overlap, r.restarted) == (fragment, True, False)
    diverging = '```json\n{"document": {"title": "Report v2", "sections": []}}\n```'
    r = merge_with_overlap(base, diverging)
    assert r.restarted is True and r.has_overlap is False
    assert r.merged == '{"document": {"title": "Report v2", "sections": []}}'


def test_empty_fragment() -> None:
    r = merge_with_overlap('{"a": ', "")
    assert (r.merged, r.has_overlap) == ('{"a": ', False)


def test_to_dict_keys() -> None:
    assert set(merge_with_overlap("[1", "1]").to_dict()) == {
        "merged", "has_overlap", "overlap_length", "restarted"}
