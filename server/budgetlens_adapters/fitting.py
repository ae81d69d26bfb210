"""Fitting an OpenAI-shaped request's keyword arguments with ``fit_request``: the part every
adapter shares."""

from __future__ import annotations

import importlib
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
            max_tokens: int | None = None) -> RequestFit:
        """``fit_request`` with these options (``RequestDoesNotFit`` when nothing fits)."""
        return fit_request(self.model or model, messages, tools=tools,
                           response_format=response_format, max_tokens=max_tokens,
                           serving=self.serving, margin=self.margin, counter=self.counter,
                           min_output=self.min_output, trim=self.trim, window=self.window,
                           max_output=self.max_output, tokenizer=self.tokenizer)

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
                       max_tokens=_limit(kwargs.get(param)) if param else None)
        if not (fit.trimmed or fit.clamped):
            return kwargs
        out = dict(kwargs)
        out["messages"] = list(fit.messages)
        if fit.clamped and param is not None:
            out[param] = fit.output_tokens
        return out


def _given(value: Any) -> Any:
    """``value`` unless it is the OpenAI SDK's "not given" sentinel (or ``None``)."""
    return value if isinstance(value, (list, tuple, dict)) else None
