"""The tokens a chat request costs: its messages with their chat framing, its tool
definitions and its response schema.

**OpenAI** (the rules of OpenAI's cookbook "How to count tokens with tiktoken"):

- *messages* (its section 6, ``num_tokens_from_messages``): every message costs 3 tokens of
  framing plus the tokens of each of its string values (the ``role`` too, and any other
  string key such as ``tool_call_id``); a ``name`` costs 1 more; every reply is primed with
  ``<|start|>assistant<|message|>``: 3 tokens. The cookbook states the rule for
  ``gpt-3.5-turbo``, ``gpt-4`` (``-turbo``), ``gpt-4o`` and ``gpt-4o-mini``: counts for those
  models are exact by it. Other OpenAI chat models (``gpt-4.1``, ``gpt-5``, the ``o`` series)
  are counted by the same rule and marked approximate (≈): the cookbook gives none for them.
- *content as a list of parts*: the tokens of each text part, summed; one text part is the
  same text as a string content (exact); several parts are ≈ (how the server joins them is
  not published), and non-text parts (images, audio) are not counted (≈).
- *tool definitions* (its section 7, ``num_tokens_for_tools``): per function 7 tokens
  (``gpt-4o``, ``gpt-4o-mini``; 10 for ``gpt-3.5-turbo`` and ``gpt-4``) plus the tokens of
  ``name:description`` (one trailing ``.`` of the description dropped); when it has
  properties, 3 more, then per property 3 plus the tokens of ``key:type:description`` (one
  trailing ``.`` dropped) and, with an ``enum``, -3 plus per item 3 and the item's tokens;
  12 tokens end the list. A definition the rule does not cover (no description, a nested
  object, a list of types, a non-function tool) is counted by the same rule, nested
  properties included, and marked ≈.
- *tool calls and tool results* (≈, the cookbook gives no rule): a ``tool_calls`` entry of
  an assistant message costs 3 tokens (a message's framing) plus the tokens of the
  function's name and of its ``arguments`` text; a ``role: tool`` message is a message like
  any other (its ``tool_call_id`` is one of its string values).
- *response_format* (≈, the cookbook gives no rule): a ``json_schema`` is counted as one
  function definition of the tools rule (its ``name`` and ``description``, its schema's
  properties as the function's parameters, nested ones included) with the 12 closing
  tokens; ``json_object`` and ``text`` add nothing.

**Llama 3, Qwen, DeepSeek, Mistral** are counted from their own chat templates when the
family's extra is installed (``request.chat_template``: exact); without it, or for content
lists, as the other families below (≈).

**Other families** (≈ always): each message costs
a documented overhead plus its role's tokens where the template writes the role, the reply
a priming overhead (see ``FRAMINGS``); tool definitions and a response schema cost the
tokens of their compact JSON text. Claude adds a tool-use system prompt when tools are given;
Anthropic's "tool use pricing and tokens" page lists 159 to 530 tokens by model and
``tool_choice``: the largest, 530, is counted (an upper bound).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from budgetlens.contract.frozen import quick_init

#: A message of a chat request (OpenAI's shape: ``role``, ``content``, ``name``,
#: ``tool_calls``, ``tool_call_id``).
Message = Mapping[str, Any]
Count = Callable[[str], int]


@dataclass(frozen=True)
class ToolConstants:
    """The constants of the cookbook's ``num_tokens_for_tools``."""

    func_init: int
    prop_init: int = 3
    prop_key: int = 3
    enum_init: int = -3
    enum_item: int = 3
    func_end: int = 12


@dataclass(frozen=True)
class Framing:
    """How a family frames a chat: per-message, per-name and reply-priming tokens."""

    family: str
    per_message: int
    per_name: int
    reply: int
    role_counted: bool
    """The role's text is counted (the template writes it out)."""
    exact: bool
    """Messages are counted by a published rule (else ≈)."""
    rule: str
    """Where the numbers come from, in one line."""
    tools: ToolConstants | None = None
    """The cookbook's tool rule (OpenAI); None: tools cost their JSON text (≈)."""
    tools_exact: bool = False
    tool_prompt: int = 0
    """A system prompt the provider adds when tools are given (≈)."""


_COOKBOOK = "OpenAI cookbook 'How to count tokens with tiktoken'"
FRAMINGS: dict[str, Framing] = {f.family: f for f in (
    Framing("openai", 3, 1, 3, True, True, f"{_COOKBOOK}: 3 per message, +1 per name,"
            " 3 to prime the reply", ToolConstants(7), True),
    Framing("claude", 3, 0, 3, True, False, "≈ Anthropic publishes no framing: 3 per message,"
            " 3 for the reply", tool_prompt=530),
    Framing("gemini", 3, 0, 3, True, False, "≈ Google publishes no framing: 3 per message,"
            " 3 for the reply"),
    Framing("llama3", 4, 0, 5, True, False, "≈ Llama 3 template: <|start_header_id|>role"
            "<|end_header_id|>\\n\\n...<|eot_id|> per message (4 + role), the reply header,"
            " <|begin_of_text|>"),
    Framing("qwen", 4, 0, 3, True, False, "≈ ChatML: <|im_start|>role\\n...<|im_end|>\\n per"
            " message (4 + role), <|im_start|>assistant\\n for the reply"),
    Framing("deepseek", 2, 0, 2, False, False, "≈ DeepSeek template: a role token and an end"
            " token per message, <｜begin▁of▁sentence｜> and <｜Assistant｜> for the reply"),
    Framing("mistral", 2, 0, 1, False, False, "≈ Mistral template: [INST]...[/INST] per turn,"
            " </s> per reply, <s>"),
    Framing("generic", 4, 1, 3, True, False, "≈ no chat template known for this model: 4 per"
            " message + role, 3 for the reply"),
)}
def bare_name(model: str) -> str:
    """``openai/gpt-4o`` -> ``gpt-4o`` (lower case)."""
    return model.strip().lower().rsplit("/", 1)[-1]


def cookbook_func_init(model: str) -> int | None:
    """The cookbook's ``func_init`` for a model it names (``gpt-4o``, ``gpt-4o-mini``: 7;
    ``gpt-3.5-turbo``, ``gpt-4``: 10), dated versions included; None for any other model."""
    name = bare_name(model)
    if name.startswith("gpt-4o"):
        return 7
    if name.startswith("gpt-3.5-turbo") or name == "gpt-4" or name.startswith("gpt-4-"):
        return 10
    return None


def openai_framing(model: str, encoding: str) -> Framing:
    """The framing of OpenAI model ``model`` counted with ``encoding``: exact by the cookbook
    for the models it names, ≈ by the same rule for the others."""
    base = FRAMINGS["openai"]
    func_init = cookbook_func_init(model)
    if func_init is not None:
        return Framing(base.family, 3, 1, 3, True, True, base.rule, ToolConstants(func_init),
                       True)
    return Framing(base.family, 3, 1, 3, True, False,
                   f"≈ {base.rule} (the cookbook names no rule for {bare_name(model)})",
                   ToolConstants(10 if encoding == "cl100k_base" else 7), False)


# ------------------------------------------------------------------------------ messages
@quick_init  # one per message of every request: its fields set in one call
@dataclass(frozen=True)
class MessageCost:
    """What one message costs: its text and its framing."""

    index: int
    role: str
    content: int
    """Tokens of its text: content, role, name, tool calls, other string values."""
    framing: int
    """Tokens of its framing (per message, per name, per tool call)."""
    exact: bool = True
    uncounted: int = 0
    """Content parts that are not text (images, audio): not counted (≈)."""

    @property
    def total(self) -> int:
        return self.content + self.framing


def _parts_tokens(parts: Sequence[Any], count: Count) -> tuple[int, int, int]:
    """The tokens of a content list (its text parts summed), its text parts, and the other
    parts (images, audio: not counted)."""
    total, texts, other = 0, 0, 0
    for part in parts:
        if isinstance(part, str):
            total += count(part)
            texts += 1
        elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
            total += count(part["text"])
            texts += 1
        else:
            other += 1
    return total, texts, other


def _calls_tokens(calls: Any, framing: Framing, count: Count) -> tuple[int, int]:
    """(text, framing) tokens of an assistant's ``tool_calls`` (≈ rule, module docstring)."""
    text = frame = 0
    for call in calls if isinstance(calls, Sequence) and not isinstance(calls, str) else ():
        fn = call.get("function", call) if isinstance(call, Mapping) else {}
        if not isinstance(fn, Mapping):
            continue
        name, arguments = fn.get("name"), fn.get("arguments")
        text += count(name) if isinstance(name, str) else 0
        if isinstance(arguments, str):
            text += count(arguments)
        elif arguments is not None:
            text += count(json.dumps(arguments, ensure_ascii=False, separators=(",", ":")))
        frame += framing.per_message
    return text, frame


def message_cost(index: int, message: Message, framing: Framing, count: Count) -> MessageCost:
    """The tokens of ``message`` under ``framing`` (the rules of the module docstring)."""
    text, frame, exact, uncounted = 0, framing.per_message, framing.exact, 0
    role = message.get("role")
    for key, value in message.items():
        if isinstance(value, str):
            if key == "role" and not framing.role_counted:
                continue
            text += count(value)
            if key == "name":
                frame += framing.per_name
        elif key == "content" and isinstance(value, Sequence):
            tokens, texts, uncounted = _parts_tokens(value, count)
            text += tokens
            exact = exact and texts <= 1 and not uncounted
        elif key in ("tool_calls", "function_call") and value:
            calls = [{"function": value}] if key == "function_call" else value
            tokens, more = _calls_tokens(calls, framing, count)
            text, frame, exact = text + tokens, frame + more, False
    if role == "tool" or role == "function":
        exact = False
    return MessageCost(index, role if isinstance(role, str) else "", text, frame, exact,
                       uncounted)


# ------------------------------------------------------------------------------ tools, schema
def _strip_dot(text: str) -> str:
    return text[:-1] if text.endswith(".") else text


def _type_text(spec: Mapping[str, Any]) -> tuple[str, bool]:
    kind = spec.get("type")
    if isinstance(kind, str):
        return kind, True
    if isinstance(kind, list) and all(isinstance(k, str) for k in kind):
        return " | ".join(kind), False
    return "", False


# long-function: the cookbook's property rule, one branch per case it names, read in order
def _properties_tokens(props: Mapping[str, Any], consts: ToolConstants, count: Count,
                       depth: int = 0) -> tuple[int, bool]:
    """The cookbook's property rule over ``props``; nested properties (≈) counted the same."""
    if not props:
        return 0, True
    total, exact = consts.prop_init, depth == 0
    for key, spec in props.items():
        if not isinstance(spec, Mapping):
            exact = False
            continue
        total += consts.prop_key
        enum = spec.get("enum")
        if isinstance(enum, list):
            total += consts.enum_init
            for item in enum:
                total += consts.enum_item
                if isinstance(item, str):
                    total += count(item)
                else:
                    total += count(json.dumps(item, ensure_ascii=False))
                    exact = False
        kind, typed = _type_text(spec)
        desc = spec.get("description")
        exact = exact and typed and isinstance(desc, str)
        total += count(f"{key}:{kind}:{_strip_dot(desc if isinstance(desc, str) else '')}")
        for nested in (spec, spec.get("items")):
            inner = nested.get("properties") if isinstance(nested, Mapping) else None
            if isinstance(inner, Mapping) and inner:
                tokens, _ = _properties_tokens(inner, consts, count, depth + 1)
                total, exact = total + tokens, False
    return total, exact


def _function_tokens(name: str, desc: Any, params: Any, consts: ToolConstants,
                     count: Count) -> tuple[int, bool]:
    exact = isinstance(desc, str)
    total = consts.func_init + count(f"{name}:{_strip_dot(desc if exact else '')}")
    props = params.get("properties") if isinstance(params, Mapping) else None
    if isinstance(props, Mapping):
        tokens, props_exact = _properties_tokens(props, consts, count)
        total, exact = total + tokens, exact and props_exact
    return total, exact


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=False,
                      default=str)


def tools_tokens(tools: Sequence[Any], framing: Framing, count: Count) -> tuple[int, bool]:
    """(tokens, exact) of the tool definitions ``tools`` (OpenAI's ``tools`` list; a bare
    function definition, as in the older ``functions`` list, is taken too)."""
    if not tools:
        return 0, True
    consts = framing.tools
    if consts is None:
        return framing.tool_prompt + sum(count(_compact(t)) for t in tools), False
    total, exact = 0, framing.tools_exact
    for tool in tools:
        if not isinstance(tool, Mapping):
            total, exact = total + count(_compact(tool)), False
            continue
        fn = tool.get("function") if tool.get("type") == "function" else tool
        if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
            total, exact = total + consts.func_init + count(_compact(tool)), False
            continue
        tokens, fn_exact = _function_tokens(fn["name"], fn.get("description"),
                                            fn.get("parameters"), consts, count)
        total, exact = total + tokens, exact and fn_exact
    return total + consts.func_end, exact


def schema_of(response_format: Any) -> tuple[str, Any, Any] | None:
    """``(name, description, schema)`` of a ``response_format`` (OpenAI's ``json_schema``
    shape, a bare JSON Schema, or a pydantic model class); None when it carries no schema."""
    if hasattr(response_format, "model_json_schema"):
        schema = response_format.model_json_schema()
        return str(getattr(response_format, "__name__", "response")), \
            schema.get("description"), schema
    if not isinstance(response_format, Mapping):
        return None
    if response_format.get("type") == "json_schema":
        spec = response_format.get("json_schema")
        if not isinstance(spec, Mapping):
            return None
        return str(spec.get("name", "")), spec.get("description"), spec.get("schema")
    if "properties" in response_format or response_format.get("type") == "object":
        return "response", response_format.get("description"), response_format
    return None


def schema_tokens(response_format: Any, framing: Framing, count: Count) -> tuple[int, bool]:
    """(tokens, exact) of a response format: a schema is ≈ always (module docstring)."""
    if response_format is None:
        return 0, True
    found = schema_of(response_format)
    if found is None:
        kind = response_format.get("type") if isinstance(response_format, Mapping) else None
        return 0, kind == "text"
    name, desc, schema = found
    consts = framing.tools
    if consts is None:
        return count(_compact(schema)), False
    tokens, _ = _function_tokens(name, desc, schema, consts, count)
    return tokens + consts.func_end, False
