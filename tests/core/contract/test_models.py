"""``model:`` instead of numbers: limits from the registry, per-step models, typed numbers
that contradict the registry, unknown models, serving limits. Every expected number is
written by hand: the prompts are empty and the format overhead is set, so a step's total is
overhead + context + output + margin whatever the tokenizer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from budgetlens.codes import (
    CONTRACT_VIOLATION,
    INVALID_VALUE,
    MODEL_CONTRADICTED,
    MODEL_UNKNOWN,
    OUTPUT_ABOVE_CEILING,
    SERVING_BINDS,
    WINDOW_INVALID,
)
from budgetlens.models import load_registry
from budgetlens.source import Severity

from .helpers import check, codes_of, make_workspace, only

DATE = load_registry().date


def _ws(tmp_path: Path, config: dict[str, Any], steps: str = "", context: int = 1000) -> Path:
    steps = steps or """\
  - id: answer
    type: call_model
    prompt_key: sys
    max_output_tokens: 500
"""
    make_workspace(tmp_path, config={"format_overhead_tokens": 10, **config},
                   pipelines={"p.yaml": f"settings:\n  max_context_tokens: {context}\n"
                                        f"  budget_safety_margin_tokens: 90\nsteps:\n{steps}"},
                   prompts={"sys.txt": ""})
    return tmp_path / "pipelines" / "p.yaml"


def test_the_window_ceiling_and_tokenizer_come_from_the_model(tmp_path: Path) -> None:
    report = check(_ws(tmp_path, {"model": "gpt-4o"}))
    assert report.diagnostics == []
    assert report.window is not None and report.window.value == 128_000
    assert report.window.source == f"model gpt-4o (registry {DATE})"
    assert report.window.location is not None
    assert report.window.location.file.endswith("config.json")
    assert report.output_ceiling is not None and report.output_ceiling.value == 16_384
    assert report.tokenizer == "o200k_base" and report.approximate is False
    [step] = report.steps
    assert (step.total, step.headroom) == (10 + 1000 + 500 + 90, 128_000 - 1600)


def test_a_model_without_an_exact_tokenizer_marks_counts_approximate(tmp_path: Path) -> None:
    report = check(_ws(tmp_path, {"model": "claude-sonnet-4-5"}))
    assert report.window is not None and report.window.value == 200_000
    assert report.tokenizer == "claude_approx"  # o200k_base counts, marked ≈
    assert report.approximate is True and report.steps[0].approximate is True


def test_a_model_with_an_exact_offline_family_counts_with_it(tmp_path: Path) -> None:
    report = check(_ws(tmp_path, {"model": "llama-3.1-8b-instruct"}))
    assert report.tokenizer == "llama3"
    assert report.approximate is False and report.steps[0].approximate is False


def test_an_explicit_tokenizer_wins_over_the_models(tmp_path: Path) -> None:
    report = check(_ws(tmp_path, {"model": "gpt-4o", "tokenizer": "cl100k_base"}))
    assert report.tokenizer == "cl100k_base" and report.approximate is False


def test_a_typed_window_above_the_registry_wins_with_a_warning(tmp_path: Path) -> None:
    report = check(_ws(tmp_path, {"model": "gpt-4o", "model_context_window": 200000}))
    d = only(report, MODEL_CONTRADICTED)
    assert d.severity is Severity.WARNING and d.file.endswith("config.json")
    assert d.message == (f"gpt-4o has a window of 128,000 tokens (registry {DATE});"
                         " config.json says 200000")
    assert report.window is not None and report.window.value == 200_000
    assert report.window.source == "config.json model_context_window"


def test_a_typed_ceiling_above_the_registry_is_flagged_too(tmp_path: Path) -> None:
    report = check(_ws(tmp_path, {"model": "gpt-4o", "model_max_output_tokens": 32000}))
    assert only(report, MODEL_CONTRADICTED).message == (
        f"gpt-4o has an output ceiling of 16,384 tokens (registry {DATE}); config.json"
        " says 32000")


def test_a_typed_number_below_the_registry_is_a_silent_restriction(tmp_path: Path) -> None:
    report = check(_ws(tmp_path, {"model": "gpt-4o", "model_context_window": 1500}))
    assert codes_of(report) == [CONTRACT_VIOLATION]  # 1600 > 1500, checked against 1500
    assert report.steps[0].headroom == 1500 - 1600


def test_an_unknown_model_gets_a_suggestion_and_needs_a_typed_window(tmp_path: Path) -> None:
    report = check(_ws(tmp_path, {"model": "gpt4o"}))
    warning = only(report, MODEL_UNKNOWN)
    assert warning.message == (f"model 'gpt4o' is not in the model registry ({DATE}): its"
                               " limits come from config.json only; did you mean 'gpt-4o'?")
    assert only(report, WINDOW_INVALID).severity is Severity.ERROR
    assert report.window is None and not report.steps[0].fits


def test_an_unknown_model_with_a_typed_window_is_only_a_warning(tmp_path: Path) -> None:
    report = check(_ws(tmp_path, {"model": "my-finetune", "model_context_window": 4096}))
    assert codes_of(report) == [MODEL_UNKNOWN]
    assert report.window is not None and report.window.value == 4096


def test_a_step_with_its_own_model_uses_its_window_and_ceiling(tmp_path: Path) -> None:
    steps = """\
  - id: route
    type: call_model
    model: gpt-4
    prompt_key: sys
    max_output_tokens: 100
  - id: answer
    type: call_model
    prompt_key: sys
    max_output_tokens: 9000
"""
    report = check(_ws(tmp_path, {"model": "gpt-4o"}, steps, context=8000))
    route, answer = report.steps
    # gpt-4: 8,192 window; 10 + 8000 + 100 + 90 = 8200 > 8192
    assert (route.model, route.window.value, route.total, route.headroom) == (
        "gpt-4", 8192, 8200, -8)
    assert route.window.source == f"model gpt-4 (registry {DATE})"
    assert (answer.model, answer.window.value, answer.headroom) == (
        None, 128_000, 128_000 - (10 + 8000 + 9000 + 90))
    violation = only(report, CONTRACT_VIOLATION)
    assert violation.step == "route" and "> 8192 (over by 8)" in violation.message
    # the clamp lowers the shared context for the small model's step: 8192 - 10 - 100 - 90
    assert report.clamp.context_after == 7992


def test_a_step_model_above_its_own_ceiling(tmp_path: Path) -> None:
    steps = """\
  - id: route
    type: call_model
    model: gpt-4
    prompt_key: sys
    max_output_tokens: 9000
"""
    report = check(_ws(tmp_path, {"model": "gpt-4o"}, steps))
    d = only(report, OUTPUT_ABOVE_CEILING)
    assert d.message == (f"step 'route' asks for 9000 output tokens (max_output_tokens), above"
                         f" the model's ceiling 8192 (model gpt-4 (registry {DATE}))")


def test_an_unknown_step_model_keeps_the_pipelines_limits(tmp_path: Path) -> None:
    steps = """\
  - id: route
    type: call_model
    model: claude-sonet-4-5
    prompt_key: sys
    max_output_tokens: 100
"""
    report = check(_ws(tmp_path, {"model": "gpt-4o"}, steps))
    d = only(report, MODEL_UNKNOWN)
    assert d.step == "route" and d.range.start.line == 6  # the model value in p.yaml
    assert d.message.endswith("did you mean 'claude-sonnet-4-5'?")
    assert report.steps[0].window.value == 128_000


def test_a_serving_limit_that_binds(tmp_path: Path) -> None:
    report = check(_ws(tmp_path, {"model": "llama-3.1-8b-instruct",
                                  "serving": {"num_ctx": 2048}}))
    note = only(report, SERVING_BINDS)
    assert note.severity is Severity.INFORMATION
    assert note.message == (
        "serving.num_ctx 2,048 is below llama-3.1-8b-instruct's window of 131,072 tokens"
        f" (model llama-3.1-8b-instruct (registry {DATE})): the server's limit is the window"
        " every step is checked against")
    assert report.window is not None and report.window.value == 2048
    assert report.window.source == (
        f"config.json serving.num_ctx (below 131072 from model llama-3.1-8b-instruct"
        f" (registry {DATE}))")
    assert report.steps[0].headroom == 2048 - 1600


def test_the_smallest_serving_limit_binds_and_a_larger_one_is_silent(tmp_path: Path) -> None:
    report = check(_ws(tmp_path, {"model": "gpt-4", "serving": {"max_model_len": 100000}}))
    assert report.diagnostics == []
    assert report.window is not None and report.window.value == 8192
    report = check(_ws(tmp_path, {"model_context_window": 8000,
                                  "serving": {"max_model_len": 4000, "num_ctx": 3000}}))
    assert report.window is not None and report.window.value == 3000
    assert only(report, SERVING_BINDS).message.startswith(
        "serving.num_ctx 3,000 is below the model's window of 8,000 tokens (config.json"
        " model_context_window)")


def test_a_config_without_model_behaves_as_before(tmp_path: Path) -> None:
    report = check(_ws(tmp_path, {"model_context_window": 4096}))
    assert report.diagnostics == [] and report.model is None and report.approximate is False
    assert report.window is not None and report.window.source == "config.json model_context_window"
    assert report.tokenizer == "cl100k_base"


def test_the_target_option_checks_against_the_target(tmp_path: Path) -> None:
    path = _ws(tmp_path, {"model": "gpt-4o", "model_context_window": 100000,
                          "serving": {"num_ctx": 4096}})
    report = check(path, target="claude-sonnet-4-5")
    # the target's registry window; typed numbers and serving do not apply
    # (Anthropic publishes 200,000 / 64,000 for Claude Sonnet 4.5)
    assert report.window is not None and report.window.value == 200_000
    assert report.output_ceiling is not None and report.output_ceiling.value == 64_000
    assert report.approximate is True and report.target == "claude-sonnet-4-5"
    report = check(path, target="llama-3.1-8b-instruct")
    assert report.window is not None and report.window.value == 131_072
    assert report.approximate is False and report.tokenizer == "llama3"


def test_a_step_model_that_is_not_a_name_is_an_error_at_the_value(tmp_path: Path) -> None:
    steps = """\
  - id: route
    type: call_model
    model: 42
    prompt_key: sys
    max_output_tokens: 100
"""
    report = check(_ws(tmp_path, {"model": "gpt-4o"}, steps))
    d = only(report, INVALID_VALUE)
    assert d.range.start.line == 6 and d.step == "route"
    assert d.message == ("step model must be a model name (a string), got 42; the step is"
                         " checked with the pipeline's limits")
    assert report.steps[0].window.value == 128_000


def test_the_clamp_plan_makes_a_step_fit_its_own_models_window(tmp_path: Path) -> None:
    from budgetlens.contract.plan import apply_plan, clamp_plan
    from budgetlens.files import DiskFiles

    steps = """\
  - id: route
    type: call_model
    model: gpt-4
    prompt_key: sys
    max_output_tokens: 100
"""
    path = _ws(tmp_path, {"model": "gpt-4o"}, steps, context=8000)
    report = check(path)
    texts = apply_plan(clamp_plan(report, files=DiskFiles()), DiskFiles())
    # gpt-4's 8,192 window: 8192 - 10 - 100 - 90 = 7992
    assert "max_context_tokens: 7992" in texts[str(path)]
    path.write_text(texts[str(path)], "utf-8")
    again = check(path)
    assert again.steps[0].fits and again.steps[0].headroom == 0
    assert not clamp_plan(again, files=DiskFiles()).edits


def test_a_step_model_without_an_exact_tokenizer_is_marked_approximate(tmp_path: Path) -> None:
    steps = """\
  - id: route
    type: call_model
    model: claude-sonnet-4-5
    prompt_key: sys
    max_output_tokens: 100
"""
    report = check(_ws(tmp_path, {"model": "gpt-4o"}, steps))
    assert report.approximate is False and report.steps[0].approximate is True
    report = check(_ws(tmp_path, {"model": "gpt-4o", "tokenizer": "o200k_base"}, steps))
    assert report.steps[0].approximate is False  # an explicit tokenizer counts exactly


def test_the_violation_names_the_registry_as_the_windows_origin(tmp_path: Path) -> None:
    steps = """\
  - id: route
    type: call_model
    model: gpt-4
    prompt_key: sys
    max_output_tokens: 100
"""
    report = check(_ws(tmp_path, {"model": "gpt-4o"}, steps, context=8000))
    related = {r.message for r in only(report, CONTRACT_VIOLATION).related}
    assert f"window: 8192 from model gpt-4 (registry {DATE})" in related


def test_an_approximate_family_named_as_the_tokenizer_marks_counts_approximate(
        tmp_path: Path) -> None:
    report = check(_ws(tmp_path, {"model_context_window": 8000, "tokenizer": "gemini_approx"}))
    assert report.tokenizer == "gemini_approx"
    assert report.approximate is True
    report = check(_ws(tmp_path, {"model_context_window": 8000, "tokenizer": "o200k_base"}))
    assert report.approximate is False
