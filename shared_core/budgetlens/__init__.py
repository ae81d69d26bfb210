"""budgetlens: the token budget of LLM pipelines, checked and clamped.

The public API is re-exported here; every function takes and returns plain typed data.
The core is pure: no language-server imports, no network, no global mutable state.
"""

from budgetlens.source import (
    Diagnostic,
    LineIndex,
    Location,
    Position,
    Range,
    Related,
    Severity,
    TextEdit,
    apply_text_edits,
)
from budgetlens.tokens import (
    DEFAULT_TOKENIZER,
    TokenCounter,
    Tokenizer,
    TokenizerError,
    get_tokenizer,
)

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_TOKENIZER",
    "Diagnostic",
    "LineIndex",
    "Location",
    "Position",
    "Range",
    "Related",
    "Severity",
    "TextEdit",
    "TokenCounter",
    "Tokenizer",
    "TokenizerError",
    "apply_text_edits",
    "get_tokenizer",
]
