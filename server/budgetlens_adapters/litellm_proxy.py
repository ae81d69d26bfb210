"""LiteLLM: ``BudgetGuard``, a ``CustomLogger`` that fits every chat request before LiteLLM
sends it (extra ``budgetlens[litellm]``).

- on the proxy, ``async_pre_call_hook(user_api_key_dict, cache, data, call_type)`` fits
  ``data`` (``messages``, ``max_tokens`` / ``max_completion_tokens``, ``tools``); register it
  in the proxy's config (``litellm_settings: callbacks: my_module.guard``);
- in the SDK (``litellm.callbacks = [BudgetGuard(...)]``), ``async_pre_call_deployment_hook``
  does the same for ``litellm.acompletion`` just before the request goes to the deployment;
- Responses calls (call type ``responses`` / ``aresponses``: the proxy's ``/v1/responses``,
  ``litellm.aresponses``) are fitted as the OpenAI adapter fits them (``Fitting.
  fit_responses``): ``instructions`` and the ``input`` items counted as the chat they stand
  for, the oldest items left out, ``max_output_tokens`` clamped, the margin of an
  approximate count.

A request that fits is passed on as it is; one that does not fit at all raises
``ContextWindowRefusal`` (a ``RequestDoesNotFit``, so a ``ValueError``) and is not sent.
The proxy answers it with HTTP 400 and its OpenAI-shaped error (``type``
``invalid_request_error``, ``param`` ``messages``, or ``input`` for a Responses call,
``code`` ``"400"``): it reads the
exception's ``status_code``, ``type`` and ``param`` (else it answers 500).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from budgetlens import RequestDoesNotFit, TokenCounter
from budgetlens_adapters.fitting import OUTPUT_PARAMS, Fitting, require

_custom_logger = require("litellm.integrations.custom_logger", "litellm").CustomLogger
_CHAT_CALLS = frozenset({"completion", "acompletion"})
_RESPONSES_CALLS = frozenset({"responses", "aresponses"})


class ContextWindowRefusal(RequestDoesNotFit):
    """``RequestDoesNotFit`` with the HTTP status and OpenAI error fields the proxy sends."""

    status_code = 400
    type = "invalid_request_error"
    param = "messages"


class BudgetGuard(_custom_logger):  # type: ignore[misc,valid-type]
    """Fits chat requests with ``fit_request`` (the options are its own; ``model`` names the
    registry's model to count for, else the request's model: the registry reads a provider
    prefix such as ``openai/`` or ``hosted_vllm/``)."""

    def __init__(self, *, model: str | None = None,
                 serving: Mapping[str, object] | None = None, margin: int | str | None = None,
                 counter: TokenCounter | None = None, min_output: int | None = None,
                 trim: bool = True, window: int | None = None, max_output: int | None = None,
                 tokenizer: str | None = None) -> None:
        super().__init__()
        self.fitting = Fitting(model, serving, margin, counter, min_output, trim, window,
                               max_output, tokenizer)

    def fit_data(self, data: dict[str, Any]) -> dict[str, Any]:
        """``data`` with its messages and output limit fitted, in place (and returned)."""
        if not data.get("messages"):
            return data
        try:
            fitted = self.fitting.fit_kwargs(data)
        except RequestDoesNotFit as refused:
            raise ContextWindowRefusal(refused.fit) from None
        if fitted is not data:
            data.update((key, fitted[key]) for key in ("messages", *OUTPUT_PARAMS)
                        if key in fitted)
        return data

    def fit_responses_data(self, data: dict[str, Any]) -> dict[str, Any]:
        """A Responses call's ``data`` with its ``input`` items and ``max_output_tokens``
        fitted, in place (and returned)."""
        if data.get("input") is None or not data.get("model"):
            return data
        try:
            fitted = self.fitting.fit_responses(data)
        except RequestDoesNotFit as refused:
            refusal = ContextWindowRefusal(refused.fit)
            refusal.param = "input"
            raise refusal from None
        if fitted is not data:
            data.update((key, fitted[key]) for key in ("input", "max_output_tokens")
                        if key in fitted)
        return data

    def _fit_call(self, data: dict[str, Any], call_type: Any) -> dict[str, Any]:
        name = str(getattr(call_type, "value", call_type))
        if name in _CHAT_CALLS:
            return self.fit_data(data)
        if name in _RESPONSES_CALLS:
            return self.fit_responses_data(data)
        return data

    async def async_pre_call_hook(self, user_api_key_dict: Any, cache: Any,
                                  data: dict[str, Any], call_type: Any) -> dict[str, Any]:
        return self._fit_call(data, call_type)

    async def async_pre_call_deployment_hook(self, kwargs: dict[str, Any],
                                             call_type: Any) -> dict[str, Any]:
        return self._fit_call(kwargs, call_type)
