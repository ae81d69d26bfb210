"""Tokens: counting text exactly for the chosen tokenizer, offline.

Owns the tokenizers (the tiktoken encodings shipped in ``encodings/``, verified against their
published sha256; a local Hugging Face ``tokenizer.json``; any object or function a caller
passes), the choice of tokenizer by name, and :class:`~budgetlens.tokens.core.TokenCounter`,
the count cache keyed by a hash of the text that a caller owns.
"""
