"""fit_request and check_request: clamp, trim, refusal and their log records, with every
expected number computed here (the cookbook's rules over plain tiktoken, reference.py)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from budgetlens import RequestDoesNotFit, RequestFit, check_request, fit_request
from budgetlens.request.limits import UnknownModel

from ..contract.helpers import check, make_workspace
from .reference import encoding, messages_tokens

O200K = encoding("o200k_base")
SYSTEM = {"role": "system", "content": "You are the support assistant of a shop. " * 20}


def _turn(i: int, words: int) -> list[dict[str, Any]]:
    return [{"role": "user", "content": f"Question {i}: " + "where is my parcel? " * words},
            {"role": "assistant", "content": f"Answer {i}: " + "it is on its way. " * words}]


def _records(caplog: pytest.LogCaptureFixture, event: str) -> list[dict[str, Any]]:
    return [r.budgetlens for r in caplog.records  # type: ignore[attr-defined]
            if r.name == "budgetlens" and getattr(r, "budgetlens", {}).get("event") == event]


def test_a_fitting_request_is_sent_as_it_is(caplog: pytest.LogCaptureFixture) -> None:
    messages = [SYSTEM, *_turn(1, 10), {"role": "user", "content": "thanks"}]
    with caplog.at_level(logging.WARNING, logger="budgetlens"):
        fit = fit_request("gpt-4o", messages, max_tokens=1000)
    assert isinstance(fit, RequestFit) and fit.fits and not fit.trimmed and not fit.clamped
    assert fit.messages == tuple(messages) and fit.output_tokens == 1000
    assert fit.input_tokens == messages_tokens(messages, O200K)
    assert fit.request_kwargs() == {"messages": messages, "max_tokens": 1000}
    assert caplog.records == []


def test_max_tokens_is_clamped_to_the_served_window(caplog: pytest.LogCaptureFixture) -> None:
    messages = [SYSTEM, *_turn(1, 40), {"role": "user", "content": "and now?"}]
    tokens = messages_tokens(messages, O200K)
    window = tokens + 700  # 700 tokens left for the reply; half of 1000 (the floor) fits
    with caplog.at_level(logging.WARNING, logger="budgetlens"):
        fit = fit_request("gpt-4o", messages, max_tokens=1000,
                          serving={"max_model_len": window})
    assert fit.clamped and not fit.trimmed and fit.output_tokens == 700
    assert fit.window == window and fit.input_tokens == tokens
    assert fit.request_kwargs()["max_tokens"] == 700
    [record] = _records(caplog, "clamp")
    assert (record["parameter"], record["before"], record["after"]) == ("max_tokens", 1000, 700)
    assert f"leave 700 of the {window:,}-token window (serving max_model_len" in record["reason"]
    assert caplog.records[0].levelno == logging.WARNING
    assert caplog.records[0].getMessage().startswith(
        "gpt-4o: max_tokens clamped from 1,000 to 700: input ")


def test_the_output_ceiling_clamps_and_reasoning_models_name_their_parameter(
        caplog: pytest.LogCaptureFixture) -> None:
    messages = [{"role": "user", "content": "Write a long story."}]
    with caplog.at_level(logging.WARNING, logger="budgetlens"):
        fit = fit_request("gpt-4o", messages, max_tokens=50_000)
    assert fit.output_tokens == 16_384  # gpt-4o's ceiling in the registry
    assert "output ceiling is 16,384 tokens" in _records(caplog, "clamp")[0]["reason"]
    o3 = fit_request("o3", messages, max_tokens=1000)
    assert o3.output_param == "max_completion_tokens"
    assert o3.request_kwargs() == {"messages": messages, "max_completion_tokens": 1000}
    assert fit_request("gpt-5-mini", messages).output_param == "max_completion_tokens"
    assert fit_request("claude-sonnet-4-5", messages).output_param == "max_tokens"
    assert fit_request("gemini-2.5-pro", messages).output_param == "max_output_tokens"
    # no max_tokens: nothing to clamp; the room left is reported, nothing sent
    free = fit_request("gpt-4o", messages, serving={"num_ctx": 4096})
    assert free.output_tokens == 4096 - messages_tokens(messages, O200K)
    assert "max_tokens" not in free.request_kwargs()


def test_history_is_trimmed_oldest_turns_first_with_tool_calls_and_results_together(
        caplog: pytest.LogCaptureFixture) -> None:
    call = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function",
         "function": {"name": "track", "arguments": json.dumps({"parcel": "X1"})}}]}
    result = {"role": "tool", "tool_call_id": "c1", "content": "in Lyon " * 300}
    first = [{"role": "user", "content": "Track X1 " * 200}, call, result,
             {"role": "assistant", "content": "It is in Lyon."}]
    second, third = _turn(2, 60), _turn(3, 60)
    last = {"role": "user", "content": "When does it arrive?"}
    messages = [SYSTEM, *first, *second, *third, last]
    keep = [SYSTEM, *third, last]
    # the window leaves exactly the floor (500 of max_tokens 1000) once turns 1 and 2 are
    # dropped: dropping turn 1 alone is not enough
    window = messages_tokens(keep, O200K) + 500
    assert messages_tokens([SYSTEM, *second, *third, last], O200K) + 500 > window
    with caplog.at_level(logging.WARNING, logger="budgetlens"):
        fit = fit_request("gpt-4o", messages, max_tokens=1000, serving={"num_ctx": window},
                          margin=0)  # tool calls are counted ≈: no default margin here
    assert list(fit.messages) == keep
    assert list(fit.dropped) == [*first, *second]  # oldest first, the tool exchange whole
    assert fit.input_tokens == messages_tokens(keep, O200K) and fit.output_tokens == 500
    assert [c.index for c in fit.breakdown.messages] == [0, 7, 8, 9]  # indices as given
    [trim] = _records(caplog, "trim")
    assert trim["messages_dropped"] == 6
    assert (trim["before"], trim["after"]) == (messages_tokens(messages, O200K),
                                               fit.input_tokens)
    assert "to leave at least 500 output tokens" in trim["reason"]
    [clamp] = _records(caplog, "clamp")
    assert (clamp["before"], clamp["after"]) == (1000, 500)


def test_the_last_user_turn_and_what_follows_it_are_kept() -> None:
    # an agent mid-loop: the last user message, the call it made and its result stay
    call = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c9", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}
    tail = [{"role": "user", "content": "go"}, call,
            {"role": "tool", "tool_call_id": "c9", "content": "done"}]
    messages = [SYSTEM, *_turn(1, 100), *tail]
    window = messages_tokens([SYSTEM, *tail], O200K) + 1
    fit = fit_request("gpt-4o", messages, serving={"num_ctx": window}, margin=0)
    assert list(fit.messages) == [SYSTEM, *tail] and fit.output_tokens == 1


def test_a_request_that_cannot_fit_is_refused_with_its_breakdown(
        caplog: pytest.LogCaptureFixture) -> None:
    messages = [SYSTEM, *_turn(1, 20), {"role": "user", "content": "summarise " * 3000}]
    total = messages_tokens(messages, O200K)
    kept = messages_tokens([SYSTEM, messages[-1]], O200K)
    window = kept + 100  # the floor is 500 (half of max_tokens): 400 short
    with caplog.at_level(logging.WARNING, logger="budgetlens"), \
            pytest.raises(RequestDoesNotFit) as info:
        fit_request("gpt-4o", messages, max_tokens=1000, serving={"max_model_len": window})
    fit = info.value.fit
    assert fit.fits is False and fit.over_by == 400 and fit.input_tokens == kept
    assert info.value.breakdown.total == total
    assert [c.total for c in fit.breakdown.messages] == [
        messages_tokens([m], O200K) - 3 for m in messages]  # each without the reply priming
    assert fit.breakdown.system == messages_tokens([SYSTEM], O200K) - 3
    assert f"does not fit even with all 1 history turn(s) dropped ({kept:,} of {total:,}" \
        in str(info.value)
    assert str(info.value).endswith(", by 400")
    assert caplog.records == []  # nothing was trimmed or clamped
    with pytest.raises(RequestDoesNotFit):  # trim=False refuses what a trim would fit
        fit_request("gpt-4o", messages[:1] + _turn(1, 400) + messages[-1:], trim=False,
                    max_tokens=1000, serving={"max_model_len": window + 400})


def test_the_input_limit_below_the_window_is_enforced() -> None:
    # gpt-5: a 400,000-token window but 272,000 input tokens (registry)
    big = "word " * 100_000
    messages = [{"role": "user", "content": big}, {"role": "assistant", "content": big},
                {"role": "user", "content": big}]
    assert messages_tokens(messages, O200K) > 272_000
    fit = fit_request("gpt-5", messages, max_tokens=10_000, margin=0)
    assert fit.trimmed and list(fit.messages) == messages[2:]
    assert fit.max_input == 272_000 and fit.window == 400_000


def test_bad_settings_are_errors_not_silence() -> None:
    from budgetlens.contract.limits import SERVING_KEYS
    from budgetlens.request.limits import SERVING_KEYS as REQUEST_SERVING_KEYS

    assert REQUEST_SERVING_KEYS == SERVING_KEYS  # config.json's serving keys, the same
    with pytest.raises(ValueError, match="did you mean 'max_model_len'"):
        fit_request("gpt-4o", [], serving={"max_modle_len": 8192})
    with pytest.raises(ValueError, match="did you mean 'num_ctx'"):
        fit_request("gpt-4o", [], serving={"Num-Ctx": 8192})
    # a key of its own (not close to a limit) is allowed
    assert fit_request("gpt-4o", [], serving={"n_gpu_layers": 33}).window == 128_000
    with pytest.raises(UnknownModel, match="did you mean 'gpt-4o'"):
        fit_request("gpt4o", [])
    local = fit_request("my-local-model", [{"role": "user", "content": "hi"}], window=2048)
    assert local.window == 2048 and local.approximate is True


def test_check_request_uses_the_steps_model_tokenizer_window_and_history(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    make_workspace(tmp_path, config={"model": "gpt-4o", "serving": {"max_model_len": 6000},
                                     "format_overhead_tokens": 0},
                   pipelines={"p.yaml": "settings:\n  max_context_tokens: 100\n"
                              "  max_history_tokens: 1200\n"
                              "  budget_safety_margin_tokens: 50\nsteps:\n"
                              "  - id: chat\n    type: call_model\n    prompt_key: sys\n"
                              "    use_history: true\n    max_output_tokens: 800\n"},
                   prompts={"sys.txt": "Be brief."})
    report = check(tmp_path / "pipelines" / "p.yaml")
    [step] = report.steps
    assert step.window.value == 6000 and step.history.value == 1200
    old, recent = _turn(1, 60), _turn(2, 60)
    last = {"role": "user", "content": "ok?"}
    messages = [{"role": "system", "content": "Be brief."}, *old, *recent, last]
    history = messages_tokens([*old, *recent], O200K) - 3
    assert history > 1200 >= messages_tokens(recent, O200K) - 3
    with caplog.at_level(logging.WARNING, logger="budgetlens"):
        fit = check_request(step, messages, report=report)
    assert list(fit.messages) == [messages[0], *recent, last]
    assert fit.window == 6000 and fit.output_tokens == 800 and fit.margin == 50
    assert fit.tokenizer == "o200k_base" and fit.model == "step 'chat' (gpt-4o)"
    [trim] = _records(caplog, "trim")
    assert "max_history_tokens (1,200)" in trim["reason"]
    assert _records(caplog, "clamp") == []


def test_check_request_counts_a_llama_step_with_the_llama_tokenizer(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ..tokens.references import reference

    # the chat template's package taken as missing: the ≈ framing (the template path:
    # test_chat_templates.py)
    monkeypatch.setattr("budgetlens.request.chat_template.available", lambda name: False)

    make_workspace(tmp_path, config={"model": "gpt-4o", "serving": {"num_ctx": 8192},
                                     "format_overhead_tokens": 0},
                   pipelines={"p.yaml": "settings:\n  max_context_tokens: 100\n"
                              "  budget_safety_margin_tokens: 0\nsteps:\n"
                              "  - id: route\n    type: call_model\n    prompt_key: sys\n"
                              "    model: llama-3.1-8b-instruct\n    max_output_tokens: 16\n"},
                   prompts={"sys.txt": "Route."})
    report = check(tmp_path / "pipelines" / "p.yaml")
    [step] = report.steps
    assert report.tokenizer == "o200k_base" and step.model == "llama-3.1-8b-instruct"
    messages = [{"role": "system", "content": "Route."},
                {"role": "user", "content": "Wo ist mein Paket? 📦"}]
    fit = check_request(step, messages, report=report)
    llama = reference("llama3")
    # ≈ Llama 3 framing: 4 + role per message, 5 for the reply and <|begin_of_text|>
    assert fit.input_tokens == sum(4 + len(llama(m["role"])) + len(llama(m["content"]))
                                   for m in messages) + 5
    assert fit.tokenizer == "llama3" and fit.approximate is True
    assert fit.window == 8192 and fit.output_tokens == 16
    assert fit.margin == -(-fit.input_tokens * 12 // 100) + 128  # the step's margin is 0: 12% + 128


def test_without_a_user_message_the_last_message_is_kept() -> None:
    messages = [SYSTEM, {"role": "assistant", "content": "Hello! " * 300},
                {"role": "assistant", "content": "How can I help?"}]
    window = messages_tokens([SYSTEM, messages[2]], O200K) + 10
    fit = fit_request("gpt-4o", messages, serving={"num_ctx": window})
    assert list(fit.messages) == [SYSTEM, messages[2]] and fit.output_tokens == 10


def test_the_output_limit_keeps_the_name_the_request_uses(
        caplog: pytest.LogCaptureFixture) -> None:
    messages = [SYSTEM, {"role": "user", "content": "and now?"}]
    window = messages_tokens(messages, O200K) + 300
    with caplog.at_level(logging.WARNING, logger="budgetlens"):
        fit = fit_request("gpt-4o", messages, max_tokens=1000, window=window,
                          min_output=1, output_param="max_output_tokens")
    assert fit.clamped and fit.output_param == "max_output_tokens"
    assert fit.request_kwargs() == {"messages": messages, "max_output_tokens": 300}
    assert caplog.records[0].getMessage().startswith(
        "gpt-4o: max_output_tokens clamped from 1,000 to 300: ")
