"""LangChain v1: ``BudgetMiddleware``, an agent middleware that fits each model call's
messages and output limit (extra ``budgetlens[langchain]``).

    agent = create_agent(ChatOpenAI(model="gpt-4o", max_tokens=2000), tools=[...],
                         middleware=[BudgetMiddleware(serving={"max_model_len": 8192})])

Before each model call the request (system message, messages, tools, the output limit of
``model_settings`` or of the model) is counted for its model. A ``response_format`` is
counted as the agent sends it: a ``ProviderStrategy`` as the model's JSON schema, a
``ToolStrategy`` as the tools it binds beside the agent's (``AutoStrategy`` as the one the
agent picks for the model). Tools bound to the chat model before (``bind_tools``) are
counted when the agent binds none of its own. A request that fits goes on
unchanged; otherwise the oldest history is left out of this call (the agent's state keeps
it), the output limit is clamped through ``model_settings``, or ``RequestDoesNotFit`` is
raised before the model is called.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from budgetlens import TokenCounter
from budgetlens_adapters.fitting import OUTPUT_PARAMS, Fitting, require

_middleware = require("langchain.agents.middleware", "langchain")
_messages = require("langchain_core.messages", "langchain")
_function_calling = require("langchain_core.utils.function_calling", "langchain")
_structured_output = require("langchain.agents.structured_output", "langchain")
_factory = require("langchain.agents.factory", "langchain")


def _output_limit(request: Any) -> tuple[str, int | None]:
    """The output-limit setting and its value: ``model_settings`` first, else the model's."""
    settings = request.model_settings
    for key in OUTPUT_PARAMS:
        if isinstance(settings.get(key), int):
            return key, settings[key]
    value = getattr(request.model, "max_tokens", None)
    return "max_tokens", value if isinstance(value, int) else None


def _structured(request: Any) -> tuple[list[Any], Any]:
    """The tools and the ``response_format`` the agent binds for structured output."""
    fmt, kinds = request.response_format, _structured_output
    if fmt is None:
        return [], None
    if not isinstance(fmt, (kinds.ToolStrategy, kinds.ProviderStrategy, kinds.AutoStrategy)):
        fmt = kinds.AutoStrategy(schema=fmt)  # a bare schema, as the agent reads it
    if isinstance(fmt, kinds.AutoStrategy):  # the agent's choice for this model
        supports = getattr(_factory, "_supports_provider_strategy", None)
        native = supports is not None and supports(request.model, tools=request.tools)
        fmt = (kinds.ProviderStrategy if native else kinds.ToolStrategy)(schema=fmt.schema)
    if isinstance(fmt, kinds.ProviderStrategy):
        response_format = fmt.to_model_kwargs().get("response_format")
        spec = response_format.get("json_schema") if isinstance(response_format, dict) else None
        if isinstance(spec, dict) and "description" not in spec:
            # the chat model sends the schema's own description as the format's
            description = spec.get("schema", {}).get("description")
            spec.update({"description": description} if description else {})
        return [], response_format
    return [kinds.OutputToolBinding.from_schema_spec(spec).tool
            for spec in fmt.schema_specs], None


def _bound_tools(model: Any) -> list[Any]:
    """The tools bound to a chat model before the agent got it (``model.bind_tools``): sent
    when the agent binds none of its own (its own replace them)."""
    tools = getattr(model, "kwargs", {}).get("tools") if hasattr(model, "bound") else None
    return list(tools) if isinstance(tools, (list, tuple)) else []


class BudgetMiddleware(_middleware.AgentMiddleware):  # type: ignore[misc,name-defined]
    """Fits model calls with ``fit_request`` (the options are its own; ``model`` names the
    registry's model to count for, else the chat model's ``model_name``)."""

    def __init__(self, *, model: str | None = None,
                 serving: Mapping[str, object] | None = None, margin: int | str | None = None,
                 counter: TokenCounter | None = None, min_output: int | None = None,
                 trim: bool = True, window: int | None = None, max_output: int | None = None,
                 tokenizer: str | None = None) -> None:
        super().__init__()
        self.fitting = Fitting(model, serving, margin, counter, min_output, trim, window,
                               max_output, tokenizer)

    def fit(self, request: Any) -> Any:
        """The request to send: ``request`` itself when it fits, else an override."""
        system = [request.system_message] if request.system_message is not None else []
        sent = _messages.convert_to_openai_messages([*system, *request.messages])
        extra_tools, response_format = _structured(request)
        tools = [_function_calling.convert_to_openai_tool(t)
                 for t in [*request.tools, *extra_tools] or _bound_tools(request.model)]
        param, limit = _output_limit(request)
        name = getattr(request.model, "model_name", None) or getattr(request.model, "model", "")
        fit = self.fitting.fit(str(name), sent, tools=tools or None, max_tokens=limit,
                               response_format=response_format)
        if not (fit.trimmed or fit.clamped):
            return request
        kept = {id(m) for m in fit.messages}
        pairs = zip(request.messages, sent[len(system):], strict=True)
        changes: dict[str, Any] = {"messages": [m for m, d in pairs if id(d) in kept]}
        if fit.clamped:
            changes["model_settings"] = {**request.model_settings, param: fit.output_tokens}
        return request.override(**changes)

    def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        return handler(self.fit(request))

    async def awrap_model_call(self, request: Any,
                               handler: Callable[[Any], Awaitable[Any]]) -> Any:
        return await handler(self.fit(request))
