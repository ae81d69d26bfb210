"""``features.shared.budget_sum``: the sum a code lens and a hover show for a step, built on
the core's ``contract/step_text`` (its lens wording), checked from a pipeline on disk."""

from __future__ import annotations

from pathlib import Path

from budgetlens_lsp.features.shared import budget_sum
from tests.core.contract.helpers import check
from tests.core.contract.test_request_terms import SEARCH, WEATHER, cookbook_tools, step, workspace


def test_a_lens_lists_the_request_terms_marks_estimates_and_ends_with_the_headroom(
        tmp_path: Path) -> None:
    # gpt-5: its tools are counted by the gpt-4o rule, an estimate (≈); thinking beside
    pipe = workspace(tmp_path, [{"id": "a", "max_output_tokens": 2000, "reasoning": 4000,
                                 "tools": [WEATHER, SEARCH]}], model="gpt-5")
    tools = cookbook_tools([WEATHER, SEARCH])
    total = tools + 1000 + 2000 + 4000 + 100
    window = 400000  # gpt-5's window in the registry
    assert budget_sum(step(check(pipe), "a")) == (
        f"fixed {tools} (tools ≈{tools}) + history 0 + context 1000 + output 2000"
        f" + reasoning 4000 + margin 100 = {total} / {window} ({window - total:,} free)")
