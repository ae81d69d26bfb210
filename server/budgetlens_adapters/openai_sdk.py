"""The OpenAI Python SDK: ``guard(client)`` fits every chat completion and every Responses
API request before it is sent (extra ``budgetlens[openai]``).

    client = guard(OpenAI(base_url=...), serving={"max_model_len": 4096})
    client.chat.completions.create(model="gpt-4o", messages=..., max_tokens=...)

A request that fits is sent exactly as given; one over the window has its history trimmed
and its output limit clamped (each a warning on the ``budgetlens`` logger), or is refused
with ``RequestDoesNotFit`` before anything is sent. The guard sits where the client sends a
request (its ``request`` method), so it covers every method that posts to
``/chat/completions`` (``create``, ``parse``, ``stream``) or ``/responses`` (``create``,
``parse``, ``stream``: ``input`` and ``instructions``, ``max_output_tokens``, ``tools``,
``text.format``), and it sees the body the SDK built (a pydantic ``response_format``
already a JSON schema). Copies made by ``client.with_options(...)`` or ``client.copy(...)``
are guarded too. Sync (``OpenAI``) and async (``AsyncOpenAI``) clients, and their Azure
variants, are guarded the same way.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Mapping
from typing import Any, TypeVar

from budgetlens import TokenCounter
from budgetlens_adapters.fitting import Fitting, require

Client = TypeVar("Client")


def guard(client: Client, *, model: str | None = None,
          serving: Mapping[str, object] | None = None, margin: int | str | None = None,
          counter: TokenCounter | None = None, min_output: int | None = None,
          trim: bool = True, window: int | None = None, max_output: int | None = None,
          tokenizer: str | None = None) -> Client:
    """Fit every request ``client`` sends with ``fit_request`` (in place; the options are
    its own; ``model`` names the registry's model to count for when the server's model name
    is not one) and return the client."""
    require("openai", "openai")
    return _guard(client, Fitting(model, serving, margin, counter, min_output, trim, window,
                                  max_output, tokenizer))


def _fitted(fitting: Fitting, options: Any) -> Any:
    """The request options with the body fitted: ``options`` itself when it fits, or when
    it is not a chat completion or a response."""
    body = options.json_data
    if str(options.method).lower() != "post" or not isinstance(body, Mapping):
        return options
    path = str(options.url).rstrip("/")
    if path.endswith("/chat/completions") and body.get("messages"):
        fitted = fitting.fit_kwargs(body)
    elif path.endswith("/responses") and body.get("model"):
        fitted = fitting.fit_responses(body)
    else:
        return options
    if fitted is body:
        return options
    options = options.model_copy()
    options.json_data = dict(fitted)
    return options


def _guard(client: Client, fitting: Fitting) -> Client:
    target: Any = client
    request, copy = target.request, target.copy
    if inspect.iscoroutinefunction(request):
        @functools.wraps(request)
        async def arequest(cast_to: Any, options: Any, **kwargs: Any) -> Any:
            return await request(cast_to, _fitted(fitting, options), **kwargs)
        target.request = arequest
    else:
        @functools.wraps(request)
        def srequest(cast_to: Any, options: Any, **kwargs: Any) -> Any:
            return request(cast_to, _fitted(fitting, options), **kwargs)
        target.request = srequest

    @functools.wraps(copy)
    def guarded_copy(*args: Any, **kwargs: Any) -> Any:
        return _guard(copy(*args, **kwargs), fitting)
    target.copy = target.with_options = guarded_copy
    return client
