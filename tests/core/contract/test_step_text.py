"""``contract/step_text.sum_text``: a step's budget as one line of arithmetic, in the words
of a diagnostic (``SumStyle.MESSAGE``) and of a lens or hover (``SumStyle.LENS``).

The steps are checked from pipelines on disk; every expected number is computed here (the
OpenAI cookbook's rule, tests/core/contract/test_request_terms.py), never by budgetlens.
"""

from __future__ import annotations

from pathlib import Path

from budgetlens import codes
from budgetlens.contract.step_text import SumStyle, sum_text
from tests.core.contract.helpers import check
from tests.core.contract.test_request_terms import (
    ANSWER_SCHEMA,
    WEATHER,
    cookbook_function,
    cookbook_tools,
    step,
    workspace,
)

TOOLS = cookbook_tools([WEATHER])  # gpt-4o: the cookbook's own model, exact
SCHEMA = cookbook_function("answer", "The final answer.", ANSWER_SCHEMA["properties"]) + 12


def _openai(tmp_path: Path) -> Path:
    # gpt-4o: window 128,000; context 127,500 + output 500 + margin 100 leaves no room
    return workspace(tmp_path, [{"id": "a", "max_output_tokens": 500, "tools": [WEATHER],
                                 "response_schema": ANSWER_SCHEMA}], context=127500)


def test_request_terms_are_added_in_a_message_and_listed_in_a_lens(tmp_path: Path) -> None:
    report = check(_openai(tmp_path))
    s = step(report, "a")
    total = TOOLS + SCHEMA + 127500 + 500 + 100
    tail = f" + history 0 + context 127500 + output 500 + margin 100 = {total}"
    # the schema is an estimate (≈): the cookbook gives no rule for it; the tools are exact
    assert sum_text(s, SumStyle.MESSAGE) == (
        f"fixed {TOOLS + SCHEMA} (system prompt 0 + template 0 + format overhead 0"
        f" + tools {TOOLS} + response_schema ≈{SCHEMA})" + tail)
    assert sum_text(s, SumStyle.LENS) == (
        f"fixed {TOOLS + SCHEMA} (tools {TOOLS}, response_schema ≈{SCHEMA})" + tail)
    violation = next(d for d in report.diagnostics if d.code == codes.CONTRACT_VIOLATION)
    assert violation.message.startswith(
        f"step 'a' does not fit the context window: {sum_text(s, SumStyle.MESSAGE)}"
        f" > 128000 (over by {total - 128000})")


def test_a_thinking_budget_beside_or_inside_the_output(tmp_path: Path) -> None:
    beside = step(check(workspace(tmp_path / "o", [{"id": "a", "max_output_tokens": 2000,
                                                    "reasoning": 4000}], model="gpt-5")), "a")
    expected = ("fixed 0 + history 0 + context 1000 + output 2000 + reasoning 4000"
                " + margin 100 = 7100")
    assert sum_text(beside, SumStyle.LENS) == expected
    assert sum_text(beside, SumStyle.MESSAGE) == expected.replace(
        "fixed 0", "fixed 0 (system prompt 0 + template 0 + format overhead 0)")
    inside = step(check(workspace(tmp_path / "c", [{"id": "a", "max_output_tokens": 8000,
                                                    "reasoning": 2048}],
                                  model="claude-sonnet-4-0")), "a")
    assert sum_text(inside, SumStyle.LENS) == (
        "fixed 0 + history 0 + context 1000 + output 8000 (reasoning 2048 inside)"
        " + margin 100 = 9100")
    assert sum_text(inside, SumStyle.MESSAGE).endswith(
        " + output 8000 (reasoning 2048 inside it) + margin 100 = 9100")
