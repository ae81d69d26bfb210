"""``report_text.budget_table``: a step whose numbers are all known is one formatted line."""

from __future__ import annotations

from pathlib import Path

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
