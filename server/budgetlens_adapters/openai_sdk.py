"""The OpenAI Python SDK: ``guard(client)`` fits every ``client.chat.completions.create``
request before it is sent (extra ``budgetlens[openai]``).

    client = guard(OpenAI(base_url=...), serving={"max_model_len": 4096})
    client.chat.completions.create(model="gpt-4o", messages=..., max_tokens=...)

A request that fits is sent exactly as given; one over the window has its history trimmed
and its output limit clamped (each a warning on the ``budgetlens`` logger), or is refused
with ``RequestDoesNotFit`` before anything is sent. Sync (``OpenAI``) and async
(``AsyncOpenAI``) clients, and their Azure variants, are guarded the same way.
"""

from __future__ import annotations

import functools
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
    """Wrap ``client.chat.completions.create`` in place with ``fit_request`` (the options
    are its own; ``model`` names the registry's model to count for when the server's model
    name is not one) and return the client."""
    openai = require("openai", "openai")
    fitting = Fitting(model, serving, margin, counter, min_output, trim, window, max_output,
                      tokenizer)
    completions: Any = client.chat.completions  # type: ignore[attr-defined]
    create = completions.create
    if isinstance(client, openai.AsyncOpenAI):
        @functools.wraps(create)
        async def acreate(**kwargs: Any) -> Any:
            return await create(**fitting.fit_kwargs(kwargs))
        completions.create = acreate
    else:
        @functools.wraps(create)
        def screate(**kwargs: Any) -> Any:
            return create(**fitting.fit_kwargs(kwargs))
        completions.create = screate
    return client
