"""A thinking budget at run time, placed as each provider spends it (the check's rule,
contract/terms.py): beside the output for Gemini (reserved from the window), inside
``max_completion_tokens`` for OpenAI's reasoning models, inside ``max_tokens`` for Claude.
Expected numbers are sums written out here over the request's input count."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from budgetlens import RequestDoesNotFit, check_request, fit_request

from ..contract.helpers import check, make_workspace

MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "Answer."},
    {"role": "user", "content": "Where is parcel 1042? " * 60}]


def _input(model: str) -> int:
    """The request's input tokens (the count is tested in test_counts.py)."""
    return fit_request(model, MESSAGES, margin=0).input_tokens


def test_gemini_reserves_its_thinking_budget_beside_the_output() -> None:
    tokens = _input("gemini-2.5-pro")
    window = tokens + 4000 + 700  # 700 left for the visible output once 4,000 are thought
    fit = fit_request("gemini-2.5-pro", MESSAGES, max_tokens=1000, reasoning=4000, margin=0,
                      serving={"max_model_len": window})
    assert fit.clamped and fit.output_tokens == 700 and fit.reasoning == 4000
    assert fit.request_kwargs()["max_output_tokens"] == 700
    assert "reasoning 4,000" in fit.message and "beside the output" in fit.reasoning_rule
    # without the budget the 1,000 fit
    assert fit_request("gemini-2.5-pro", MESSAGES, max_tokens=1000, margin=0,
                       serving={"max_model_len": window}).output_tokens == 1000
    # 499 left: below the floor (half of 1,000): refused, the budget named
    with pytest.raises(RequestDoesNotFit) as raised:
        fit_request("gemini-2.5-pro", MESSAGES, max_tokens=1000, reasoning=4201, margin=0,
                    serving={"max_model_len": window})
    assert raised.value.fit.over_by == 1 and "reasoning 4,201" in raised.value.fit.message


def test_openai_spends_reasoning_out_of_max_completion_tokens() -> None:
    tokens = _input("o3")
    fit = fit_request("o3", MESSAGES, max_tokens=2000, reasoning=4000, margin=0)
    assert fit.request_kwargs()["max_completion_tokens"] == 6000 and not fit.clamped
    # 5,000 left: the 6,000 clamped to 5,000, which still holds half of the visible 2,000
    # beside the 4,000 of reasoning (the floor, 1,000 + 4,000)
    window = tokens + 5000
    fit = fit_request("o3", MESSAGES, max_tokens=2000, reasoning=4000, margin=0,
                      serving={"max_model_len": window})
    assert fit.clamped and fit.output_tokens == 5000
    with pytest.raises(RequestDoesNotFit) as raised:
        fit_request("o3", MESSAGES, max_tokens=2000, reasoning=4001, margin=0,
                    serving={"max_model_len": window})
    assert raised.value.fit.over_by == 1


def test_claude_thinks_inside_max_tokens() -> None:
    tokens = _input("claude-sonnet-4-5")
    fit = fit_request("claude-sonnet-4-5", MESSAGES, max_tokens=8000, reasoning=4000,
                      margin=0)
    assert fit.output_tokens == 8000 and not fit.clamped  # nothing reserved beside it
    window = tokens + 4500
    fit = fit_request("claude-sonnet-4-5", MESSAGES, max_tokens=8000, reasoning=4000,
                      margin=0, serving={"max_model_len": window})
    assert fit.clamped and fit.output_tokens == 4500
    # budget_tokens must stay below max_tokens: 5,000 thought needs 5,001, 4,500 are left
    with pytest.raises(RequestDoesNotFit) as raised:
        fit_request("claude-sonnet-4-5", MESSAGES, max_tokens=8000, reasoning=5000,
                    margin=0, serving={"max_model_len": window})
    assert raised.value.fit.over_by == 501
    with pytest.raises(ValueError, match="max_tokens 4,000 must be above the thinking budget"):
        fit_request("claude-sonnet-4-5", MESSAGES, max_tokens=4000, reasoning=4000)


def test_check_request_reserves_a_gemini_steps_thinking_budget(tmp_path: Path) -> None:
    make_workspace(tmp_path, config={"model": "gemini-2.5-pro",
                                     "serving": {"num_ctx": 6000}},
                   pipelines={"p.yaml": "settings:\n  max_context_tokens: 200\n"
                              "steps:\n  - id: think\n    type: call_model\n"
                              "    prompt_key: sys\n    max_output_tokens: 1000\n"
                              "    reasoning: 4000\n"},
                   prompts={"sys.txt": "Answer."})
    report = check(tmp_path / "pipelines" / "p.yaml")
    [step] = report.steps
    assert step.reasoning is not None and step.reasoning_added == 4000
    messages = [MESSAGES[0], {"role": "user", "content": "Where is parcel 1042? " * 180}]
    fit = check_request(step, messages, report=report, margin=0)
    assert fit.window == 6000 and fit.output_tokens == 6000 - fit.input_tokens - 4000
    assert fit.clamped and fit.output_tokens < 1000
