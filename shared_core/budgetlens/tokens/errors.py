"""The error every tokenizer lookup raises (its own module so families and core share it)."""

from __future__ import annotations


class TokenizerError(ValueError):
    """The tokenizer named in a config or setting cannot be used; the message says why."""


class TokenizerUnreadable(TokenizerError):
    """A tokenizer file that could not be read (an I/O error: the next try may work)."""
