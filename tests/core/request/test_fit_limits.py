"""fit_request and check_request against what the check knows beyond the window: a
gateway's sourced per-request cap (models/gateways.json), a model variant's window
(models/variants.json) and per-model serving. Every expected number is computed here with
plain tiktoken (reference.py) or read from the tables' own text by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from budgetlens import RequestDoesNotFit, check_request, fit_request

from ..contract.helpers import check, codes_of, make_workspace
from .reference import encoding, messages_tokens, n

O200K = encoding("o200k_base")
GITHUB_GPT_4O = 8000  # gateways.json: github-models, gpt-4o (actions/ai-inference#128)


def _words(k: int) -> str:
    """A text of exactly ``k`` o200k tokens (``word`` and ``k - 1`` times `` word``)."""
    text = "word" + " word" * (k - 1)
    assert n(text, O200K) == k
    return text


def _chat(system: str, user: str) -> list[dict[str, Any]]:
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def test_a_gateway_cap_refuses_a_request_the_model_would_take() -> None:
    messages = _chat("Answer.", _words(8100))
    tokens = messages_tokens(messages, O200K)  # 3 + 1 + 2, 3 + 1 + 8100, 3 = 8113
    assert tokens == 8113
    assert fit_request("gpt-4o", messages, max_tokens=100).fits  # 128k window: fits
    with pytest.raises(RequestDoesNotFit) as raised:
        fit_request("gpt-4o", messages, max_tokens=100, gateway="github-models")
    fit = raised.value.fit
    assert fit.max_input == GITHUB_GPT_4O and fit.over_by == tokens - GITHUB_GPT_4O
    assert "github-models" in fit.message and "actions/ai-inference/issues/128" in fit.message


def test_a_gateway_cap_trims_the_oldest_turns_to_fit() -> None:
    turns = [m for i in range(3) for m in (
        {"role": "user", "content": _words(3000)}, {"role": "assistant", "content": "ok"})]
    messages = [{"role": "system", "content": "Answer."}, *turns,
                {"role": "user", "content": "and now?"}]
    fit = fit_request("gpt-4o", messages, max_tokens=100, gateway="github-models")
    # each turn: (3 + 1 + 3000) + (3 + 1 + 1) = 3009; all of it 6 + 3 * 3009 + 3 + 1 + 3 + 3
    # = 9043 > 8000; one turn dropped: 6034 <= 8000
    assert messages_tokens(messages, O200K) == 9043
    assert fit.fits and list(fit.messages) == [messages[0], *turns[2:], messages[-1]]
    assert fit.input_tokens == 9043 - 3009 and fit.output_tokens == 100


def test_gateway_names_are_checked_and_an_unrecorded_model_is_not_capped() -> None:
    messages = _chat("Answer.", _words(9000))
    with pytest.raises(ValueError, match="gateway 'github-model' is not in the gateway table"):
        fit_request("gpt-4o", messages, gateway="github-model")
    # gateways.json records no cap for gpt-4o-mini: the model's own limits only
    fit = fit_request("gpt-4o-mini", messages, max_tokens=100, gateway="github-models")
    assert fit.fits and fit.max_input is None


def test_a_variant_sets_the_window_and_drops_the_registry_input_limit() -> None:
    # variants.json: claude-sonnet-4-5 "1m" has a 1,000,000-token window; the registry's
    # entry has window 200,000 and max_input 200,000
    messages = _chat("Answer.", "Hello there.")
    fit = fit_request("claude-sonnet-4-5", messages, variant="1m")
    assert fit.window == 1_000_000 and fit.max_input is None
    assert fit_request("claude-sonnet-4-5", messages).window == 200_000
    with pytest.raises(ValueError, match="variant '2m' is not a variant of claude-sonnet-4-5"
                                         r" \(variants: 1m"):
        fit_request("claude-sonnet-4-5", messages, variant="2m")
    # serving still lowers a variant's window
    served = fit_request("claude-sonnet-4-5", messages, variant="1m",
                         serving={"max_model_len": 300_000})
    assert served.window == 300_000


def _gateway_pipeline(root: Path, context: int) -> Any:
    # format overhead 11: the cookbook's framing of a system and a user message and the
    # reply priming (3 + 1 for "system", 3 + 1 for "user", 3), so check and run time count
    # the same request
    make_workspace(root, config={"model": "gpt-4o", "gateway": "github-models",
                                 "format_overhead_tokens": 11},
                   pipelines={"p.yaml": f"settings:\n  max_context_tokens: {context}\n"
                              "steps:\n  - id: answer\n    type: call_model\n"
                              "    prompt_key: sys\n    user_parts:\n"
                              "      template: '{context}'\n    max_output_tokens: 500\n"},
                   prompts={"sys.txt": "Answer from the context."})
    return check(root / "pipelines" / "p.yaml")


@pytest.mark.parametrize("over", [0, 1])
def test_check_request_agrees_with_the_check_on_a_gateway_cap(tmp_path: Path,
                                                              over: int) -> None:
    system = "Answer from the context."
    # 8000 = system + context + 11 (framing) + 128 (the default margin): fits exactly
    context = GITHUB_GPT_4O - n(system, O200K) - 11 - 128 + over
    report = _gateway_pipeline(tmp_path, context)
    [step] = report.steps
    assert ("BL067" in codes_of(report)) is bool(over)
    assert step.gateway_cap is not None and step.gateway_cap.value == GITHUB_GPT_4O
    messages = _chat(system, _words(context))
    assert messages_tokens(messages, O200K) + 128 == GITHUB_GPT_4O + over
    if over:
        with pytest.raises(RequestDoesNotFit) as raised:
            check_request(step, messages, report=report)
        assert raised.value.fit.over_by == 1
    else:
        fit = check_request(step, messages, report=report)
        assert fit.fits and fit.input_tokens + fit.margin == GITHUB_GPT_4O
        assert fit.max_input == GITHUB_GPT_4O


def test_check_request_takes_the_steps_variant(tmp_path: Path) -> None:
    make_workspace(tmp_path, config={"model": "gpt-4o"},
                   pipelines={"p.yaml": "settings:\n  max_context_tokens: 300000\n"
                              "steps:\n  - id: long\n    type: call_model\n"
                              "    prompt_key: sys\n    model: claude-sonnet-4-5\n"
                              "    variant: 1m\n    max_output_tokens: 1000\n"},
                   prompts={"sys.txt": "Summarise."})
    report = check(tmp_path / "pipelines" / "p.yaml")
    [step] = report.steps
    assert step.fits and step.window.value == 1_000_000 and step.max_input is None
    # about 250,000 tokens: over the 200,000 of the model without the variant
    messages = _chat("Summarise.", "Lorem ipsum dolor sit amet. " * 40_000)
    fit = check_request(step, messages, report=report)
    assert fit.fits and fit.window == 1_000_000 and fit.max_input is None
    assert fit.input_tokens > 200_000
    with pytest.raises(RequestDoesNotFit):
        fit_request("claude-sonnet-4-5", messages, max_tokens=1000)


def test_check_request_takes_config_serving_per_model_and_the_steps_own(
        tmp_path: Path) -> None:
    llama = "llama-3.1-8b-instruct"
    make_workspace(tmp_path, config={"model": "gpt-4o", "serving": {llama: {"num_ctx": 4096}}},
                   pipelines={"p.yaml": "settings:\n  max_context_tokens: 1000\n"
                              "steps:\n  - id: route\n    type: call_model\n"
                              f"    prompt_key: sys\n    model: {llama}\n"
                              "    max_output_tokens: 100\n"
                              "  - id: small\n    type: call_model\n"
                              f"    prompt_key: sys\n    model: {llama}\n"
                              "    serving: {num_ctx: 2048}\n    max_output_tokens: 100\n"
                              "  - id: answer\n    type: call_model\n    prompt_key: sys\n"
                              "    max_output_tokens: 100\n"},
                   prompts={"sys.txt": "Route."})
    report = check(tmp_path / "pipelines" / "p.yaml")
    route, small, answer = report.steps
    assert (route.window.value, small.window.value, answer.window.value) == (4096, 2048,
                                                                             128_000)
    messages = _chat("Route.", "Where is my parcel?")
    assert [check_request(s, messages, report=report).window
            for s in report.steps] == [4096, 2048, 128_000]
