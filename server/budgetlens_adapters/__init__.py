"""Request-time adapters: ``fit_request`` in front of the clients people use (issue 34).

Each adapter is a few lines over ``budgetlens_adapters.fitting.Fitting``, which fits an
OpenAI-shaped request (``model``, ``messages``, ``max_tokens`` or ``max_completion_tokens``,
``tools``, ``response_format``) and returns it unchanged when it fits:

- ``budgetlens_adapters.openai_sdk.guard(client)``: the OpenAI Python SDK, sync and async
  (extra ``budgetlens[openai]``);
- ``budgetlens_adapters.litellm_proxy.BudgetGuard``: a LiteLLM proxy ``CustomLogger`` whose
  ``async_pre_call_hook`` fits ``data`` (extra ``budgetlens[litellm]``);
- ``budgetlens_adapters.langchain_agent.BudgetMiddleware``: a LangChain v1 agent middleware
  (extra ``budgetlens[langchain]``).

This is its own package, not part of the core (``budgetlens``): the LiteLLM and LangChain
adapters subclass their library's classes when they are imported, and those libraries open
network clients; the core imports neither and never touches the network.
"""
