"""Fitting an OpenAI-shaped request's keyword arguments with ``fit_request``: the part every
adapter shares."""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from budgetlens import RequestFit, TokenCounter, fit_request

#: The output-limit parameters of a chat request, the one a request uses first.
OUTPUT_PARAMS = ("max_completion_tokens", "max_tokens")


def require(module: str, extra: str) -> ModuleType:
    """Import ``module`` or say which extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f"{module!r} is not installed: this budgetlens adapter needs it;"
                          f" pip install 'budgetlens[{extra}]'") from exc


def _limit(value: object) -> int | None:
    """An output limit given as an int (``None``, ``NOT_GIVEN`` and the like: none)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class Fitting:
    """The ``fit_request`` options an adapter applies to every request it sees.

    ``model``: the registry's model to count for (default: the request's own ``model``);
    the rest are ``fit_request``'s options (``serving={"max_model_len": 4096}``, ...)."""

    model: str | None = None
    serving: Mapping[str, object] | None = None
    margin: int | str | None = None
    counter: TokenCounter | None = None
    min_output: int | None = None
    trim: bool = True
    window: int | None = None
    max_output: int | None = None
    tokenizer: str | None = None

    def fit(self, model: str, messages: Sequence[Mapping[str, Any]], *,
            tools: Sequence[Any] | None = None, response_format: Any = None,
            max_tokens: int | None = None, output_param: str | None = None,
            approximate: bool = False) -> RequestFit:
        """``fit_request`` with these options (``RequestDoesNotFit`` when nothing fits);
        ``approximate``: the count is ≈ (its default margin applies unless one is set)."""
        return fit_request(self.model or model, messages, tools=tools,
                           response_format=response_format, max_tokens=max_tokens,
                           serving=self.serving,
                           margin=self.margin, approximate=approximate,
                           counter=self.counter, min_output=self.min_output, trim=self.trim,
                           window=self.window, max_output=self.max_output,
                           tokenizer=self.tokenizer, output_param=output_param)

    def fit_kwargs(self, kwargs: Mapping[str, Any]) -> Mapping[str, Any]:
        """The keyword arguments of a chat completion, fitted: ``kwargs`` itself (the same
        object) when the request fits as it is; else a copy with the history trimmed and the
        output limit clamped (under the name the request used)."""
        messages = kwargs["messages"]
        if not isinstance(messages, Sequence):  # an iterable: read it once, send the list
            messages = list(messages)
            kwargs = {**kwargs, "messages": messages}
        param = next((p for p in OUTPUT_PARAMS if _limit(kwargs.get(p)) is not None), None)
        fit = self.fit(str(kwargs["model"]), messages, tools=_given(kwargs.get("tools")),
                       response_format=_given(kwargs.get("response_format")),
                       max_tokens=_limit(kwargs.get(param)) if param else None,
                       output_param=param)
        if not (fit.trimmed or fit.clamped):
            return kwargs
        out = dict(kwargs)
        out["messages"] = list(fit.messages)
        if fit.clamped and param is not None:
            out[param] = fit.output_tokens
        return out

    def fit_responses(self, body: Mapping[str, Any]) -> Mapping[str, Any]:
        """A Responses API request body, fitted: ``body`` itself when it fits as it is; else
        a copy with the oldest ``input`` items left out and ``max_output_tokens`` clamped.

        Its input is counted as the chat it stands for (``responses_chat``); OpenAI
        publishes no rule for this API, so the margin is the one of an approximate count
        (``"12% + 128"``) unless one is set here."""
        items, messages = responses_chat(body)
        limit = _limit(body.get("max_output_tokens"))
        text = body.get("text")
        fit = self.fit(str(body["model"]), messages, tools=responses_tools(body.get("tools")),
                       response_format=responses_format(
                           text.get("format") if isinstance(text, Mapping) else None),
                       max_tokens=limit, output_param="max_output_tokens",
                       approximate=True)
        if not (fit.trimmed or fit.clamped):
            return body
        out = dict(body)
        if fit.trimmed:
            kept = {id(m) for m in fit.messages}
            offset = len(messages) - len(items)  # the instructions' message comes first
            out["input"] = [item for item, m in zip(items, messages[offset:], strict=True)
                            if id(m) in kept]
        if fit.clamped and limit is not None:
            out["max_output_tokens"] = fit.output_tokens
        return out



def responses_chat(body: Mapping[str, Any]) -> tuple[list[Any], list[dict[str, Any]]]:
    """The input items of a Responses API request and the chat messages they stand for:
    ``instructions`` a system message (first, never trimmed), then one message per item: a
    message item its ``role`` and ``content`` (text parts counted, others not: ≈), a
    ``function_call`` an assistant tool call, a ``function_call_output`` a tool message, any
    other item (reasoning, a hosted tool's call) an assistant message of its JSON text (≈);
    a string ``input`` is one user message and no item."""
    raw = body.get("input")
    items: list[Any] = [] if isinstance(raw, str) or raw is None else list(raw)
    messages = [{"role": "system", "content": body["instructions"]}
                if isinstance(body.get("instructions"), str) else None]
    messages += [{"role": "user", "content": raw}] if isinstance(raw, str) else []
    messages += [_item_message(item) for item in items]
    return items, [m for m in messages if m is not None]


def _item_message(item: Any) -> dict[str, Any]:
    kind = item.get("type", "message") if isinstance(item, Mapping) else None
    if kind == "message" and isinstance(item.get("role"), str):
        return {"role": item["role"], "content": item.get("content")}
    if kind == "function_call":
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": item.get("call_id", ""), "type": "function", "function": {
                "name": item.get("name", ""), "arguments": item.get("arguments", "")}}]}
    if kind == "function_call_output":
        return {"role": "tool", "tool_call_id": item.get("call_id", ""),
                "content": item.get("output", "")}
    return {"role": "assistant", "content": json.dumps(item, default=str, ensure_ascii=False)}


def responses_tools(tools: Any) -> list[Any] | None:
    """The Responses API's tools in chat's shape: a flat ``function`` tool nested under
    ``function``; hosted tools (web search, file search, ...) as they are (≈)."""
    if not isinstance(tools, (list, tuple)) or not tools:
        return None
    return [{"type": "function", "function": {k: v for k, v in t.items() if k != "type"}}
            if isinstance(t, Mapping) and t.get("type") == "function" and "function" not in t
            else t for t in tools]


def responses_format(fmt: Any) -> Any:
    """``text.format`` of the Responses API in chat's ``response_format`` shape."""
    if isinstance(fmt, Mapping) and fmt.get("type") == "json_schema":
        return {"type": "json_schema", "json_schema": {k: v for k, v in fmt.items()
                                                       if k != "type"}}
    return fmt if isinstance(fmt, Mapping) else None


def _given(value: Any) -> Any:
    """``value`` unless it is the OpenAI SDK's "not given" sentinel (or ``None``)."""
    return value if isinstance(value, (list, tuple, dict)) else None
