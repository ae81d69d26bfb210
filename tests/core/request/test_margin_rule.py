"""One default margin for approximate counts, in the check and at run time: 12% of the
input, rounded up, plus 128 (docs/pipeline-format.md, docs/runtime.md). Expected values
are written out here by hand."""

from __future__ import annotations

import math
from pathlib import Path

from budgetlens import check_request, fit_request

from ..contract.helpers import check, make_workspace


def _hand(input_tokens: int) -> int:
    return math.ceil(input_tokens * 12 / 100) + 128


def test_an_approximate_request_gets_the_checks_default_margin() -> None:
    messages = [{"role": "system", "content": "Answer briefly."},
                {"role": "user", "content": "Where is parcel 1042? " * 300}]
    fit = fit_request("claude-sonnet-4-5", messages, max_tokens=1000)
    assert fit.approximate and fit.margin_rule == "12% + 128"
    assert fit.margin == _hand(fit.input_tokens)
    # an exact count keeps no margin unless asked
    assert fit_request("gpt-4o", messages, max_tokens=1000).margin == 0


def test_check_and_run_time_give_the_same_margin_for_the_same_input(tmp_path: Path) -> None:
    make_workspace(tmp_path, config={"model": "claude-sonnet-4-5"},
                   pipelines={"p.yaml": "settings:\n  max_context_tokens: 10000\n"
                              "steps:\n  - id: answer\n    type: call_model\n"
                              "    prompt_key: sys\n    max_output_tokens: 1000\n"},
                   prompts={"sys.txt": "Answer briefly."})
    report = check(tmp_path / "pipelines" / "p.yaml")
    [step] = report.steps
    sent = step.fixed.value + step.context.value  # no history
    assert step.approximate and step.margin.value == _hand(sent)
    # the run time's margin of a request of that many input tokens is the same number
    from budgetlens.request.limits import parse_margin

    assert parse_margin(None, approximate=True).of(sent) == step.margin.value
    # check_request passes the step's margin on as it is
    fit = check_request(step, [{"role": "user", "content": "Hi"}], report=report)
    assert fit.margin == step.margin.value


def test_a_count_declared_approximate_gets_the_same_default() -> None:
    # the Responses API: OpenAI publishes no rule for it, so its adapters declare the
    # count ≈ and take the default margin of one
    messages = [{"role": "user", "content": "Where is parcel 1042? " * 300}]
    fit = fit_request("gpt-4o", messages, approximate=True)
    assert fit.approximate and fit.margin == _hand(fit.input_tokens)
    assert fit.message.startswith(f"gpt-4o: input ≈{fit.input_tokens:,} tokens")
