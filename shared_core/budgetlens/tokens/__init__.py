"""Tokens: counting text exactly for the chosen tokenizer, offline.

Owns the tokenizers (the tiktoken encodings shipped in ``encodings/``, verified against their
published sha256; a local Hugging Face ``tokenizer.json``; any object or function a caller
passes), the choice of tokenizer by name, and :class:`~budgetlens.tokens.core.TokenCounter`,
the count cache keyed by a hash of the text that a caller owns.

Where things are: ``core`` (the shipped encodings, each built on first use; the per-user
cache of parsed rank tables), ``families`` (the tokenizer families beyond the two shipped
encodings, exact or approximate), ``pieces`` (the one call into native tokenizer code: long
whitespace runs merged on their own, any native failure raised as ``TokenizerError``) and
``counts`` (the persistent per-user count cache: a text's count by its sha256, per counting
identity, so a warm start needs no encoding; written only when the host calls
``counts.flush()``, as the language server does).
"""
