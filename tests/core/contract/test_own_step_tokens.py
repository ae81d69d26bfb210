"""A step's own ``max_context_tokens`` and ``max_history_tokens`` that are not integers >= 0:
BL005 at the value, naming the setting used instead, which the sum then takes."""

from __future__ import annotations

from pathlib import Path

from budgetlens import codes
from tests.core.contract.helpers import check, make_workspace, text_at

PIPELINE = """\
settings:
  max_context_tokens: 1000
  max_history_tokens: 3000
  budget_safety_margin_tokens: 90
steps:
  - id: wide
    type: call_model
    max_context_tokens: -5
    max_output_tokens: 100
  - id: chatty
    type: call_model
    use_history: true
    max_history_tokens: lots
    max_output_tokens: 100
"""


def test_wrong_own_token_counts_are_bl005_and_the_settings_are_used(tmp_path: Path) -> None:
    make_workspace(tmp_path, config={"model_context_window": 8000},
                   pipelines={"p.yaml": PIPELINE})
    pipe = tmp_path / "pipelines" / "p.yaml"
    report = check(pipe)
    bad = [d for d in report.diagnostics if d.code == codes.INVALID_VALUE]
    assert [d.message for d in bad] == [
        "max_context_tokens of step 'wide' must be an integer >= 0, got -5; the pipeline's"
        " settings.max_context_tokens is used",
        "max_history_tokens of step 'chatty' must be an integer >= 0, got 'lots';"
        " settings.max_history_tokens is used"]
    assert [text_at(pipe, d.range) for d in bad] == ["-5", "lots"]
    wide, chatty = report.steps
    assert (wide.context.value, wide.context.source) == (1000, "settings.max_context_tokens")
    assert (chatty.history.value, chatty.history.source) == (3000,
                                                             "settings.max_history_tokens")
