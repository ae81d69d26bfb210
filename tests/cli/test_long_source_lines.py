"""A source line wider than 120 columns is printed under a diagnostic as a window of at most 120
columns around the diagnostic's range, ``...`` where text is left out (as rustc and ruff print
one), the caret under the same text as on the whole line. A pipeline on one line of hundreds of
KB with many diagnostics prints a few KB, not the line once per diagnostic. Lines that fit print
whole, as before."""

from __future__ import annotations

from pathlib import Path

import pytest

from budgetlens.source import Diagnostic, Position, Range, Severity
from budgetlens_cli import check_text
from budgetlens_cli.main import main
from tests.core.contract.helpers import make_workspace

FILLER = "lorem ipsum dolor sit amet " * 300  # 8,100 characters of template text


def _one_line_pipeline(steps: int) -> str:
    """A flow-style pipeline on one line: a bad setting near its start, then ``steps`` steps
    whose templates each end in an unclosed ``{qN``."""
    parts = [f"{{id: s{n}, type: call_model, prompt_key: s, user_parts: {{template:"
             f" '{FILLER}{{q{n}'}}}}" for n in range(steps)]
    return "{settings: {max_context_tokens: -5}, steps: [" + ", ".join(parts) + "]}"


def _diagnostic(text: str, start: int, end: int, tmp_path: Path,
                end_line: int = 0) -> list[str]:
    """The source and caret lines printed under an error from ``start`` on the first line of
    a file holding ``text`` to ``end`` on line ``end_line``."""
    path = tmp_path / "f.txt"
    path.write_bytes(text.encode("utf-8"))
    d = Diagnostic(file=str(path), range=Range(Position(0, start), Position(end_line, end)),
                   severity=Severity.ERROR, code="BL043", message="m")
    return check_text.format_diagnostic(d, check_text.SourceLines()).splitlines()[1:]


def test_a_200_kb_one_line_pipeline_prints_a_window_per_diagnostic(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    text = _one_line_pipeline(25)
    assert len(text) > 200_000 and "\n" not in text
    make_workspace(tmp_path, config={"model_context_window": 4000, "model_max_tokens": 10},
                   prompts={"s.txt": "x"}, pipelines={"p.yaml": text})
    monkeypatch.chdir(tmp_path)
    code = main(["check", "--no-cache", "--no-table", "pipelines/p.yaml"])
    out = capsys.readouterr().out
    assert code == 1
    lines = out.splitlines()
    # 26 diagnostics of three lines each, a blank line and the summary: 8,904 bytes (with the
    # whole line under each diagnostic it was 7,977,007)
    assert len(lines) == 26 * 3 + 2
    assert len(out.encode("utf-8")) < 10_000
    assert all(len(line) <= 8 + 120 for n, line in enumerate(lines) if n % 3 != 0)
    # near the start of the line: no mark on the left
    assert lines[0:3] == [
        "pipelines/p.yaml:1:33: error[BL030] settings.max_context_tokens: input should be"
        " greater than 0 (got -5)",
        "    1 | {settings: {max_context_tokens: -5}, steps: [{id: s0, type: call_model,"
        " prompt_key: s, user_parts: {template: 'lorem ...",
        "      | " + " " * 32 + "^^"]
    # in the middle: 56 columns of text on either side of the brace, cut on both
    assert lines[3:9] == [
        "pipelines/p.yaml:1:8212: error[BL043] template of step 's0': unclosed '{': close the"
        " placeholder with '}' or write '{{' for a literal brace",
        "    1 | ...t lorem ipsum dolor sit amet lorem ipsum dolor sit amet {q0'}}, {id: s1,"
        " type: call_model, prompt_key: s, user_par...",
        "      | " + " " * 59 + "^",
        "pipelines/p.yaml:1:16386: error[BL043] template of step 's1': unclosed '{': close the"
        " placeholder with '}' or write '{{' for a literal brace",
        "    1 | ...t lorem ipsum dolor sit amet lorem ipsum dolor sit amet {q1'}}, {id: s2,"
        " type: call_model, prompt_key: s, user_par...",
        "      | " + " " * 59 + "^"]
    # near the end of the line: no mark on the right, the text before it takes its place
    assert lines[75:78] == [
        "pipelines/p.yaml:1:204417: error[BL043] template of step 's24': unclosed '{': close"
        " the placeholder with '}' or write '{{' for a literal brace",
        "    1 | ...lorem ipsum dolor sit amet lorem ipsum dolor sit amet lorem ipsum dolor sit"
        " amet lorem ipsum dolor sit amet {q24'}}]}",
        "      | " + " " * 111 + "^"]
    # every caret is under its own unclosed brace
    for n in range(25):
        source, caret = lines[3 * n + 4], lines[3 * n + 5]
        assert caret.index("^") == source.index(f"{{q{n}'")
    assert lines[-1] == ("1 pipeline, 25 call_model steps (25 not fitting): 26 errors,"
                         " 0 warnings")


def test_a_line_of_120_columns_prints_whole_and_one_of_121_is_cut(tmp_path: Path) -> None:
    line = "k: " + "abcdefghij" * 11 + "{q'++++"  # 3 + 110 + 7 = 120 columns
    assert _diagnostic(line, 113, 114, tmp_path) == [
        "    1 | k: " + "abcdefghij" * 11 + "{q'++++",
        "      | " + " " * 113 + "^"]
    # one more: the 7 columns after the brace, and all the rest before it that fits
    assert _diagnostic(line + "!", 113, 114, tmp_path) == [
        "    1 | ...bcdefghij" + "abcdefghij" * 10 + "{q'++++!",
        "      | " + " " * 112 + "^"]


def test_wide_characters_count_two_columns_in_the_window_and_under_it(tmp_path: Path) -> None:
    # 60 wide characters are 120 columns: whole
    assert _diagnostic("予算" * 30, 2, 4, tmp_path) == [
        "    1 | " + "予算" * 30,
        "      |     ^^^^"]
    # 202 characters, 401 columns: 28 wide characters (56 columns) on either side of the brace
    line = "数" * 100 + "{q" + "予" * 100
    assert _diagnostic(line, 100, 101, tmp_path) == [
        "    1 | ..." + "数" * 28 + "{q" + "予" * 28 + "...",
        "      | " + " " * 59 + "^"]


def test_a_tab_before_the_range_is_kept_in_the_caret_line(tmp_path: Path) -> None:
    line = "x" * 200 + "\tk: {q" + "y" * 200
    assert _diagnostic(line, 204, 205, tmp_path) == [
        "    1 | ..." + "x" * 52 + "\tk: {q" + "y" * 56 + "...",
        "      | " + " " * 55 + "\t   ^"]


def test_a_range_wider_than_the_window_shows_its_start_and_marks_the_cut(
        tmp_path: Path) -> None:
    line = "template: '" + "0123456789" * 30 + "' tail"
    # the text before it (at most 20 columns), then as much of it as fits; the carets go on
    # under the `...`
    assert _diagnostic(line, 11, 311, tmp_path) == [
        "    1 | template: '" + "0123456789" * 10 + "012345...",
        "      |            " + "^" * 109]
    assert _diagnostic("abc " * 40 + line, 171, 471, tmp_path) == [
        "    1 | ... abc abc template: '" + "0123456789" * 9 + "0123...",
        "      | " + " " * 23 + "^" * 97]


def test_a_range_going_on_to_the_next_line_runs_to_the_window_s_edge(tmp_path: Path) -> None:
    assert _diagnostic("a" * 300 + "\nnext\n", 150, 2, tmp_path, end_line=1) == [
        "    1 | ..." + "a" * 114 + "...",
        "      | " + " " * 23 + "^" * 97]


def test_a_range_at_the_end_of_a_long_line(tmp_path: Path) -> None:
    assert _diagnostic("b" * 300, 300, 300, tmp_path) == [
        "    1 | ..." + "b" * 116,
        "      | " + " " * 119 + "^"]


def test_a_long_line_is_windowed_looking_at_the_window_only(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Many diagnostics on one long line of wide characters: each looks up the width of the
    characters of its own window, not of the whole line."""
    calls: list[str] = []
    real = check_text.display_width

    def counting(text: str) -> int:
        calls.append(text)
        return real(text)
    monkeypatch.setattr(check_text, "display_width", counting)
    assert _diagnostic("数" * 100_000, 50_000, 50_001, tmp_path) == [
        "    1 | ..." + "数" * 57 + "...",
        "      | " + " " * 59 + "^^"]
    assert sum(map(len, calls)) < 1_000
