"""Request time: a concrete chat request counted exactly, fitted, clamped or refused.

- ``framing``: the tokens of messages, tool definitions and a response schema, per family
  (OpenAI by its cookbook's published rules; other families ≈);
- ``chat_template``: Llama 3, Qwen and DeepSeek requests rendered with their own Jinja chat
  templates (shipped in ``chat_templates/``) and Mistral's through mistral-common: exact;
- ``limits``: the window, input limit, output ceiling, tokenizer and framing of a model (the
  registry, ``serving``), the margin, the output parameter's name;
- ``fit``: ``count_request``, ``fit_request``, ``check_request`` and ``RequestDoesNotFit``;
- ``chat_loop``: the JSON continuation loop over chat messages, and reading the length
  signal of OpenAI, Anthropic and Gemini responses.
"""
