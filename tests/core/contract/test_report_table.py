"""``report_text.budget_table``: a step whose numbers are all known is one formatted line; the
header of a width is made once for all the tables of that width (a run prints thousands)."""

from __future__ import annotations

from pathlib import Path

from budgetlens.contract import report_text
from budgetlens.contract.report_text import budget_table
from tests.core.contract.helpers import check, make_workspace, tokens

PROMPT = "You answer questions about parcels."


def _report(root: Path, step: str) -> object:
    make_workspace(root, config={"model_context_window": 8000, "format_overhead_tokens": 7},
                   pipelines={"p.yaml": "settings:\n  max_context_tokens: 3000\nsteps:\n"
                                        f"  - id: {step}\n    type: call_model\n"
                                        "    prompt_key: sys\n    max_output_tokens: 500\n"},
                   prompts={"sys.txt": PROMPT})
    return check(root / "pipelines" / "p.yaml")


def test_a_known_step_is_one_line_of_its_numbers(tmp_path: Path) -> None:
    report = _report(tmp_path, "answer")
    fixed = tokens(PROMPT) + 7
    total = fixed + 0 + 3000 + 500 + 128
    assert budget_table(report) == [  # type: ignore[arg-type]
        "  step  " "     fixed   history   context    output    margin     total    window"
        "  headroom  fits",
        f"  answer{fixed:>10}         0      3000       500       128{total:>10}      8000"
        f"{8000 - total:>10}  yes"]


def test_the_header_of_a_width_is_made_once(tmp_path: Path) -> None:
    report_text._HEADERS.clear()
    first = budget_table(_report(tmp_path / "a", "answer"))  # type: ignore[arg-type]
    second = budget_table(_report(tmp_path / "b", "sorter"))  # type: ignore[arg-type]
    assert list(report_text._HEADERS) == [6]
    assert first[0] is second[0]  # the same string object: made once
    wider = budget_table(_report(tmp_path / "c", "summarize"))  # type: ignore[arg-type]
    assert list(report_text._HEADERS) == [6, 9] and wider[0] is not first[0]


def test_a_row_of_ints_is_one_percent_format_with_the_same_text() -> None:
    """``%10d`` gives an int what ``{:>10}`` gives it (signs, widths above 10); a number of
    another type (a bool, a float) is formatted as before."""
    cases = [(1564, 1615, 11883, 1566, 128, 16756, 16384, -372),
             (0, 0, 0, 0, 0, 0, 0, 0), (10**15, -(10**12), 1, -1, 2, 3, 4, 5)]
    for numbers in cases:
        expected = "  draft " + "".join(f"{n:>10}" for n in numbers) + "  NO"
        assert report_text._all_ints(numbers)
        assert report_text._ROW % ("draft ", *numbers, "  NO") == expected
    assert not report_text._all_ints((True, 2, 3, 4, 5, 6, 7, 8))  # a bool: the f-string path
    assert not report_text._all_ints((1, 2, 3, 4, 5, 6, 7, 2.5))  # the f-string path
