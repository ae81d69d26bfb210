"""merge_with_overlap: the longest overlap wins; fences, blanks and restarts are handled;
without an overlap the bytes are kept as given; the search is linear (counted, not timed)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from budgetlens import merge_with_overlap
from budgetlens.continuation import merge as json_merge
from budgetlens.continuation.merge import MIN_OVERLAP, longest_overlap, overlap_with_work
from budgetlens.serialize import to_jsonable
from budgetlens_cli.main import main


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
    assert set(to_jsonable(merge_with_overlap("[1", "1]"))) == {
        "merged", "has_overlap", "overlap_length", "restarted"}


# ---------------------------------------------------------------- no overlap: bytes as given
def test_no_overlap_keeps_the_fragment_exactly_as_given() -> None:
    r = merge_with_overlap("line", " was")
    assert (r.merged, r.has_overlap, r.restarted) == ("line was", False, False)
    r = merge_with_overlap('{"a": 1, ', '```json\n  xyz"}\n```\n')
    assert r.merged == '{"a": 1, ```json\n  xyz"}\n```\n'
    assert r.fragment_trimmed == 0


def test_cli_merge_without_overlap_prints_base_plus_fragment(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "base.txt").write_bytes(b"line")
    (tmp_path / "frag.txt").write_bytes(b" was")
    assert main(["merge", str(tmp_path / "base.txt"), str(tmp_path / "frag.txt")]) == 1
    captured = capsys.readouterr()
    assert captured.out == "line was\n"
    assert "printed base + fragment as is" in captured.err


# ---------------------------------------------------------------- linear time, by counting
def _reference_overlap(base: str, fragment: str, min_overlap: int) -> int:
    for length in range(min(len(base), len(fragment)), max(min_overlap, 1) - 1, -1):
        if base.endswith(fragment[:length]):
            return length
    return 0


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="ab\"{", max_size=40), st.text(alphabet="ab\"{", max_size=40),
       st.integers(min_value=1, max_value=5))
def test_longest_overlap_equals_the_brute_force_answer(base: str, fragment: str,
                                                       min_overlap: int) -> None:
    assert longest_overlap(base, fragment, min_overlap) == _reference_overlap(
        base, fragment, min_overlap)


def _hard_cases(n: int) -> list[tuple[str, str, int]]:
    """(base, fragment, longest overlap worked out by hand) on which a search that
    re-compares the tail once per candidate position does n**2 work (n: a multiple of 20)."""
    return [
        ('{"k": "' + "a" * n, "a" * n + '"}', n),                   # all one character
        ("a" * n, "a" * (n - 1) + "b", n - 1),                      # fails on the last char
        ("ab" * (n // 2), "ab" * (n // 2 - 1) + "ac", n - 2),       # period 2, late mismatch
        (("a" * 9 + "b") * (n // 10), ("a" * 9 + "b") * (n // 20) + "a" * 9 + "c", n // 2),
        ('{"x": 1}, ' * (n // 10), '{"x": 1}, ' * (n // 10 - 1) + '{"x": 2}]', n - 10),
    ]


def test_overlap_search_work_is_linear_in_the_input() -> None:
    for n in (20, 2_000, 20_000, 200_000):
        for base, fragment, expected in _hard_cases(n):
            length, work = overlap_with_work(base, fragment)
            assert length == expected
            limit = min(len(base), len(fragment))
            # KMP: at most 2 comparisons per character of each of its two passes
            assert work <= 4 * limit, (n, work, limit)


def test_merge_does_linear_work_over_all_its_attempts(monkeypatch: pytest.MonkeyPatch) -> None:
    total = [0]
    calls = [0]
    real = json_merge.overlap_with_work

    def counting(base: str, fragment: str, min_overlap: int = 1) -> tuple[int, int]:
        length, work = real(base, fragment, min_overlap)
        total[0] += work
        calls[0] += 1
        return length, work

    monkeypatch.setattr(json_merge, "overlap_with_work", counting)
    n = 100_000
    # as given: no overlap (" " vs a base ending in a newline); without the blank: none
    # either; against the base without its trailing newline: "ab" * (n - 1)
    base = '["' + "ab" * n + "\n"
    fragment = " " + "ab" * (n - 1) + "ac" + '"]'
    r = merge_with_overlap(base, fragment)
    assert (r.merged, r.overlap_length) == ('["' + "ab" * n + 'ac"]', 2 * (n - 1))
    assert calls[0] == 3
    assert 0 < total[0] <= 3 * 4 * (len(base) + len(fragment))


def test_bench_merge_runs_small_and_writes_its_figures(tmp_path: Path) -> None:
    bench = Path(__file__).resolve().parents[3] / "bench" / "bench_merge.py"
    out = tmp_path / "figures.json"
    proc = subprocess.run([sys.executable, str(bench), "--sizes", "20K", "--repeat", "1",
                           "--json", str(out)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "x json.loads" in proc.stdout
    rows = json.loads(out.read_text("utf-8"))["rows"]
    assert [(r["base"], r["fragment"]) for r in rows] == [
        ("string", "long"), ("string", "4K"), ("string", "late"),
        ("objects", "long"), ("objects", "4K"), ("objects", "late")]
    assert [r["overlap"] for r in rows if r["fragment"] == "late"] == [1000, 1000]
    # the long fragments repeat all of the base but its first character ('{' or '[')
    assert [r["overlap"] for r in rows if r["fragment"] == "long"] == [
        r["base_chars"] - 1 for r in rows if r["fragment"] == "long"]
    assert all(r["ms"] >= 0 and r["ratio_to_json_loads"] >= 0 for r in rows)


_CLOSE_REFERENCE = re.compile(r"\n?[ \t]*```[ \t\r\n]*\Z")


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(["`", "```", " ", "\t", "\n", "\r", "x"]),
                max_size=20).map("".join),
       st.integers(min_value=0, max_value=12))
def test_the_closing_fence_is_found_as_the_regex_finds_it(text: str, start: int) -> None:
    start = min(start, len(text))
    m = _CLOSE_REFERENCE.search(text, start)
    assert json_merge._fence_close(text, start) == (m.start() if m else len(text))


def test_a_fenced_fragment_of_many_blanks_is_handled() -> None:
    # the closing-fence search runs from the end: a long run of blanks is one pass
    fragment = "```json\n" + " " * 300_000 + '3]\n```\n'
    r = merge_with_overlap("[1, 2, 3", fragment)
    assert (r.merged, r.overlap_length) == ("[1, 2, 3]", 1)
